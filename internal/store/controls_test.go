package store

import (
	"testing"

	"github.com/delayq/delayq/internal/keys"
)

// A pause whose answer was lost, sent again after a resume, answers as it did and leaves the
// topic resumed.
func TestPauseReplayDoesNotUndoAResume(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	pause := write(p, NewCallID(), "pause")
	if err := s.run(ctx, controlsScript, pause).Err(); err != nil {
		t.Fatal(err)
	}
	if !counts(t, s, p).Paused {
		t.Fatal("not paused after a pause")
	}
	if err := s.SetPaused(ctx, []keys.Partition{p}, false); err != nil {
		t.Fatal(err)
	}
	if v, err := s.run(ctx, controlsScript, pause).Int64(); err != nil || v != 1 {
		t.Fatalf("replayed pause: %v, %v; want 1", v, err)
	}
	if counts(t, s, p).Paused {
		t.Fatal("a replayed pause undid the resume made since")
	}
}

func TestSharesSumToTheLimit(t *testing.T) {
	for _, c := range []struct{ limit, n int }{{100, 1}, {100, 16}, {16, 16}, {17, 16}, {1000, 7}} {
		sum, lo, hi := 0, c.limit, 0
		for p := range c.n {
			s := Share(c.limit, c.n, p)
			sum += s
			lo, hi = min(lo, s), max(hi, s)
		}
		if sum != c.limit || hi-lo > 1 || lo < 1 {
			t.Errorf("%d over %d partitions: shares sum to %d, from %d to %d", c.limit, c.n, sum, lo, hi)
		}
	}
}

// A reserve at its rate limit leases no more than the limit lets start; its replay answers the
// same jobs without counting them again; abandoning it takes its starts back.
func TestReserveUnderARateLimit(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		enqueueOne(t, s, p, id, 0)
	}
	if err := s.SetLimits(ctx, []keys.Partition{p}, Limits{Rate: 2, PeriodMs: 60_000}); err != nil {
		t.Fatal(err)
	}
	rc := ReserveCall{Call: NewCallID(), Secret: "secret", Lane: LanePull, Max: 3, Bulk: 100}
	first, err := s.Reserve(ctx, p, rc)
	if err != nil || len(first.Jobs) != 2 {
		t.Fatalf("first reserve: %d jobs, %v; want 2", len(first.Jobs), err)
	}
	if first.NextMs != first.NowMs+60_000 {
		t.Errorf("next %d, want when the window lets the next start: %d", first.NextMs, first.NowMs+60_000)
	}
	again, err := s.Reserve(ctx, p, rc)
	if err != nil || len(again.Jobs) != 2 || again.Jobs[0].ID != first.Jobs[0].ID {
		t.Fatalf("replay: %+v, %v", again, err)
	}
	starts := func() int64 { return s.Client().ZCard(ctx, p.Starts()).Val() }
	if n := starts(); n != 2 {
		t.Fatalf("%d starts in the window after a reserve and its replay, want 2", n)
	}
	other, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "other", Lane: LanePull, Max: 3, Bulk: 100})
	if err != nil || len(other.Jobs) != 0 || other.NextMs != first.NowMs+60_000 {
		t.Fatalf("a reserve over the limit: %d jobs, next %d, %v", len(other.Jobs), other.NextMs, err)
	}
	if ran, _, err := s.Abandon(ctx, p, rc); err != nil || !ran {
		t.Fatalf("abandon: %v, %v", ran, err)
	}
	if n := starts(); n != 0 {
		t.Fatalf("%d starts in the window after the only reserve was abandoned, want 0", n)
	}
	if err := s.SetLimits(ctx, []keys.Partition{p}, Limits{}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Client().Exists(ctx, p.Starts(), p.Settings()).Result(); n != 0 {
		t.Fatalf("%d of the window and settings keys left after lifting the limits", n)
	}
	lifted, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "third", Lane: LanePull, Max: 4, Bulk: 100})
	if err != nil || len(lifted.Jobs) != 4 {
		t.Fatalf("a reserve without limits: %d jobs, %v; want 4", len(lifted.Jobs), err)
	}
}

// A reserve at its concurrency limit leases nothing and says to look again at the first lease
// deadline.
func TestReserveUnderAConcurrencyLimit(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	for _, id := range []string{"a", "b", "c"} {
		enqueueOne(t, s, p, id, 0)
	}
	if err := s.SetLimits(ctx, []keys.Partition{p}, Limits{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	first, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "s1", Lane: LanePull, Max: 3, Bulk: 100})
	if err != nil || len(first.Jobs) != 2 {
		t.Fatalf("first reserve: %d jobs, %v; want 2", len(first.Jobs), err)
	}
	if first.NextMs != first.Jobs[0].LeaseDeadlineMs {
		t.Errorf("next %d, want the first lease deadline %d", first.NextMs, first.Jobs[0].LeaseDeadlineMs)
	}
	errs, _ := s.AckMany(ctx, []keys.Partition{p}, [][]Lease{{{ID: first.Jobs[0].ID, Token: first.Jobs[0].Lease}}})
	if errs[0][0] != nil {
		t.Fatal(errs[0][0])
	}
	second, err := s.Reserve(ctx, p, ReserveCall{Call: NewCallID(), Secret: "s2", Lane: LanePull, Max: 3, Bulk: 100})
	if err != nil || len(second.Jobs) != 1 {
		t.Fatalf("a reserve after an ack: %d jobs, %v; want 1", len(second.Jobs), err)
	}
}

// A purge whose answer was lost, sent again after new jobs came, answers as it did and deletes
// none of them; an 'empty' drop leaves a partition with jobs as it is.
func TestPurgeReplayDeletesNothingNew(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	enqueueOne(t, s, p, "old", 0)
	if held, err := s.DropPartitions(ctx, []keys.Partition{p}, false); err != nil || held[0] != 1 {
		t.Fatalf("an empty-only drop of a partition with a job: %v, %v", held, err)
	}
	if c := counts(t, s, p); c.Ready != 1 {
		t.Fatalf("after an empty-only drop: %+v", c)
	}
	purge := write(p, NewCallID(), "purge")
	if n, err := s.run(ctx, purgeScript, purge).Int64(); err != nil || n != 1 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	enqueueOne(t, s, p, "new", 0)
	if n, err := s.run(ctx, purgeScript, purge).Int64(); err != nil || n != 1 {
		t.Fatalf("replayed purge: %d, %v; want 1", n, err)
	}
	if c := counts(t, s, p); c.Ready != 1 {
		t.Fatalf("a replayed purge deleted the job enqueued since: %+v", c)
	}
}
