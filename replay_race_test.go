package delayq

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
)

// These tests replay a script call the way go-redis does after a lost reply, with another
// client acting on the job between the first run and the replay. The proxy drops the first
// run's reply; a second fault, armed behind it, holds the re-sent call (inside the proxy's
// match, so before Redis sees it) until the other client has acted. Nothing depends on timing.

// replayPair returns a Client whose connections go through a proxy, the proxy, and a second
// Client connected to the same Redis directly.
func replayPair(t *testing.T) (viaProxy *Client, proxy *redistest.Proxy, direct *Client) {
	t.Helper()
	srv := redistest.Standalone(t)
	proxy = redistest.NewProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { rdb.Close() })
	viaProxy = newClientOn(t, rdb, Config{})
	direct = newClientOn(t, srv.Client(t), Config{})
	ctx := testContext(t)
	// Every script has run once, so that a dropped reply is that of a script that ran.
	mustEnqueue(t, viaProxy, "warm", Spec{ID: "1"})
	mustEnqueue(t, viaProxy, "warm", Spec{ID: "2"})
	jobs, err := viaProxy.Reserve(ctx, "warm", ReserveOptions{Max: 2})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("warming up: %v, %v", jobs, err)
	}
	if err := viaProxy.Ack(ctx, Lease{Topic: "warm", ID: jobs[0].ID, Token: jobs[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	if err := viaProxy.Cancel(ctx, "warm", jobs[1].ID); err != nil {
		t.Fatal(err)
	}
	return viaProxy, proxy, direct
}

// holdReplay drops the reply of the first call match selects and holds the second one (the
// replay) until the returned release function is called. fired is closed once Redis has run the
// first call and its connection is gone.
func holdReplay(proxy *redistest.Proxy, match func([]string) bool) (fired <-chan struct{}, release func()) {
	fired = proxy.DropReplyOnce(match)
	proceed := make(chan struct{})
	proxy.DropReplyOnce(func(args []string) bool {
		if match(args) {
			<-proceed
		}
		return false // never drops: it only holds the replay
	})
	done := false
	return fired, func() {
		if !done {
			done = true
			close(proceed)
		}
	}
}

// An enqueue whose reply was lost is re-sent by go-redis. When a consumer has taken and acked
// the job between the two runs, the replay must not store the job a second time: one enqueue
// call, one delivery (no job is stored twice).
func TestEnqueueReplayAfterAckStoresNothing(t *testing.T) {
	t.Parallel()
	c, proxy, other := replayPair(t)
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "first", Delay: time.Hour}) // the topic exists

	fired, release := holdReplay(proxy, scriptCall("once"))
	defer release()
	done := make(chan error, 1)
	go func() {
		_, err := c.Enqueue(ctx, "t", Spec{ID: "once"})
		done <- err
	}()
	mustFire(t, fired)

	// Between the first run and the replay, a consumer takes the job and finishes it.
	jobs, err := other.Reserve(ctx, "t", ReserveOptions{Max: 1})
	if err != nil || len(jobs) != 1 || jobs[0].ID != "once" {
		t.Fatalf("Reserve between the runs: %v, %v; want job once", jobs, err)
	}
	if err := other.Ack(ctx, Lease{Topic: "t", ID: "once", Token: jobs[0].LeaseToken}); err != nil {
		t.Fatalf("Ack between the runs: %v", err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("Enqueue whose reply was lost: %v", err)
	}

	// The job was enqueued once, delivered once and acked: it must be gone.
	if j, err := other.Get(ctx, "t", "once"); !errors.Is(err, ErrNotFound) {
		again, _ := other.Reserve(ctx, "t", ReserveOptions{Max: 1})
		t.Fatalf("after one enqueue and one ack, Get = %+v, %v; want ErrNotFound (a Reserve now hands out %d more)", j, err, len(again))
	}
}

// The same replay after a cancel: Cancel returned, and then the job is stored again and handed
// out (the guarantee that once cancel returns, the job is never handed out again).
func TestEnqueueReplayAfterCancelBringsNothingBack(t *testing.T) {
	t.Parallel()
	c, proxy, other := replayPair(t)
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "first", Delay: time.Hour})

	fired, release := holdReplay(proxy, scriptCall("cancelled"))
	defer release()
	done := make(chan error, 1)
	go func() {
		_, err := c.Enqueue(ctx, "t", Spec{ID: "cancelled"})
		done <- err
	}()
	mustFire(t, fired)
	if err := other.Cancel(ctx, "t", "cancelled"); err != nil {
		t.Fatalf("Cancel between the runs: %v", err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("Enqueue whose reply was lost: %v", err)
	}
	jobs, err := other.Reserve(ctx, "t", ReserveOptions{Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 {
		t.Fatalf("Reserve after Cancel returned: got job %q; a cancelled job was handed out", jobs[0].ID)
	}
}

// A cancel whose reply was lost is re-sent by go-redis. When the id was enqueued anew between
// the two runs (the first run had freed it), the replay must spare the new job, whose enqueue
// returned success and which no cancel was sent after.
func TestCancelReplaySparesTheNextJobOfTheID(t *testing.T) {
	t.Parallel()
	c, proxy, other := replayPair(t)
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "order-42", Delay: time.Hour})

	fired, release := holdReplay(proxy, scriptCall("order-42"))
	defer release()
	done := make(chan error, 1)
	go func() { done <- c.Cancel(ctx, "t", "order-42") }()
	mustFire(t, fired)
	// The first run deleted the job, so the id is free: a producer enqueues it anew, and is told
	// it succeeded.
	if _, err := other.Enqueue(ctx, "t", Spec{ID: "order-42", Body: []byte("second")}); err != nil {
		t.Fatalf("Enqueue of the freed id between the runs: %v", err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("Cancel whose reply was lost: %v", err)
	}
	if _, err := other.Get(ctx, "t", "order-42"); err != nil {
		t.Fatalf("the job enqueued after the cancel's first run: %v; one Cancel deleted two jobs", err)
	}
}

// The same replay for a batch: the first run stored x and y; x was taken and acked before the
// replay. The replay must store nothing and answer as the first run did (both created), not
// store x again and call y someone else's.
func TestBatchReplayAfterAckAnswersAsTheFirstRun(t *testing.T) {
	t.Parallel()
	c, proxy, other := replayPair(t)
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "first", Delay: time.Hour})

	fired, release := holdReplay(proxy, scriptCall("x", "y"))
	defer release()
	done := make(chan []BatchResult, 1)
	go func() {
		res, err := c.EnqueueBatch(ctx, "t", []Spec{{ID: "x"}, {ID: "y", Delay: time.Hour}})
		if err != nil {
			t.Errorf("EnqueueBatch: %v", err)
		}
		done <- res
	}()
	mustFire(t, fired)
	jobs, err := other.Reserve(ctx, "t", ReserveOptions{Max: 1})
	if err != nil || len(jobs) != 1 || jobs[0].ID != "x" {
		t.Fatalf("Reserve between the runs: %v, %v; want job x", jobs, err)
	}
	if err := other.Ack(ctx, Lease{Topic: "t", ID: "x", Token: jobs[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	release()
	res := <-done
	if len(res) != 2 {
		t.Fatalf("%d results", len(res))
	}
	for i, id := range []string{"x", "y"} {
		if res[i].Err != nil {
			t.Errorf("job %s of a batch whose first run created it: %v, want created", id, res[i].Err)
		}
	}
}
