package delayq

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/testwait"
)

// The topic controls, on a standalone server (one partition a topic) and on a Cluster (16
// partitions over three shards).

func TestTopicControlsStandalone(t *testing.T) {
	t.Parallel()
	checkControls(t, redistest.Standalone(t).Client(t))
}

func TestTopicControlsCluster(t *testing.T) {
	t.Parallel()
	checkControls(t, redistest.NewCluster(t, 3, 0).Client(t))
}

func checkControls(t *testing.T, rdb redis.UniversalClient) {
	// Only a notice wakes a waiting consumer within a test: the recheck is a minute away.
	c := newClientOn(t, rdb, Config{RecheckInterval: time.Minute})
	producer := newClientOn(t, rdb, Config{})
	for _, lane := range []store.Lane{store.LanePull, store.LanePush} {
		t.Run("pause holds the "+string(lane)+" lane, resume delivers at once", func(t *testing.T) {
			checkPauseAndResume(t, c, producer, "pause-"+string(lane), lane)
		})
	}
	t.Run("rate limit", func(t *testing.T) { checkRateLimit(t, c, producer) })
	t.Run("concurrency limit", func(t *testing.T) { checkConcurrencyLimit(t, c, producer) })
	t.Run("limits are checked against the partitions", func(t *testing.T) { checkLimitsValidated(t, producer) })
	t.Run("delete refuses a topic with jobs, and removes an empty one", func(t *testing.T) { checkDelete(t, producer) })
	t.Run("purge deletes every job; waiting consumers wait on", func(t *testing.T) { checkPurge(t, c, producer) })
}

// checkPauseAndResume pauses a topic holding a due job of lane, checks that no consumer of the
// lane gets it or the next one, then resumes the topic and checks that the waiting consumer
// gets a job at once.
func checkPauseAndResume(t *testing.T, c, producer *Client, topic string, lane store.Lane) {
	ctx := testContext(t)
	push := lane == store.LanePush
	spec := func(id string) Spec {
		s := Spec{ID: id}
		if push {
			s.CallbackURL = "https://example.com/hook"
		}
		return s
	}
	mustEnqueue(t, producer, topic, spec("before"))
	if err := producer.PauseTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if s, err := producer.Stats(ctx, topic); err != nil || !s.Paused {
		t.Fatalf("stats of the paused topic: %+v, %v", s, err)
	}
	// A poll asks every partition.
	if jobs, err := c.Reserve(ctx, topic, ReserveOptions{push: push}); err != nil || len(jobs) != 0 {
		t.Fatalf("a poll of the paused topic: %d jobs, %v", len(jobs), err)
	}
	got := make(chan []*Job, 1)
	go func() {
		jobs, _ := c.Reserve(ctx, topic, ReserveOptions{Max: 2, Wait: 30 * time.Second, push: push})
		got <- jobs
	}()
	waitSettled(t, c, topic, lane)
	asleep := scriptCalls(t, c.store.Client())
	mustEnqueue(t, producer, topic, spec("during"))

	s, err := producer.Stats(ctx, topic)
	if err != nil || !s.Paused || s.Ready != 2 {
		t.Fatalf("stats of the paused topic: %+v, %v; want paused with 2 ready jobs", s, err)
	}
	select {
	case jobs := <-got:
		t.Fatalf("the paused topic handed out %d jobs", len(jobs))
	default:
	}
	start := time.Now()
	if err := producer.ResumeTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	select {
	case jobs := <-got:
		if len(jobs) == 0 {
			t.Fatal("the waiting consumer got nothing after the resume")
		}
		t.Logf("resume to delivery: %v", time.Since(start))
	case <-time.After(15 * time.Second):
		t.Fatal("the resume did not wake the waiting consumer")
	}
	// The consumer slept through the job enqueued while paused: on one partition, the
	// scripts run since are that enqueue, the stats, the resume and the reserve it woke.
	if s.Partitions == 1 {
		if n := scriptCalls(t, c.store.Client()) - asleep; n != 4 {
			t.Errorf("%d script calls from the enqueue into the paused topic to the delivery, want 4: the job's notice woke the consumer", n)
		}
	}
	if s, err := producer.Stats(ctx, topic); err != nil || s.Paused {
		t.Fatalf("stats after the resume: %+v, %v", s, err)
	}
}

// checkRateLimit has 16 consumers take a backlog under a limit of 100 deliveries per second
// for two seconds, and checks the deliveries' start times (the server's clock): no span of a
// second holds more than 100 (a sliding window), and two seconds hold close to 200.
func checkRateLimit(t *testing.T, c, producer *Client) {
	const topic, rate, period = "rate", 100, time.Second
	ctx := testContext(t)
	specs := make([]Spec, 600)
	if _, err := producer.EnqueueBatch(ctx, topic, specs); err != nil {
		t.Fatal(err)
	}
	if err := producer.SetTopicLimits(ctx, topic, TopicLimits{Rate: rate, Period: period}); err != nil {
		t.Fatal(err)
	}
	if s, err := producer.Stats(ctx, topic); err != nil || s.Limits != (TopicLimits{Rate: rate, Period: period}) {
		t.Fatalf("stats: %+v, %v", s, err)
	}
	starts := consumeUntil(t, c, topic, 16, 2*rate+1, 30*time.Second)
	window := rateWindowMs(starts, rate)
	t.Logf("%d deliveries; the shortest span holding %d+1 starts: %d ms; the first %d took %d ms",
		len(starts), rate, window, 2*rate+1, starts[2*rate]-starts[0])
	if window < period.Milliseconds() {
		t.Errorf("%d deliveries started within %d ms, a span shorter than the %v period", rate+1, window, period)
	}
	if d := starts[2*rate] - starts[0]; d > 2*period.Milliseconds()+500 {
		t.Errorf("%d deliveries took %d ms: the rate is well below the limit of %d per %v", 2*rate+1, d, rate, period)
	}
}

// consumeUntil runs consumers that reserve jobs of topic one at a time and ack them, until
// want deliveries have started or within has passed, and returns their start times (Unix ms,
// server clock), sorted.
func consumeUntil(t testing.TB, c *Client, topic string, consumers, want int, within time.Duration) []int64 {
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	var mu sync.Mutex
	var starts []int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range consumers {
		wg.Go(func() {
			for ctx.Err() == nil {
				jobs, _ := c.Reserve(ctx, topic, ReserveOptions{Wait: 5 * time.Second})
				for _, j := range jobs {
					_ = c.Ack(ctx, j.Lease())
					mu.Lock()
					starts = append(starts, j.LeasedAt.UnixMilli())
					if len(starts) == want {
						close(done)
					}
					mu.Unlock()
				}
			}
		})
	}
	select {
	case <-done:
	case <-time.After(within):
		mu.Lock()
		t.Errorf("only %d of %d deliveries within %v", len(starts), want, within)
		mu.Unlock()
	}
	cancel()
	wg.Wait()
	slices.Sort(starts)
	return starts
}

// rateWindowMs returns the shortest span, in ms, from the first to the last of rate+1
// deliveries in a row (starts sorted): under a sliding-window limit of rate per period it is
// at least the period. It returns the longest possible value when there are no rate+1.
func rateWindowMs(starts []int64, rate int) int64 {
	shortest := int64(1 << 62)
	for i := 0; i+rate < len(starts); i++ {
		shortest = min(shortest, starts[i+rate]-starts[i])
	}
	return shortest
}

// checkConcurrencyLimit has more consumers than the limit hold the jobs they get, and checks
// that no more than the limit are reserved at once, and that an ack lets a waiting consumer
// take the next job at once (the recheck is a minute away, the leases 30 s).
func checkConcurrencyLimit(t *testing.T, c, producer *Client) {
	const topic = "concurrency"
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	specs := make([]Spec, 300)
	if _, err := producer.EnqueueBatch(ctx, topic, specs); err != nil {
		t.Fatal(err)
	}
	n, err := producer.partitions(ctx, topic, false)
	if err != nil {
		t.Fatal(err)
	}
	limit := 2 * n
	if err := producer.SetTopicLimits(ctx, topic, TopicLimits{Concurrency: limit}); err != nil {
		t.Fatal(err)
	}
	got := make(chan *Job, 3*limit)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range 3 * limit {
		wg.Go(func() {
			for ctx.Err() == nil {
				jobs, _ := c.Reserve(ctx, topic, ReserveOptions{Wait: 20 * time.Second})
				for _, j := range jobs {
					got <- j
				}
			}
		})
	}
	var held []*Job
	take := func(within time.Duration) {
		select {
		case j := <-got:
			held = append(held, j)
		case <-time.After(within):
			t.Fatalf("%d jobs held, under a limit of %d: no consumer got the next one within %v", len(held), limit, within)
		}
	}
	for len(held) < limit {
		take(10 * time.Second)
	}
	// The others sleep until the first lease deadline, or a notice.
	waitSettled(t, c, topic, store.LanePull)
	if err := producer.Ack(ctx, held[0].Lease()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	take(5 * time.Second)
	t.Logf("ack to the next delivery: %v", time.Since(start))
	if s, err := producer.Stats(ctx, topic); err != nil || s.Reserved != int64(limit) {
		t.Fatalf("stats: %+v, %v; want %d reserved", s, err, limit)
	}
	select {
	case j := <-got:
		t.Fatalf("job %s handed out over the limit of %d", j.ID, limit)
	default:
	}
}

// checkLimitsValidated checks that limits a topic's partitions cannot share are refused with
// a reason, and that the zero limits lift them.
func checkLimitsValidated(t *testing.T, producer *Client) {
	const topic = "checked"
	ctx := testContext(t)
	mustEnqueue(t, producer, topic, Spec{})
	n, err := producer.partitions(ctx, topic, false)
	if err != nil {
		t.Fatal(err)
	}
	bad := []TopicLimits{{Rate: 10}, {Period: time.Second}, {Rate: 1, Period: 1500 * time.Microsecond}, {Concurrency: -1}}
	if n > 1 {
		bad = append(bad, TopicLimits{Rate: n - 1, Period: time.Second}, TopicLimits{Concurrency: n - 1})
	}
	for _, l := range bad {
		err := producer.SetTopicLimits(ctx, topic, l)
		var inv *InvalidError
		if !errors.As(err, &inv) {
			t.Errorf("limits %+v: %v, want an InvalidError", l, err)
		} else if n > 1 && l.Rate == n-1 && !strings.Contains(inv.Reason, "partitions") {
			t.Errorf("limits %+v: %q does not say why", l, inv.Reason)
		}
	}
	if err := producer.SetTopicLimits(ctx, topic, TopicLimits{Rate: n, Period: time.Second, Concurrency: n}); err != nil {
		t.Fatal(err)
	}
	if err := producer.SetTopicLimits(ctx, topic, TopicLimits{}); err != nil {
		t.Fatal(err)
	}
	if s, err := producer.Stats(ctx, topic); err != nil || s.Limits != (TopicLimits{}) {
		t.Fatalf("stats after lifting the limits: %+v, %v", s, err)
	}
}

// checkDelete checks that a topic holding a job is not deleted, and that once empty it is.
func checkDelete(t *testing.T, producer *Client) {
	const topic = "delete"
	ctx := testContext(t)
	mustEnqueue(t, producer, topic, Spec{ID: "a", Delay: time.Hour})
	if err := producer.PauseTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	_, err := producer.DeleteTopic(ctx, topic, DeleteTopicOptions{})
	var ne *NotEmptyError
	if !errors.As(err, &ne) || !errors.Is(err, ErrNotEmpty) || ne.Delayed != 1 || !strings.Contains(err.Error(), "1 delayed") {
		t.Fatalf("deleting a topic with a job: %v, want a NotEmptyError naming 1 delayed job", err)
	}
	if s, err := producer.Stats(ctx, topic); err != nil || !s.Paused || s.Delayed != 1 {
		t.Fatalf("stats after a refused delete: %+v, %v; want it as it was", s, err)
	}
	if err := producer.Cancel(ctx, topic, "a"); err != nil {
		t.Fatal(err)
	}
	if n, err := producer.DeleteTopic(ctx, topic, DeleteTopicOptions{}); err != nil || n != 0 {
		t.Fatalf("deleting the empty topic: %d, %v", n, err)
	}
	checkTopicGone(t, producer, topic)
}

// checkPurge fills a topic with jobs in every state, with controls, purges it while a
// consumer waits on it, and checks that nothing of it is left, that the holder of a lease
// cannot settle it, and that the waiting consumer gets the first job of the topic made again.
func checkPurge(t *testing.T, c, producer *Client) {
	const topic = "purge"
	ctx := testContext(t)
	specs := make([]Spec, 50)
	for i := range specs {
		specs[i].Delay = time.Duration(i%2) * time.Hour
		specs[i].MaxRetries, specs[i].NoRetries = 0, true
	}
	if _, err := producer.EnqueueBatch(ctx, topic, specs); err != nil {
		t.Fatal(err)
	}
	held, err := producer.Reserve(ctx, topic, ReserveOptions{Max: 10})
	if err != nil || len(held) != 10 {
		t.Fatalf("reserve: %d jobs, %v", len(held), err)
	}
	if _, err := producer.Nack(ctx, held[0].Lease(), NackOptions{Dead: true}); err != nil {
		t.Fatal(err)
	}
	if err := producer.SetTopicLimits(ctx, topic, TopicLimits{Rate: 1000, Period: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := producer.PauseTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	got := make(chan []*Job, 1)
	go func() {
		jobs, _ := c.Reserve(ctx, topic, ReserveOptions{Wait: 30 * time.Second})
		got <- jobs
	}()
	waitSettled(t, c, topic, store.LanePull)

	if n, err := producer.DeleteTopic(ctx, topic, DeleteTopicOptions{Purge: true}); err != nil || n != 50 {
		t.Fatalf("purge: %d jobs, %v; want 50", n, err)
	}
	checkTopicGone(t, producer, topic)
	if err := c.Ack(ctx, held[1].Lease()); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("ack of a purged job by a Client that knew the topic: %v, want ErrLeaseLost", err)
	}
	mustEnqueue(t, producer, topic, Spec{ID: "again"})
	select {
	case jobs := <-got:
		if len(jobs) != 1 || jobs[0].ID != "again" {
			t.Fatalf("the consumer waiting through the purge got %v", jobs)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the consumer waiting through the purge did not get the job of the topic made again")
	}
	if s, err := producer.Stats(ctx, topic); err != nil || s.Paused || s.Limits != (TopicLimits{}) {
		t.Fatalf("the topic made again: %+v, %v; want no controls", s, err)
	}
}

// checkTopicGone checks that topic is not listed, has no stats and left no key behind.
func checkTopicGone(t *testing.T, c *Client, topic string) {
	t.Helper()
	ctx := testContext(t)
	if names, err := c.TopicNames(ctx); err != nil || slices.Contains(names, topic) {
		t.Fatalf("topics after deleting %q: %v, %v", topic, names, err)
	}
	if _, err := c.Stats(ctx, topic); !errors.Is(err, ErrNotFound) {
		t.Fatalf("stats of the deleted topic: %v, want ErrNotFound", err)
	}
	n := c.cfg.Partitions
	for p := range n {
		part := c.store.Partition(topic, p)
		if left, err := c.store.Client().Exists(ctx, part.All()...).Result(); err != nil || left != 0 {
			t.Fatalf("%d keys of partition %d left after deleting %q (%v)", left, p, topic, err)
		}
	}
}

// A producer that knew a topic before another process deleted it goes on enqueueing to it, and
// registers it again within its recheck interval: its jobs are listed, none lost from view.
func TestAProducerRegistersADeletedTopicAgain(t *testing.T) {
	t.Parallel()
	deleter, rdb := newTestClient(t, Config{})
	producer := newClientOn(t, rdb, Config{RecheckInterval: 50 * time.Millisecond})
	ctx := testContext(t)
	mustEnqueue(t, producer, "t", Spec{})
	if n, err := deleter.DeleteTopic(ctx, "t", DeleteTopicOptions{Purge: true}); err != nil || n != 1 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	sent := 0
	testwait.For(t, 10*time.Second, "the producer to register the topic again", func() bool {
		mustEnqueue(t, producer, "t", Spec{})
		sent++
		names, err := deleter.TopicNames(ctx)
		return err == nil && slices.Contains(names, "t")
	})
	if s, err := deleter.Stats(ctx, "t"); err != nil || s.Ready != int64(sent) {
		t.Fatalf("stats of the topic registered again: %+v, %v; want the %d jobs enqueued since the delete", s, err, sent)
	}
}
