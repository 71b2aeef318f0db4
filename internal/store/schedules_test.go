package store

import (
	"errors"
	"slices"
	"strings"
	"testing"

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
	call.keys = append(call.keys, p.Ticks())
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
	st, created, err := s.PutSchedule(ctx, "daily", []byte(`{"v":1}`))
	if err != nil || !created || st.CreatedMs == 0 || st.CursorMs != st.CreatedMs || st.LastTickMs != 0 || st.Paused {
		t.Fatalf("PutSchedule: %+v, created %v, %v", st, created, err)
	}
	s.SetClockOffset(5000)
	again, created, err := s.PutSchedule(ctx, "daily", []byte(`{"v":2}`))
	if err != nil || created || again.CreatedMs != st.CreatedMs || again.CursorMs != again.UpdatedMs || string(again.Def) != `{"v":2}` || again.UpdatedMs < st.CreatedMs+5000 {
		t.Fatalf("a second put: %+v, created %v, %v; want the definition replaced, the cursor moved to now, the rest kept", again, created, err)
	}

	// The cursor and the last tick only grow, and only for the schedule the caller read.
	advance := func(created, cursor, last int64, want bool) {
		t.Helper()
		if ok, err := s.AdvanceSchedule(ctx, "daily", created, cursor, last); err != nil || ok != want {
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
	if p, err := s.PauseSchedule(ctx, "daily", true); err != nil || !p.Paused {
		t.Fatalf("pause: %+v, %v", p, err)
	}
	s.SetClockOffset(3_600_000)
	r, err := s.PauseSchedule(ctx, "daily", false)
	if err != nil || r.Paused || r.CursorMs != r.NowMs || r.LastTickMs != c+60_000 {
		t.Fatalf("resume: %+v, %v; want the cursor at now", r, err)
	}
	if r2, _ := s.PauseSchedule(ctx, "daily", false); r2.CursorMs != r.CursorMs {
		t.Fatalf("resuming a running schedule moved its cursor: %+v", r2)
	}

	if _, _, err := s.PutSchedule(ctx, "weekly", []byte(`{}`)); err != nil {
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
		"pause":  func() error { _, err := s.PauseSchedule(ctx, "daily", true); return err }(),
		"delete": s.DeleteSchedule(ctx, "daily"),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s after delete: %v, want ErrNotFound", name, err)
		}
	}
	if ok, _ := s.AdvanceSchedule(ctx, "daily", c, c+120_000, 0); ok {
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
	put := s.scheduleWrite("daily", "def")
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
