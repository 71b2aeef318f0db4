package delayq

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/testwait"
)

// scriptCalls returns how many EVALSHA and EVAL calls the server has run.
func scriptCalls(t testing.TB, rdb redis.UniversalClient) int64 {
	t.Helper()
	return commandCalls(t, rdb, "evalsha", "eval")
}

// commandCalls returns how many calls of the named commands (lower case) the server has run.
func commandCalls(t testing.TB, rdb redis.UniversalClient, names ...string) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\r\n") {
		for _, name := range names {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+name+":"); ok {
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
	go func() {
		jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Wait: 3 * time.Second})
		pull <- jobs
	}()
	go func() {
		jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Wait: 10 * time.Second, push: true})
		push <- jobs
	}()
	// Both have looked once and sleep.
	waitSettled(t, c, "t", store.LanePull, store.LanePush)
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

// On a Cluster, a Client's wake-up notices use one connection per shard, however many topic
// partitions it listens to: 20 topics × 16 partitions take 3 connections, not 320.
func TestClusterNoticesUseOneConnectionPerShard(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := cluster.Client(t)
	c := newClientOn(t, rdb, Config{RecheckInterval: time.Minute})
	producer := newClientOn(t, rdb, Config{})
	ctx := testContext(t)
	const topics = 20
	for i := range topics {
		topic := fmt.Sprint("t", i)
		mustEnqueue(t, producer, topic, Spec{ID: "later", Delay: time.Hour})
		if _, err := c.Reserve(ctx, topic, ReserveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// pubsub returns, per node, the connections subscribed to shard channels and their channels.
	pubsub := func() (conns []int, channels int) {
		for _, node := range cluster.Nodes {
			list, err := node.Client(t).ClientList(context.Background()).Result()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, line := range strings.Split(list, "\n") {
				for _, field := range strings.Fields(line) {
					if v, ok := strings.CutPrefix(field, "ssub="); ok && v != "0" {
						k, _ := strconv.Atoi(v)
						n++
						channels += k
					}
				}
			}
			conns = append(conns, n)
		}
		return conns, channels
	}
	testwait.For(t, 20*time.Second, "a subscription to every partition of every topic", func() bool { _, n := pubsub(); return n == topics*16 })
	if conns, _ := pubsub(); fmt.Sprint(conns) != "[1 1 1]" {
		t.Fatalf("pub/sub connections per shard: %v, want one each", conns)
	}
	got := make(chan []*Job, 1)
	go func() {
		jobs, _ := c.Reserve(ctx, "t7", ReserveOptions{Wait: 10 * time.Second})
		got <- jobs
	}()
	waitSettled(t, c, "t7", store.LanePull) // the consumer sleeps
	start := time.Now()
	mustEnqueue(t, producer, "t7", Spec{ID: "now"})
	if jobs := <-got; len(jobs) != 1 || jobs[0].ID != "now" {
		t.Fatalf("got %v", jobs)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("woken %v after the enqueue: the notice did not arrive", d)
	}
}

// A consumer whose partitions' channel another part of the Client subscribed already (here
// its lease keeper) looks again once it listens: no subscription's confirmation tells it that
// what was published before went unheard.
func TestConsumerJoiningASubscribedChannelLooksAgain(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{ExpireAllLeases: true, RecheckInterval: time.Hour})
	mustEnqueue(t, c, "joined", Spec{ID: "later", Delay: time.Hour})
	testwait.For(t, 10*time.Second, "the lease keeper to keep the topic", func() bool { return c.leases.Kept() == 1 })
	time.Sleep(100 * time.Millisecond) // its subscription confirmed
	if _, err := c.Reserve(testContext(t), "joined", ReserveOptions{}); err != nil {
		t.Fatal(err)
	}
	s := laneState(c, "joined", store.LanePull)
	testwait.For(t, 5*time.Second, "the consumer to be told to look again", func() bool {
		snap := s.Snapshot()
		return snap.Listening && snap.Notices[0] > 0
	})
}
