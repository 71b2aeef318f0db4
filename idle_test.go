package delayq

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/store"
)

// commandsProcessed returns the server's total_commands_processed (commands inside scripts
// count, and so does this INFO).
func commandsProcessed(t testing.TB, rdb redis.UniversalClient) int64 {
	return infoField(t, rdb, "stats", "total_commands_processed")
}

// Waiting consumers of one topic in one process share their safety rechecks: Redis sees the
// same few commands a second whether 1 or 60 consumers wait.
func TestIdleConsumersShareTheirRechecks(t *testing.T) {
	t.Parallel()
	const interval = 100 * time.Millisecond
	perSecond := func(waiters int) float64 {
		c, rdb := newTestClient(t, Config{Partitions: 4, RecheckInterval: interval})
		mustEnqueue(t, c, "idle", Spec{ID: "later", Delay: time.Hour})
		n, _ := idleCost(t, c, rdb, "idle", waiters)
		return n
	}
	one, many := perSecond(1), perSecond(60)
	t.Logf("idle cost: %.0f commands/s with 1 waiter, %.0f with 60", one, many)
	// 4 partitions × 3 commands per recheck (ready head, delayed head, paused) × 10 rechecks a
	// second = 120, and the lease keeper's look (one command a partition) every 30 rechecks.
	if one > 200 || many > 200 {
		t.Fatalf("idle cost: %.0f commands/s with 1 waiter, %.0f with 60; want at most 200 (4 partitions, 3 commands a recheck, 10 rechecks a second)", one, many)
	}
}

// The consumers of a paused topic do not spin on its due jobs: they make their rechecks, which
// see the pause, and no reserve until it is resumed.
func TestPausedTopicCostsItsConsumersOnlyRechecks(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{Partitions: 4, RecheckInterval: 100 * time.Millisecond})
	ctx := testContext(t)
	specs := make([]Spec, 20)
	if _, err := c.EnqueueBatch(ctx, "held", specs); err != nil {
		t.Fatal(err)
	}
	if err := c.PauseTopic(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	n, scripts := idleCost(t, c, rdb, "held", 4)
	t.Logf("paused topic with 20 due jobs: %.0f commands/s, %d script calls", n, scripts)
	if n > 200 || scripts > 0 {
		t.Fatalf("paused topic with due jobs: %.0f commands/s and %d script calls over a second; want at most 200 (the rechecks) and none", n, scripts)
	}
}

// idleCost starts waiters consumers that long-poll topic, waits until they have looked and
// found nothing to take, and measures over a second the commands per second Redis runs and
// the script calls among them.
func idleCost(t *testing.T, c *Client, rdb redis.UniversalClient, topic string, waiters int) (float64, int64) {
	ctx, cancel := context.WithCancel(testContext(t))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wait := func() {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _ = c.Reserve(ctx, topic, ReserveOptions{Wait: 700 * time.Millisecond})
			}
		})
	}
	// One consumer looks at the topic for all of them, which then have nothing to look at.
	wait()
	waitSettled(t, c, topic, store.LanePull)
	for range waiters - 1 {
		wait()
	}
	scripts := scriptCalls(t, rdb)
	before, start := commandsProcessed(t, rdb), time.Now()
	time.Sleep(time.Second) // the span over which the idle cost is measured
	n := float64(commandsProcessed(t, rdb)-before-1) / time.Since(start).Seconds()
	return n, scriptCalls(t, rdb) - scripts
}

// A long poll on a topic that does not exist creates nothing, and gets the topic's first job
// as soon as it is enqueued.
func TestWaitingForATopicThatDoesNotExist(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{RecheckInterval: time.Minute})
	producer := newClientOn(t, rdb, Config{})
	ctx := testContext(t)
	for _, push := range []bool{false, true} {
		if jobs, err := c.Reserve(ctx, "nobody", ReserveOptions{Wait: 200 * time.Millisecond, push: push}); err != nil || len(jobs) != 0 {
			t.Fatalf("Reserve: %v, %v", jobs, err)
		}
	}
	if names, err := c.TopicNames(ctx); err != nil || len(names) != 0 {
		t.Fatalf("topics after reserving from an unknown one: %v, %v", names, err)
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("%d keys after reserving from an unknown topic (%v), want 0", n, err)
	}

	waitHearsNewTopics(t, c)
	got := make(chan []*Job, 1)
	go func() {
		jobs, _ := c.Reserve(ctx, "new", ReserveOptions{Wait: 20 * time.Second})
		got <- jobs
	}()
	waitAwaiting(t, c, "new", store.LanePull)
	start := time.Now()
	mustEnqueue(t, producer, "new", Spec{ID: "first"})
	select {
	case jobs := <-got:
		if len(jobs) != 1 || jobs[0].ID != "first" {
			t.Fatalf("got %v", jobs)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the first job of a new topic reached its waiting consumer after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first job of a new topic did not reach the consumer waiting for it")
	}
}
