package delayqtest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

// A Worker started after AdvanceClock runs a job enqueued after the move with a short delay
// when it is due by the moved clock, not an AdvanceClock later.
func TestReviewAdvanceClockThenWorker(t *testing.T) {
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
