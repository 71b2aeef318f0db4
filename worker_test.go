package delayq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
	waitFor(t, func() bool {
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
	waitFor(t, func() bool { return running.Load() == 3 })
	s, _ := c.Stats(ctx, "t")
	if s.Reserved != 3 || s.Ready != 17 {
		t.Errorf("with 3 slots busy: %d reserved, %d ready; want 3 and 17", s.Reserved, s.Ready)
	}
	close(release)
	waitFor(t, func() bool { s, _ := c.Stats(ctx, "t"); return s.Ready+s.Reserved == 0 })
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
	waitFor(t, func() bool {
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
	waitFor(t, func() bool { _, err := c.Get(testContext(t), "t", "long"); return errors.Is(err, ErrNotFound) })
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
			time.Sleep(50 * time.Millisecond)
		}
		proceed <- struct{}{}
		acked := time.Now().Add(5 * time.Second)
		for {
			_, err := c.Get(ctx, "quick", id)
			if errors.Is(err, ErrNotFound) {
				break
			}
			if time.Now().After(acked) {
				t.Fatalf("round %d: quick job not acked: %v", round, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
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
