package delayq

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptCalls returns how many EVALSHA and EVAL calls the server has run.
func scriptCalls(t testing.TB, rdb redis.UniversalClient) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\r\n") {
		for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:"} {
			if rest, ok := strings.CutPrefix(line, cmd); ok {
				calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
				v, _ := strconv.ParseInt(calls, 10, 64)
				n += v
			}
		}
	}
	return n
}

// A push job's notice wakes the push lane's waiters and not the pull lane's.
func TestNoticesWakeOnlyTheirLane(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{RecheckInterval: time.Minute})
	producer := newClientOn(t, rdb, Config{})
	ctx := testContext(t)
	mustEnqueue(t, producer, "t", Spec{ID: "later", Delay: time.Hour}) // the topic exists

	pull, push := make(chan []*Job, 1), make(chan []*Job, 1)
	before := scriptCalls(t, rdb)
	go func() {
		jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Wait: 3 * time.Second})
		pull <- jobs
	}()
	go func() {
		jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Wait: 10 * time.Second, push: true})
		push <- jobs
	}()
	// Both have looked once and sleep.
	waitFor(t, func() bool { return scriptCalls(t, rdb) >= before+2 })
	time.Sleep(100 * time.Millisecond)
	asleep := scriptCalls(t, rdb)

	mustEnqueue(t, producer, "t", Spec{ID: "hook", CallbackURL: "https://example.com/hook", Delay: 50 * time.Millisecond})
	select {
	case jobs := <-push:
		if len(jobs) != 1 || jobs[0].ID != "hook" {
			t.Fatalf("push lane got %v", jobs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the push job's notice did not wake the push lane")
	}
	if n := scriptCalls(t, rdb) - asleep; n != 2 {
		t.Errorf("%d script calls between the enqueue and the push delivery, want 2 (the enqueue and the push reserve): the pull lane woke", n)
	}
	if jobs := <-pull; len(jobs) != 0 {
		t.Errorf("pull lane got %v", jobs)
	}
}
