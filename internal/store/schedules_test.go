package store

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tickJob is the job of schedule "s"'s tick at ms.
func tickJob(id string, ms int64) NewJob {
	return NewJob{ID: id, RunAtMs: ms, TTRMs: 30000, MaxRetries: 3, Body: []byte("tick")}
}

// A tick's job is enqueued once, however often and however late a scheduler tries: the
// partition's mark refuses the tick even after its job is gone.
func TestTickIsEnqueuedOnce(t *testing.T) {
	t.Parallel()
	s, p := newTestStore(t)
	ctx := testCtx(t)
	const tick = 4_000_000_000_000
	try := func(id string, ms int64, want TickOutcome) {
		t.Helper()
		schedule, _, _ := strings.Cut(id, "@")
		got, err := s.EnqueueTick(ctx, p, schedule, tickJob(id, ms), 0)
		if err != nil || got != want {
			t.Fatalf("EnqueueTick(%s): %v, %v; want %v", id, got, err, want)
		}
	}
	try("s@2", tick, TickAdded)
	r, err := s.Get(ctx, p, "s@2")
	if err != nil || r.RunAtMs != tick || r.State != StateDelayed || string(r.Body) != "tick" {
		t.Fatalf("the tick's job: %+v, %v", r, err)
	}
	try("s@2", tick, TickDoneBefore)
	if err := s.Cancel(ctx, p, "s@2"); err != nil {
		t.Fatal(err)
	}
	try("s@2", tick, TickDoneBefore) // its job is gone, and still it does not come back
	try("s@1", tick-1000, TickDoneBefore)
	try("s@3", tick+1000, TickAdded)

	// Past the latest time given, a tick is neither added nor marked.
	if got, err := s.EnqueueTick(ctx, p, "s", tickJob("s@4", tick+2000), 1); err != nil || got != TickTooLate {
		t.Fatalf("EnqueueTick(s@4) too late: %v, %v; want %v", got, err, TickTooLate)
	}
	try("s@4", tick+2000, TickAdded)
	if err := s.Cancel(ctx, p, "s@4"); err != nil {
		t.Fatal(err)
	}

	// Another schedule has its own mark; a job that holds the tick's id already is left as it is.
	enqueueOne(t, s, p, "other@1", 0)
	try("other@1", tick, TickIDTaken)
	try("other@1", tick, TickDoneBefore)
	if c := counts(t, s, p); c.Delayed != 1 || c.Ready != 1 {
		t.Fatalf("counts %+v, want s@3 delayed and other@1 ready", c)
	}
}

func TestTickReplayAnswersTheFirstOutcome(t *testing.T) {
	t.Parallel()
	s, p := newTestStore(t)
	ctx := testCtx(t)
	j := tickJob("s@1", 4_000_000_000_000)
	call := write(p, NewCallID(), "s", j.RunAtMs, j.ID, "0", recordHead(j), recordTail(j), 0)
	call.extra = append(call.extra, p.Ticks())
	first, err := s.run(ctx, tickScript, call).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	s.SetClockOffset(2000)
	again, err := s.run(ctx, tickScript, call).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" || first[0] != int64(TickAdded) {
		t.Fatalf("first %v, replay %v; want the replay to answer the first, added", first, again)
	}
}

func TestScheduleState(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := testCtx(t)
	st, created, err := s.PutSchedule(ctx, "daily", []byte(`{"v":1}`), "t", 3000)
	if err != nil || !created || st.CreatedMs == 0 || st.CursorMs != st.CreatedMs || st.LastTickMs != 0 || st.Paused {
		t.Fatalf("PutSchedule: %+v, created %v, %v", st, created, err)
	}
	s.SetClockOffset(5000)
	again, created, err := s.PutSchedule(ctx, "daily", []byte(`{"v":2}`), "t", 3000)
	if err != nil || created || again.CreatedMs != st.CreatedMs || again.CursorMs != again.UpdatedMs || string(again.Def) != `{"v":2}` || again.UpdatedMs < st.CreatedMs+5000 {
		t.Fatalf("a second put: %+v, created %v, %v; want the definition replaced, the cursor moved to now, the rest kept", again, created, err)
	}

	// The cursor and the last tick only grow, and only for the schedule the caller read.
	advance := func(created, cursor, last int64, want bool) {
		t.Helper()
		a := Advance{CreatedMs: created, CursorMs: cursor, LastMs: last}
		if ok, _, err := s.AdvanceSchedule(ctx, "daily", a); err != nil || ok != want {
			t.Fatalf("AdvanceSchedule(%d, %d, %d): %v, %v; want %v", created, cursor, last, ok, err, want)
		}
	}
	c := st.CreatedMs
	advance(c, c+60_000, c+60_000, true)
	advance(c, c+30_000, 0, true)
	advance(c+1, c+90_000, c+90_000, false)
	if got, _ := s.Schedule(ctx, "daily"); got.CursorMs != c+60_000 || got.LastTickMs != c+60_000 {
		t.Fatalf("after advances: %+v", got)
	}

	// Resuming passes over the ticks of the pause: the cursor moves to now.
	if p, err := s.PauseSchedule(ctx, "daily", true, 0); err != nil || !p.Paused {
		t.Fatalf("pause: %+v, %v", p, err)
	}
	s.SetClockOffset(3_600_000)
	r, err := s.PauseSchedule(ctx, "daily", false, 3000)
	if err != nil || r.Paused || r.CursorMs != r.NowMs || r.LastTickMs != c+60_000 {
		t.Fatalf("resume: %+v, %v; want the cursor at now", r, err)
	}
	if r2, _ := s.PauseSchedule(ctx, "daily", false, 3000); r2.CursorMs != r.CursorMs {
		t.Fatalf("resuming a running schedule moved its cursor: %+v", r2)
	}

	if _, _, err := s.PutSchedule(ctx, "weekly", []byte(`{}`), "t", 3000); err != nil {
		t.Fatal(err)
	}
	names, err := s.ScheduleNames(ctx)
	if err != nil || !cmp.Equal(slices.Sorted(slices.Values(names)), []string{"daily", "weekly"}) {
		t.Fatalf("ScheduleNames: %v, %v", names, err)
	}
	if err := s.DeleteSchedule(ctx, "daily"); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"get":    func() error { _, err := s.Schedule(ctx, "daily"); return err }(),
		"pause":  func() error { _, err := s.PauseSchedule(ctx, "daily", true, 0); return err }(),
		"delete": s.DeleteSchedule(ctx, "daily"),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s after delete: %v, want ErrNotFound", name, err)
		}
	}
	if ok, _, _ := s.AdvanceSchedule(ctx, "daily", Advance{CreatedMs: c, CursorMs: c + 120_000}); ok {
		t.Errorf("a deleted schedule advanced")
	}
	all, err := s.Schedules(ctx, []string{"daily", "weekly"})
	if err != nil || all[0] != nil || all[1] == nil || string(all[1].Def) != `{}` {
		t.Fatalf("Schedules: %v, %v", all, err)
	}
}

func TestScheduleReplaysAnswerTheFirstOutcome(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := testCtx(t)
	put := s.scheduleWrite("daily", "def", "t", 3000)
	first, err := s.run(ctx, schedulePutScript, put).Slice()
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.run(ctx, schedulePutScript, put).Slice()
	if err != nil || toInt(again[0]) != 1 || !cmp.Equal(first, again) {
		t.Fatalf("put: first %v, replay %v (%v); want the replay to answer created", first, again, err)
	}
	del := s.scheduleWrite("daily")
	for i := range 2 {
		if n, err := s.run(ctx, scheduleDeleteScript, del).Int64(); err != nil || n != 1 {
			t.Fatalf("delete, run %d: %d, %v; want 1", i+1, n, err)
		}
	}
}

// A look raises the schedule's horizon to the time it read it plus its look-ahead; a delete
// keeps the latest of the horizon, the cursor and the last tick as a floor, which a schedule
// put again under the name starts after, whatever its topic, with a later identity. The floor
// is gone once the clock has passed it.
func TestDeletedScheduleLeavesAFloorUntilItsLooksEnd(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := testCtx(t)
	old, _, err := s.PutSchedule(ctx, "s", []byte(`{"v":1}`), "a", 3000)
	if err != nil {
		t.Fatal(err)
	}
	looked, err := s.LookSchedules(ctx, []string{"s"}, 10_000)
	if err != nil || looked[0] == nil {
		t.Fatalf("LookSchedules: %v, %v", looked, err)
	}
	horizon := looked[0].NowMs + 10_000
	if err := s.DeleteSchedule(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"get":    func() error { _, err := s.Schedule(ctx, "s"); return err }(),
		"pause":  func() error { _, err := s.PauseSchedule(ctx, "s", true, 0); return err }(),
		"delete": s.DeleteSchedule(ctx, "s"),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s of a deleted schedule: %v, want ErrNotFound", name, err)
		}
	}
	if got, err := s.LookSchedules(ctx, []string{"s"}, 3000); err != nil || got[0] != nil {
		t.Errorf("a look at a deleted schedule: %v, %v; want none", got, err)
	}

	again, created, err := s.PutSchedule(ctx, "s", []byte(`{"v":2}`), "b", 3000)
	if err != nil || !created {
		t.Fatalf("put again: %v, created %v", err, created)
	}
	if again.CursorMs != horizon || again.FloorMs != horizon || again.CreatedMs <= old.CreatedMs || again.LastTickMs != 0 {
		t.Fatalf("put again: %+v; want the cursor at the deleted one's horizon %d and created after %d", again, horizon, old.CreatedMs)
	}
	if ttl, err := s.rdb.PTTL(ctx, s.schedule("s").State()).Result(); err != nil || ttl != -1 {
		t.Fatalf("the schedule put again expires in %v (%v); want never", ttl, err)
	}
	if ok, _, _ := s.AdvanceSchedule(ctx, "s", Advance{CreatedMs: old.CreatedMs, CursorMs: horizon + 60_000}); ok {
		t.Errorf("a look at the deleted schedule advanced the one put again")
	}

	// Deleted again, the floor lasts until the clock passes it, and not after.
	if err := s.DeleteSchedule(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	ttl, err := s.rdb.PTTL(ctx, s.schedule("s").State()).Result()
	if err != nil || ttl <= 0 || ttl > 10*time.Second+time.Millisecond {
		t.Fatalf("the tombstone expires in %v (%v); want by the floor, the cursor of the put", ttl, err)
	}
	s.SetClockOffset(60_000)
	third, _, err := s.PutSchedule(ctx, "s", []byte(`{"v":3}`), "b", 3000)
	if err != nil || third.CursorMs != third.NowMs || third.FloorMs != 0 {
		t.Fatalf("put long after the floor: %+v, %v; want the cursor at now", third, err)
	}
}

// A replace that moves a schedule to another topic moves its cursor to its horizon: the looks
// under way enqueue their ticks in the old topic. A replace in the same topic leaves it to the
// partitions' marks.
func TestReplaceInAnotherTopicStartsAfterTheHorizon(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := testCtx(t)
	if _, _, err := s.PutSchedule(ctx, "s", []byte(`{}`), "a", 3000); err != nil {
		t.Fatal(err)
	}
	looked, err := s.LookSchedules(ctx, []string{"s"}, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	horizon := looked[0].NowMs + 10_000
	same, _, err := s.PutSchedule(ctx, "s", []byte(`{}`), "a", 3000)
	if err != nil || same.CursorMs >= horizon {
		t.Fatalf("replace in the same topic: %+v, %v; want the cursor before the horizon %d", same, err, horizon)
	}
	moved, _, err := s.PutSchedule(ctx, "s", []byte(`{}`), "b", 3000)
	if err != nil || moved.CursorMs != horizon {
		t.Fatalf("replace in another topic: %+v, %v; want the cursor at the horizon %d", moved, err, horizon)
	}
}

// Ticks found with their id taken are counted once per call, replays included, and only for
// the schedule the look read.
func TestAdvanceCountsSkippedTicks(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t)
	ctx := testCtx(t)
	st, _, err := s.PutSchedule(ctx, "s", []byte(`{}`), "t", 3000)
	if err != nil {
		t.Fatal(err)
	}
	a := Advance{CreatedMs: st.CreatedMs, CursorMs: st.CursorMs + 1000, Skipped: 2}
	call := s.scheduleWrite("s", a.CreatedMs, a.CursorMs, "", a.Skipped)
	for i := range 2 {
		vals, err := s.run(ctx, scheduleAdvanceScript, call).Int64Slice()
		if err != nil || !cmp.Equal(vals, []int64{1, 0}) {
			t.Fatalf("advance, run %d: %v, %v; want [1 0]", i+1, vals, err)
		}
	}
	ok, before, err := s.AdvanceSchedule(ctx, "s", Advance{CreatedMs: st.CreatedMs, CursorMs: st.CursorMs, Skipped: 1})
	if err != nil || !ok || before != 2 {
		t.Fatalf("a second advance: %v, %d, %v; want ok, 2 counted before", ok, before, err)
	}
	if ok, _, _ := s.AdvanceSchedule(ctx, "s", Advance{CreatedMs: st.CreatedMs + 1, CursorMs: st.CursorMs, Skipped: 5}); ok {
		t.Fatal("an advance of another schedule of the name counted")
	}
	if got, err := s.Schedule(ctx, "s"); err != nil || got.SkippedTicks != 3 {
		t.Fatalf("Schedule: %+v, %v; want 3 skipped ticks", got, err)
	}
}
