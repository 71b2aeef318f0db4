package delayqtest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

// A handler's Snooze releases its job for later without an attempt, as a Worker does; the
// job runs again once the clock reaches it, and past its MaxSnoozes goes dead.
func TestDrainSnoozesWithoutAnAttempt(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	ctx := testContext(t)
	enqueue(t, c, "work", delayq.Spec{ID: "s", MaxSnoozes: 1})
	var seen []*delayq.Job
	h := func(ctx context.Context, job *delayq.Job) error {
		seen = append(seen, job)
		return delayq.Snooze(time.Minute)
	}
	res := Drain(ctx, t, c, "work", h)
	checkIDs(t, "snoozed", res.Snoozed, "s")
	AdvanceClock(c, time.Minute)
	res = Drain(ctx, t, c, "work", h)
	checkIDs(t, "dead", res.Dead, "s")
	if len(seen) != 2 || seen[1].Attempts != 1 || seen[1].Snoozes != 1 {
		t.Fatalf("runs %d, the second with attempts %d and snoozes %d; want 2 runs, the second with 1 and 1", len(seen), seen[len(seen)-1].Attempts, seen[len(seen)-1].Snoozes)
	}
}

func TestDrainAcksRetriesAndDeadLetters(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	ctx := testContext(t)
	enqueue(t, c, "work", delayq.Spec{ID: "ok", Priority: 3})
	enqueue(t, c, "work", delayq.Spec{ID: "fails", Priority: 2, MaxRetries: 1})
	enqueue(t, c, "work", delayq.Spec{ID: "poison", Priority: 1})
	enqueue(t, c, "work", delayq.Spec{ID: "panics"})
	var ran []string
	h := func(ctx context.Context, job *delayq.Job) error {
		ran = append(ran, job.ID)
		switch job.ID {
		case "fails":
			return errors.New("smtp down")
		case "poison":
			return delayq.DeadLetter(errors.New("unreadable"))
		case "panics":
			panic("nil map")
		}
		return nil
	}
	res := Drain(ctx, t, c, "work", h)
	if want := []string{"ok", "fails", "poison", "panics"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v: by priority, each once", ran, want)
	}
	checkIDs(t, "acked", res.Acked, "ok")
	checkIDs(t, "retried", res.Retried, "fails", "panics")
	checkIDs(t, "dead", res.Dead, "poison")
	if err := res.Errors["panics"]; err == nil || !strings.Contains(err.Error(), "panic: nil map") {
		t.Errorf("the panic's error = %v, want its value", err)
	}

	// A retried job comes back delayed by its backoff step, with its attempt and error.
	j := RequireEnqueued(t, c, "work", Match{ID: "fails", State: delayq.StateDelayed, Attempts: 1})
	if j.LastError != "smtp down" || time.Until(j.RunAt) < 10*time.Second {
		t.Errorf("retried job: last error %q, due in %v; want smtp down, in about 15s", j.LastError, time.Until(j.RunAt))
	}
	RequireEnqueued(t, c, "work", Match{ID: "poison", State: delayq.StateDead, Attempts: 1})
	RequireNotEnqueued(t, c, "work", Match{ID: "ok"})

	// Its next failure uses up its one retry: it goes dead.
	ran = nil
	if res := Drain(ctx, t, c, "work", h); len(ran) != 0 || len(res.Acked)+len(res.Retried)+len(res.Dead) != 0 {
		t.Errorf("a second Drain before the retries are due ran %v: %+v", ran, res)
	}
	AdvanceClock(c, time.Minute)
	res = Drain(ctx, t, c, "work", h)
	checkIDs(t, "dead after its retry", res.Dead, "fails")
	checkIDs(t, "retried again", res.Retried, "panics")
	RequireEnqueued(t, c, "work", Match{ID: "fails", State: delayq.StateDead, Attempts: 2})
}

func TestDrainLeavesJobsThatAreNotDue(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	ctx := testContext(t)
	enqueue(t, c, "later", delayq.Spec{ID: "in-an-hour", Delay: time.Hour})
	ran := 0
	h := func(context.Context, *delayq.Job) error { ran++; return nil }
	start := time.Now()
	Drain(ctx, t, c, "later", h)
	if ran != 0 {
		t.Fatalf("Drain ran a job due in an hour")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Drain took %v with nothing due: it must not wait", took)
	}
	AdvanceClock(c, 59*time.Minute)
	if Drain(ctx, t, c, "later", h); ran != 0 {
		t.Fatalf("Drain ran a job still a minute from due")
	}
	AdvanceClock(c, time.Minute)
	res := Drain(ctx, t, c, "later", h)
	if ran != 1 {
		t.Fatalf("Drain ran %d jobs once the clock passed the due time, want 1", ran)
	}
	checkIDs(t, "acked", res.Acked, "in-an-hour")
}

// TestDrainRunsWhatBecomesDue runs a job that fails with RetryIn(0), due again at once, and
// one that its handler enqueues: Drain goes on until nothing is due.
func TestDrainRunsWhatBecomesDue(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	ctx := testContext(t)
	enqueue(t, c, "chain", delayq.Spec{ID: "first"})
	h := func(ctx context.Context, job *delayq.Job) error {
		switch {
		case job.ID == "first" && job.Attempts == 1:
			return delayq.RetryIn(0, errors.New("try again now"))
		case job.ID == "first":
			_, err := c.Enqueue(ctx, "chain", delayq.Spec{ID: "second"})
			return err
		}
		return nil
	}
	res := Drain(ctx, t, c, "chain", h)
	checkIDs(t, "retried", res.Retried, "first")
	checkIDs(t, "acked", res.Acked, "first", "second")
	if got := Enqueued(t, c, "chain"); len(got) != 0 {
		t.Errorf("jobs left: %v", got)
	}
}

// TestDrainCountsALostLease settles a job whose handler cancelled it: the ack finds no lease.
func TestDrainCountsALostLease(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	ctx := testContext(t)
	enqueue(t, c, "t", delayq.Spec{ID: "cancelled"})
	res := Drain(ctx, t, c, "t", func(ctx context.Context, job *delayq.Job) error {
		return c.Cancel(ctx, job.Topic, job.ID)
	})
	checkIDs(t, "lost", res.Lost, "cancelled")
	checkIDs(t, "acked", res.Acked)
}

func TestDrainFailsTheTestWhenRedisFails(t *testing.T) {
	t.Parallel()
	c := NewClient(t, delayq.Config{})
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	msg := failures(t, func(tb testing.TB) { Drain(ctx, tb, c, "t", func(context.Context, *delayq.Job) error { return nil }) })
	if !strings.Contains(msg, `Drain("t")`) || !strings.Contains(msg, "context canceled") {
		t.Errorf("failure = %q, want Drain's reserve error", msg)
	}
}

func checkIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}
