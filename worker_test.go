package delayq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

func startWorker(t *testing.T, c *Client, cfg WorkerConfig, handlers map[string]Handler) *Worker {
	t.Helper()
	w, err := NewWorker(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for topic, h := range handlers {
		if err := w.Handle(topic, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Stop(ctx)
	})
	return w
}

func TestWorkerRunsHandlersAndAcks(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	var handled sync.Map
	done := make(chan struct{}, 100)
	startWorker(t, c, WorkerConfig{Concurrency: 4}, map[string]Handler{
		"a": func(ctx context.Context, j *Job) error {
			handled.Store("a/"+j.ID, true)
			done <- struct{}{}
			return nil
		},
		"b": func(ctx context.Context, j *Job) error {
			handled.Store("b/"+j.ID, true)
			done <- struct{}{}
			return nil
		},
	})
	for i := range 20 {
		mustEnqueue(t, c, "a", Spec{ID: fmt.Sprint(i), Delay: time.Duration(i) * 10 * time.Millisecond})
		mustEnqueue(t, c, "b", Spec{ID: fmt.Sprint(i)})
	}
	for range 40 {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("handlers did not run")
		}
	}
	testwait.For(t, 20*time.Second, "every job to be acked", func() bool {
		a, _ := c.Stats(ctx, "a")
		b, _ := c.Stats(ctx, "b")
		return a.Ready+a.Delayed+a.Reserved+b.Ready+b.Delayed+b.Reserved == 0
	})
}

func TestWorkerNeverHoldsMoreThanItsSlots(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	release := make(chan struct{})
	var running, peak atomic.Int64
	startWorker(t, c, WorkerConfig{Concurrency: 3}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			<-release
			running.Add(-1)
			return nil
		},
	})
	specs := make([]Spec, 20)
	c.EnqueueBatch(ctx, "t", specs)
	testwait.For(t, 20*time.Second, "3 handlers to run", func() bool { return running.Load() == 3 })
	s, _ := c.Stats(ctx, "t")
	if s.Reserved != 3 || s.Ready != 17 {
		t.Errorf("with 3 slots busy: %d reserved, %d ready; want 3 and 17", s.Reserved, s.Ready)
	}
	close(release)
	testwait.For(t, 20*time.Second, "every job to be acked", func() bool { s, _ := c.Stats(ctx, "t"); return s.Ready+s.Reserved == 0 })
	if peak.Load() > 3 {
		t.Errorf("%d handlers ran at once with Concurrency 3", peak.Load())
	}
}

func TestWorkerFailuresRetriesPanicsAndDeadLetters(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	startWorker(t, c, WorkerConfig{}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error {
			switch j.ID {
			case "panic":
				panic("kaboom")
			case "dead":
				return DeadLetter(errors.New("poison"))
			case "retry":
				if j.Attempts == 1 {
					return RetryIn(10*time.Millisecond, errors.New("later"))
				}
				return nil
			}
			return errors.New("plain failure")
		},
	})
	for _, id := range []string{"panic", "dead", "retry", "fail"} {
		mustEnqueue(t, c, "t", Spec{ID: id, MaxRetries: 5})
	}
	testwait.For(t, 20*time.Second, "each job's outcome", func() bool {
		p, _ := c.Get(ctx, "t", "panic")
		d, _ := c.Get(ctx, "t", "dead")
		f, _ := c.Get(ctx, "t", "fail")
		_, rerr := c.Get(ctx, "t", "retry")
		return p != nil && p.State == StateDelayed && d != nil && d.State == StateDead &&
			f != nil && f.State == StateDelayed && errors.Is(rerr, ErrNotFound)
	})
	p, _ := c.Get(ctx, "t", "panic")
	d, _ := c.Get(ctx, "t", "dead")
	f, _ := c.Get(ctx, "t", "fail")
	if !contains(p.LastError, "panic: kaboom") || d.LastError != "poison" || f.LastError != "plain failure" {
		t.Errorf("last errors: %q, %q, %q", p.LastError, d.LastError, f.LastError)
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

func TestWorkerRenewsLeasesOfLongHandlers(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	var calls atomic.Int32
	done := make(chan struct{})
	startWorker(t, c, WorkerConfig{}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error {
			calls.Add(1)
			// Three TTRs: only renewal keeps the lease. The TTR leaves each renewal (every TTR/3)
			// 400 ms of slack, which a loaded 2-core machine running the race detector needs.
			time.Sleep(1800 * time.Millisecond)
			close(done)
			return nil
		},
	})
	mustEnqueue(t, c, "t", Spec{ID: "long", TTR: 600 * time.Millisecond})
	<-done
	testwait.For(t, 20*time.Second, "the job to be acked", func() bool { _, err := c.Get(testContext(t), "t", "long"); return errors.Is(err, ErrNotFound) })
	if calls.Load() != 1 {
		t.Errorf("handler ran %d times: the lease was not renewed", calls.Load())
	}
}

func TestWorkerGracefulStopFinishesRunningJobs(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	started := make(chan struct{}, 5)
	w := startWorker(t, c, WorkerConfig{Concurrency: 5}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error {
			started <- struct{}{}
			// A sleep: the jobs must still run when Stop is called, and the Worker tells
			// nobody that Stop has begun, so a handler cannot wait for it.
			time.Sleep(300 * time.Millisecond)
			return nil
		},
	})
	c.EnqueueBatch(ctx, "t", make([]Spec, 5))
	for range 5 {
		<-started
	}
	mustEnqueue(t, c, "t", Spec{ID: "after-stop", Delay: 100 * time.Millisecond})
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	s, _ := c.Stats(ctx, "t")
	if s.Reserved != 0 || s.Ready+s.Delayed != 1 {
		t.Errorf("after a graceful stop: %+v; want the 5 running jobs acked, the later one left", s)
	}
}

func TestWorkerStopCutShortReleasesJobs(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{})
	ctx := testContext(t)
	started := make(chan struct{}, 3)
	w := startWorker(t, c, WorkerConfig{Concurrency: 3}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error {
			started <- struct{}{}
			<-ctx.Done() // runs until cut short
			return ctx.Err()
		},
	})
	c.EnqueueBatch(ctx, "t", []Spec{{ID: "a", TTR: time.Hour}, {ID: "b", TTR: time.Hour}, {ID: "c", TTR: time.Hour}})
	for range 3 {
		<-started
	}
	stopCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := w.Stop(stopCtx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want DeadlineExceeded", err)
	}
	// Released, not left to their one-hour TTR: another consumer gets them at once.
	other := newClientOn(t, rdb, Config{})
	jobs, err := other.Reserve(ctx, "t", ReserveOptions{Max: 10})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("after a cut-short stop another consumer got %d jobs (%v), want 3", len(jobs), err)
	}
	for _, j := range jobs {
		if j.Attempts != 1 {
			t.Errorf("job %s attempts %d, want 1: a release does not count", j.ID, j.Attempts)
		}
		if j.Snoozes != 0 {
			t.Errorf("job %s snoozes %d, want 0: a release at shutdown is not the handler's snooze", j.ID, j.Snoozes)
		}
	}
}

// A handler that returns Snooze(d) gets its job back after d, with the same attempt count and
// one more snooze each time.
func TestWorkerSnoozeReleasesForLaterWithoutAnAttempt(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	const d = 300 * time.Millisecond
	type delivery struct {
		attempts, snoozes int
		leased            time.Time
	}
	deliveries := make(chan delivery, 10)
	startWorker(t, c, WorkerConfig{}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error {
			deliveries <- delivery{j.Attempts, j.Snoozes, j.LeasedAt}
			if j.Snoozes < 2 {
				return Snooze(d)
			}
			return nil
		},
	})
	mustEnqueue(t, c, "t", Spec{ID: "s"})
	var got []delivery
	for range 3 {
		select {
		case v := <-deliveries:
			got = append(got, v)
		case <-ctx.Done():
			t.Fatalf("deliveries so far %+v: %v", got, ctx.Err())
		}
	}
	for i, v := range got {
		if v.attempts != 1 || v.snoozes != i {
			t.Errorf("delivery %d: attempts %d, snoozes %d; want 1, %d", i+1, v.attempts, v.snoozes, i)
		}
		if i > 0 && v.leased.Sub(got[i-1].leased) < d {
			t.Errorf("delivery %d came %s after the one before; want at least the snooze's %s", i+1, v.leased.Sub(got[i-1].leased), d)
		}
	}
	testwait.For(t, 20*time.Second, "the job to be acked", func() bool { _, err := c.Get(ctx, "t", "s"); return errors.Is(err, ErrNotFound) })
}

// A job that snoozes more than its MaxSnoozes goes to the dead letters, saying why.
func TestWorkerSnoozePastMaxSnoozesDeadLetters(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	startWorker(t, c, WorkerConfig{}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error { return Snooze(time.Millisecond) },
	})
	mustEnqueue(t, c, "t", Spec{ID: "s", MaxSnoozes: 2})
	testwait.For(t, 20*time.Second, "the job to go dead", func() bool { j, _ := c.Get(ctx, "t", "s"); return j != nil && j.State == StateDead })
	j, _ := c.Get(ctx, "t", "s")
	if j.Snoozes != 3 || j.Attempts != 1 || j.MaxSnoozes != 2 || j.LastError != "snoozed more than max_snoozes (2) times" {
		t.Errorf("dead job: snoozes %d, attempts %d, max snoozes %d, last error %q; want 3, 1, 2 and the reason", j.Snoozes, j.Attempts, j.MaxSnoozes, j.LastError)
	}
}

func TestKilledConsumersJobIsRedelivered(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{})
	mustEnqueue(t, c, "t", Spec{ID: "a", TTR: 300 * time.Millisecond, Backoff: []time.Duration{10 * time.Millisecond}})
	// A consumer that takes the job and dies: it never acks, nacks or touches.
	dying := newClientOn(t, rdb, Config{})
	reserveOne(t, dying, "t", 0)
	dying.Close()
	got := make(chan *Job, 1)
	startWorker(t, c, WorkerConfig{}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error { got <- j; return nil },
	})
	select {
	case j := <-got:
		if j.Attempts != 2 || j.LastError != "ttr exceeded" {
			t.Errorf("redelivered %+v", j)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dead consumer's job was not redelivered after its TTR and backoff")
	}
}

// A finished job's ack rides with the Worker's next reserve call; when no reserve comes soon (the
// Worker is idle, or its only slot is busy with another topic's long job), the ack must still
// be made at once, not when the lease runs out or the next recheck comes.
func TestWorkerAcksWithoutAnotherReserve(t *testing.T) {
	t.Parallel()
	for _, slots := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d slots", slots), func(t *testing.T) {
			t.Parallel()
			testWorkerAcksWithoutAnotherReserve(t, slots)
		})
	}
}

func testWorkerAcksWithoutAnotherReserve(t *testing.T, slots int) {
	c, _ := newTestClient(t, Config{RecheckInterval: time.Hour})
	ctx := testContext(t)
	var quickRuns atomic.Int32
	started := make(chan struct{}, 10)
	proceed := make(chan struct{}, 10)
	release := make(chan struct{})
	startWorker(t, c, WorkerConfig{Concurrency: slots}, map[string]Handler{
		"quick": func(context.Context, *Job) error {
			quickRuns.Add(1)
			started <- struct{}{}
			<-proceed
			return nil
		},
		"slow": func(ctx context.Context, _ *Job) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		},
	})
	defer close(release)
	for round, slow := range []bool{false, true} {
		id := fmt.Sprintf("q%d", round)
		mustEnqueue(t, c, "quick", Spec{ID: id, TTR: time.Hour})
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatalf("round %d: quick job never ran", round)
		}
		if slow {
			// With one slot, the slow job waits for it and takes it when the quick job frees it.
			mustEnqueue(t, c, "slow", Spec{ID: "s", TTR: time.Minute})
			// A sleep: the slow topic's fetcher hears of its job and waits for the slot; with
			// one slot it shows nothing to wait on (its state looks the same before the notice).
			time.Sleep(50 * time.Millisecond)
		}
		proceed <- struct{}{}
		// Well before the one-hour recheck and TTR.
		testwait.ForNil(t, 5*time.Second, fmt.Sprintf("round %d: the quick job's ack", round), func() error {
			if _, err := c.Get(ctx, "quick", id); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("quick job still there: %v", err)
			}
			return nil
		})
	}
	if n := quickRuns.Load(); n != 2 {
		t.Fatalf("quick jobs ran %d times, want 2", n)
	}
}

// A handler's ctx carries the values of Start's ctx but not its end: Stop decides when
// handlers are cut. Handle after Start starts the topic.
func TestWorkerHandlerContextAndLateHandle(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	w, err := NewWorker(c, WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	type key struct{}
	startCtx, cancelStart := context.WithCancel(context.WithValue(testContext(t), key{}, "v"))
	if err := w.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(testContext(t)) })
	cancelStart()

	type seen struct {
		value any
		err   error
	}
	got := make(chan seen, 1)
	if err := w.Handle("late", func(ctx context.Context, j *Job) error {
		got <- seen{ctx.Value(key{}), ctx.Err()}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, c, "late", Spec{ID: "a"})
	select {
	case s := <-got:
		if s.value != "v" || s.err != nil {
			t.Errorf("handler ctx: value %v, err %v; want Start's value and no error", s.value, s.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler registered after Start did not run")
	}
}

// A Worker's acks of jobs on live shards go through while its reserve call to a shard that
// does not answer hangs: they used to wait for the next reserve call, after the hung one.
func TestWorkerAcksDoNotWaitForAHungShard(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := cluster.Client(t)
	c := newClientOn(t, rdb, Config{RecheckInterval: time.Minute})
	ctx := testContext(t)
	const topic = "orders"

	// shardOf returns the address of the node holding job id's partition.
	shardOf := func(id string) string {
		key := c.store.Partition(topic, keys.PartitionOf(id, 16)).Jobs()
		node, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return node.Options().Addr
	}
	hung := cluster.Nodes[0]
	var good []string
	victim := ""
	for i := 0; len(good) < 8 || victim == ""; i++ {
		id := fmt.Sprint("job-", i)
		if shardOf(id) == hung.Addr {
			if victim == "" {
				victim = id
			}
		} else if len(good) < 8 {
			good = append(good, id)
		}
	}

	var mu sync.Mutex
	handled := map[string]time.Time{}
	release := make(chan struct{})
	startWorker(t, c, WorkerConfig{Concurrency: 16}, map[string]Handler{topic: func(ctx context.Context, j *Job) error {
		<-release // the handlers finish once the shard hangs
		mu.Lock()
		handled[j.ID] = time.Now()
		mu.Unlock()
		return nil
	}})
	// A job on the shard about to hang, due soon: the Worker's reserve call then goes there.
	victimDue := time.Now().Add(1500 * time.Millisecond)
	mustEnqueue(t, c, topic, Spec{ID: victim, RunAt: victimDue})
	for _, id := range good {
		mustEnqueue(t, c, topic, Spec{ID: id, TTR: time.Minute})
	}
	testwait.For(t, 20*time.Second, "the jobs of the live shards to be leased", func() bool {
		for _, id := range good {
			if j, err := c.Get(ctx, topic, id); err != nil || j.State != StateReserved {
				return false
			}
		}
		return true
	})
	if time.Until(victimDue) < 300*time.Millisecond {
		t.Skip("the machine is too slow for this scenario's timing")
	}
	hung.Stop(t)
	t.Cleanup(func() { hung.Cont(t) })
	// Sleep past the victim's due time: the reserve call to the stopped shard is then under way
	// (nothing outside the Worker shows the call).
	time.Sleep(time.Until(victimDue) + 300*time.Millisecond)
	close(release)

	testwait.For(t, 20*time.Second, "the handlers to finish", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == len(good)
	})
	finished := time.Now()
	testwait.For(t, 20*time.Second, "the acks of the live shards' jobs", func() bool {
		for _, id := range good {
			if _, err := c.Get(ctx, topic, id); !errors.Is(err, ErrNotFound) {
				return false
			}
		}
		return true
	})
	// go-redis gives up on the stopped shard after its 3 s read timeout at the earliest.
	if took := time.Since(finished); took > 1500*time.Millisecond {
		t.Errorf("the acks took %v after the handlers finished: they waited for the hung reserve call", took)
	}
}

// A job's lease is renewed whatever the consuming Client's limits: a job whose TTR is below the
// Worker's Client's MinTTR (it was enqueued through a Client with other limits) keeps its
// lease while its handler runs longer than that TTR.
func TestWorkerRenewsLeasesBelowItsMinTTR(t *testing.T) {
	t.Parallel()
	producer, rdb := newTestClient(t, Config{})
	consumer := newClientOn(t, rdb, Config{Limits: Limits{MinTTR: time.Second}})
	var calls atomic.Int32
	done := make(chan struct{})
	startWorker(t, consumer, WorkerConfig{}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error {
			if calls.Add(1) == 1 {
				time.Sleep(800 * time.Millisecond) // four TTRs: only renewal keeps the lease
				close(done)
			}
			return nil
		},
	})
	mustEnqueue(t, producer, "t", Spec{ID: "short", TTR: 200 * time.Millisecond})
	<-done
	testwait.For(t, 20*time.Second, "the job to be acked", func() bool { _, err := producer.Get(testContext(t), "t", "short"); return errors.Is(err, ErrNotFound) })
	if n := calls.Load(); n != 1 {
		t.Errorf("handler ran %d times: the lease was not renewed", n)
	}
}

// The connections between a Worker and Redis all drop, and new ones are refused for 3 s, while
// its handlers finish: their acks are retried until they go through, so every job's handler
// runs once, no job goes dead (they allow no retry) and nothing is left reserved.
func TestWorkerAcksSurviveAConnectionOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.Standalone(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { rdb.Close() })
	c := newClientOn(t, rdb, Config{})
	producer := newClientOn(t, srv.Client(t), Config{})
	ctx := testContext(t)

	const n = 40
	var mu sync.Mutex
	runs := map[string]int{}
	started := make(chan struct{}, n)
	finish := make(chan struct{})
	w := startWorker(t, c, WorkerConfig{Concurrency: n}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error {
			mu.Lock()
			runs[j.ID]++
			mu.Unlock()
			started <- struct{}{}
			<-finish
			return nil
		},
	})
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{ID: fmt.Sprint("j", i), TTR: 8 * time.Second, NoRetries: true}
	}
	if _, err := producer.EnqueueBatch(ctx, "t", specs); err != nil {
		t.Fatal(err)
	}
	for range n {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the handlers did not all start")
		}
	}
	over := proxy.Outage(3 * time.Second)
	close(finish) // the handlers finish while Redis cannot be reached
	<-over
	testwait.For(t, 20*time.Second, "the acks held through the outage to land", func() bool {
		s, err := producer.Stats(ctx, "t")
		return err == nil && s.Ready+s.Delayed+s.Reserved+s.Dead == 0
	})
	s, _ := producer.Stats(ctx, "t")
	if s.Dead != 0 || s.Reserved != 0 {
		t.Fatalf("after the outage: %+v", s)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := w.Stop(stopCtx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, k := range runs {
		if k != 1 {
			t.Errorf("handler of %s ran %d times", id, k)
		}
	}
	if len(runs) != n {
		t.Errorf("%d of %d jobs handled", len(runs), n)
	}
}

// TestWorkerUseWrapsEveryHandlerInOrder registers middleware before and after a handler: each
// job passes through all of it, the first given outermost; a panic in middleware nacks the job
// with the panic's text; Use after Start is refused.
func TestWorkerUseWrapsEveryHandlerInOrder(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	w, err := NewWorker(c, WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var trail []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		trail = append(trail, s)
	}
	named := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, job *Job) error {
				note(name + " " + job.Topic)
				if string(job.Body) == "panic in "+name {
					panic("boom in " + name)
				}
				return next(ctx, job)
			}
		}
	}
	if err := w.Use(named("outer")); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 4)
	handler := func(_ context.Context, job *Job) error { done <- job.ID; return nil }
	if err := w.Handle("a", handler); err != nil {
		t.Fatal(err)
	}
	if err := w.Use(named("inner")); err != nil { // after Handle: still around it
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	if err := w.Use(named("late")); err == nil {
		t.Error("Use after Start was accepted")
	}
	mustEnqueue(t, c, "a", Spec{ID: "ok"})
	select {
	case id := <-done:
		if id != "ok" {
			t.Fatalf("handled %q", id)
		}
	case <-ctx.Done():
		t.Fatal("the job was not handled")
	}
	mu.Lock()
	got := slices.Clone(trail)
	mu.Unlock()
	if want := []string{"outer a", "inner a"}; !slices.Equal(got, want) {
		t.Errorf("middleware ran as %q, want %q", got, want)
	}
	mustEnqueue(t, c, "a", Spec{ID: "bad", Body: []byte("panic in inner"), NoRetries: true})
	testwait.ForNil(t, 20*time.Second, "the job whose middleware panicked to go dead", func() error {
		j, err := c.Get(ctx, "a", "bad")
		if err != nil {
			return err
		}
		if j.State != StateDead || !strings.Contains(j.LastError, "boom in inner") {
			return errors.New("state " + string(j.State) + ", last error " + j.LastError)
		}
		return nil
	})
}
