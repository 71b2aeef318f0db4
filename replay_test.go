package delayq

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
)

// These tests run delayq through a proxy that lets a script call reach Redis and then drops
// the connection instead of its reply, once. go-redis sends the call again on a new connection
// (its default MaxRetries), so the script runs twice while the caller made one call; the
// second run must answer what the first did.

// lostReplyClient returns a Client whose Redis connections go through a proxy, and the proxy.
// Every script has run once, so that a dropped reply is that of a script that ran, not of a
// NOSCRIPT answer.
func lostReplyClient(t *testing.T) (*Client, *redistest.Proxy) {
	t.Helper()
	srv := redistest.Standalone(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { rdb.Close() })
	c := newClientOn(t, rdb, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "warm", Spec{ID: "1"})
	mustEnqueue(t, c, "warm", Spec{ID: "2"})
	jobs, err := c.Reserve(ctx, "warm", ReserveOptions{Max: 2})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("warming up: %v, %v", jobs, err)
	}
	if err := c.Ack(ctx, Lease{Topic: "warm", ID: jobs[0].ID, Token: jobs[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Nack(ctx, Lease{Topic: "warm", ID: jobs[1].ID, Token: jobs[1].LeaseToken}, NackOptions{}); err != nil {
		t.Fatal(err)
	}
	return c, proxy
}

// scriptCall matches an EVALSHA whose arguments include every one of want.
func scriptCall(want ...string) func(args []string) bool {
	return func(args []string) bool {
		if len(args) == 0 || !strings.EqualFold(args[0], "evalsha") {
			return false
		}
		for _, w := range want {
			if !slices.Contains(args, w) {
				return false
			}
		}
		return true
	}
}

func mustFire(t *testing.T, fired <-chan struct{}) {
	t.Helper()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy never dropped the reply")
	}
}

func TestEnqueueWhoseReplyWasLost(t *testing.T) {
	t.Parallel()
	c, proxy := lostReplyClient(t)
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "first", Delay: time.Hour}) // the topic exists

	fired := proxy.DropReplyOnce(scriptCall("named"))
	if _, err := c.Enqueue(ctx, "t", Spec{ID: "named"}); err != nil {
		t.Fatalf("Enqueue whose reply was lost: %v, want it created", err)
	}
	mustFire(t, fired)

	// A job without an id must not be stored twice under two ids.
	fired = proxy.DropReplyOnce(func(args []string) bool {
		return scriptCall()(args) && !slices.Contains(args, "pull") && !slices.Contains(args, "named") && len(args) > 12
	})
	if _, err := c.Enqueue(ctx, "t", Spec{Body: []byte("no id")}); err != nil {
		t.Fatalf("Enqueue without an id whose reply was lost: %v", err)
	}
	mustFire(t, fired)
	s, err := c.Stats(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if s.Delayed+s.Ready != 3 {
		t.Fatalf("%d jobs stored, want 3 (first, named and one without an id)", s.Delayed+s.Ready)
	}
}

func TestReserveWhoseReplyWasLost(t *testing.T) {
	t.Parallel()
	c, proxy := lostReplyClient(t)
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "a", NoRetries: true})
	mustEnqueue(t, c, "t", Spec{ID: "b", NoRetries: true})

	fired := proxy.DropReplyOnce(scriptCall("pull"))
	jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 1})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Reserve whose reply was lost: %d jobs, %v; want 1", len(jobs), err)
	}
	mustFire(t, fired)
	s, err := c.Stats(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if s.Reserved != 1 || s.Ready != 1 {
		t.Fatalf("after one reserve of one job: %d reserved, %d ready; want 1 and 1 (no job leased to nobody)", s.Reserved, s.Ready)
	}
	if err := c.Ack(ctx, Lease{Topic: "t", ID: jobs[0].ID, Token: jobs[0].LeaseToken}); err != nil {
		t.Fatalf("Ack of the job the replay returned: %v", err)
	}
}

func TestSettlingWhoseReplyWasLost(t *testing.T) {
	t.Parallel()
	c, proxy := lostReplyClient(t)
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "acked"})
	mustEnqueue(t, c, "t", Spec{ID: "nacked"})
	jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 2})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
	}
	lease := map[string]string{jobs[0].ID: jobs[0].LeaseToken, jobs[1].ID: jobs[1].LeaseToken}

	fired := proxy.DropReplyOnce(scriptCall(lease["acked"]))
	if err := c.Ack(ctx, Lease{Topic: "t", ID: "acked", Token: lease["acked"]}); err != nil {
		t.Fatalf("Ack whose reply was lost: %v, want nil", err)
	}
	mustFire(t, fired)

	fired = proxy.DropReplyOnce(scriptCall(lease["nacked"]))
	if dead, err := c.Nack(ctx, Lease{Topic: "t", ID: "nacked", Token: lease["nacked"]}, NackOptions{Error: "boom"}); err != nil || dead {
		t.Fatalf("Nack whose reply was lost: %v, %v; want a retry", dead, err)
	}
	mustFire(t, fired)
	j, err := c.Get(ctx, "t", "nacked")
	if err != nil || j.Attempts != 1 || j.State != StateDelayed {
		t.Fatalf("the nacked job: %+v, %v; want delayed after 1 attempt", j, err)
	}
	if _, err := c.Get(ctx, "t", "acked"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the acked job: %v, want ErrNotFound", err)
	}
}
