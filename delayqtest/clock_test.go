package delayqtest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

// TestAdvanceClockMovesOneClientOnly moves the clock of one of two Clients of the same jobs:
// the other still sees the job as delayed and cannot run it.
func TestAdvanceClockMovesOneClientOnly(t *testing.T) {
	t.Parallel()
	rdb := NewRedis(t)
	moved := newClientOn(t, rdb, delayq.Config{Namespace: "shared"})
	still := newClientOn(t, rdb, delayq.Config{Namespace: "shared"})
	ctx := testContext(t)
	enqueue(t, still, "t", delayq.Spec{ID: "j", Delay: time.Hour})

	AdvanceClock(moved, 30*time.Minute)
	AdvanceClock(moved, 30*time.Minute)
	if got := ClockOffset(moved); got != time.Hour {
		t.Errorf("ClockOffset after two moves of 30m = %v, want 1h", got)
	}
	if got := ClockOffset(still); got != 0 {
		t.Errorf("ClockOffset of the other Client = %v, want 0", got)
	}
	RequireEnqueued(t, moved, "t", Match{ID: "j", State: delayq.StateReady})
	RequireEnqueued(t, still, "t", Match{ID: "j", State: delayq.StateDelayed})
	ran := 0
	h := func(context.Context, *delayq.Job) error { ran++; return nil }
	if Drain(ctx, t, still, "t", h); ran != 0 {
		t.Fatal("the Client whose clock did not move ran the job")
	}
	if Drain(ctx, t, moved, "t", h); ran != 1 {
		t.Fatalf("the Client whose clock moved ran %d jobs, want 1", ran)
	}
}

// TestAdvanceClockStampsNewJobs enqueues through a moved Client: the delay counts from its
// clock, so the job is due an hour after the moved now.
func TestAdvanceClockStampsNewJobs(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	AdvanceClock(c, 24*time.Hour)
	j := enqueue(t, c, "t", delayq.Spec{Delay: time.Hour})
	if ahead := time.Until(j.CreatedAt); ahead < 23*time.Hour || ahead > 25*time.Hour {
		t.Errorf("CreatedAt %v ahead of now, want about 24h", ahead)
	}
	RequireEnqueued(t, c, "t", Match{ID: j.ID, State: delayq.StateDelayed, Delay: time.Hour})
	AdvanceClock(c, -time.Hour)
	if got := ClockOffset(c); got != 23*time.Hour {
		t.Errorf("ClockOffset after moving back 1h = %v, want 23h", got)
	}
}

// TestAdvanceClockExpiresALease moves the clock past a lease's TTR: the next reserve fails the
// lease, and the job, due again after its backoff step, is leased anew.
func TestAdvanceClockExpiresALease(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	ctx := testContext(t)
	enqueue(t, c, "t", delayq.Spec{ID: "j", TTR: 10 * time.Second})
	if jobs, err := c.Reserve(ctx, "t", delayq.ReserveOptions{}); err != nil || len(jobs) != 1 {
		t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
	}
	AdvanceClock(c, time.Minute) // past the TTR and the 15s backoff step after it
	jobs, err := c.Reserve(ctx, "t", delayq.ReserveOptions{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Reserve after the TTR: %d jobs, %v", len(jobs), err)
	}
	if j := jobs[0]; j.Attempts != 2 || j.LastError != "ttr exceeded" {
		t.Errorf("job leased again: attempts %d, last error %q; want 2, ttr exceeded", j.Attempts, j.LastError)
	}
}

// A Worker already waiting for a job an hour away runs it once AdvanceClock moves its
// Client's clock past the due time: the Client's plans move with its clock.
func TestAdvanceClockWakesARunningWorker(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	ctx := testContext(t)
	enqueue(t, c, "t", delayq.Spec{ID: "later", Delay: time.Hour})
	ran := make(chan string, 1)
	w, err := delayq.NewWorker(c, delayq.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Handle("t", func(_ context.Context, j *delayq.Job) error { ran <- j.ID; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	time.Sleep(200 * time.Millisecond) // the Worker looks, and waits for the hour
	AdvanceClock(c, time.Hour)
	select {
	case id := <-ran:
		if id != "later" {
			t.Fatalf("ran %q, want later", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the running Worker did not run the job the clock's move made due")
	}
}

// A Worker started after AdvanceClock runs a job enqueued after the move with a short delay
// when it is due by the moved clock, not an AdvanceClock later.
func TestAdvanceClockThenWorker(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	ctx := testContext(t)
	enqueue(t, c, "t", delayq.Spec{ID: "early", Delay: 30 * time.Minute})
	AdvanceClock(c, time.Hour)
	var ran atomic.Int64
	w, err := delayq.NewWorker(c, delayq.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Handle("t", func(context.Context, *delayq.Job) error { ran.Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	enqueue(t, c, "t", delayq.Spec{ID: "late", Delay: 500 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for ran.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := ran.Load(); n != 2 {
		t.Fatalf("the Worker ran %d jobs in 10s, want 2", n)
	}
}
