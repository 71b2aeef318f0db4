package delayq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// deliveries records the jobs a Worker handed out.
type deliveries struct {
	mu   sync.Mutex
	jobs []*Job
}

func (d *deliveries) handle(_ context.Context, j *Job) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.jobs = append(d.jobs, j)
	return nil
}

// byID returns how often each id was delivered.
func (d *deliveries) byID() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for _, j := range d.jobs {
		out[j.ID]++
	}
	return out
}

// A schedule's job template keeps its snooze limit, and its ticks' jobs have it.
func TestScheduleKeepsMaxSnoozes(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustPutSchedule(t, c, "snoozy", ScheduleSpec{Cron: "@every 1s", Topic: "t", Job: Spec{MaxSnoozes: 3}})
	got, err := c.GetSchedule(ctx, "snoozy")
	if err != nil || got.Spec.Job.MaxSnoozes != 3 {
		t.Fatalf("stored template: %+v, %v; want MaxSnoozes 3", got, err)
	}
	look(t, c) // enqueues the ticks within the look-ahead
	tk := got.NextRuns[0]
	j, err := c.Get(ctx, "t", TickID("snoozy", tk))
	if err != nil || j.MaxSnoozes != 3 {
		t.Fatalf("the job of the tick at %v: %+v, %v; want MaxSnoozes 3", tk, j, err)
	}
}

func TestScheduleLifecycle(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	spec := ScheduleSpec{Cron: "0 9 * * *", TimeZone: "Europe/Berlin", Topic: "reports",
		Job: Spec{Body: []byte(`{"kind":"daily"}`), Format: FormatJSON, TTR: time.Minute, Priority: 7}}
	sch, created, err := c.PutSchedule(ctx, "daily", spec)
	if err != nil || !created {
		t.Fatalf("PutSchedule: %v, created %v", err, created)
	}
	if len(sch.NextRuns) != nextRunsShown || !sch.LastTick.IsZero() || sch.Paused {
		t.Fatalf("a new schedule: %+v", sch)
	}
	for i, r := range sch.NextRuns {
		if r.In(mustLoad(t, "Europe/Berlin")).Hour() != 9 || (i > 0 && !r.After(sch.NextRuns[i-1])) {
			t.Fatalf("next runs %v are not 09:00 in Berlin, one a day", sch.NextRuns)
		}
	}
	got, err := c.GetSchedule(ctx, "daily")
	if err != nil {
		t.Fatal(err)
	}
	want := spec
	want.Missed, want.Job.MaxRetries = MissedLatest, DefaultMaxRetries
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Fatalf("stored spec (-want +got):\n%s", diff)
	}

	spec.Cron, spec.Missed = "@every 1h", MissedSkip
	if sch, created, err = c.PutSchedule(ctx, "daily", spec); err != nil || created || sch.Spec.Cron != "@every 1h" || !sch.CreatedAt.Equal(got.CreatedAt) {
		t.Fatalf("replacing: %+v, created %v, %v", sch, created, err)
	}
	mustPutSchedule(t, c, "another", ScheduleSpec{Cron: "@hourly", Topic: "t"})
	list, err := c.Schedules(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "another" || list[1].Name != "daily" {
		t.Fatalf("Schedules: %v, %v", list, err)
	}
	if names, err := c.ScheduleNames(ctx); err != nil || !slices.Equal(names, []string{"another", "daily"}) {
		t.Fatalf("ScheduleNames: %v, %v", names, err)
	}
	if part, err := c.SchedulesNamed(ctx, []string{"daily", "gone"}); err != nil || len(part) != 1 || part[0].Name != "daily" {
		t.Fatalf("SchedulesNamed(daily, gone): %v, %v; want daily alone", part, err)
	}
	if _, err := c.SchedulesNamed(ctx, []string{"no/such"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SchedulesNamed of an invalid name: %v, want ErrInvalid", err)
	}

	if p, err := c.PauseSchedule(ctx, "daily"); err != nil || !p.Paused || len(p.NextRuns) != 0 {
		t.Fatalf("PauseSchedule: %+v, %v; want paused with no next runs", p, err)
	}
	if r, err := c.ResumeSchedule(ctx, "daily"); err != nil || r.Paused || len(r.NextRuns) != nextRunsShown {
		t.Fatalf("ResumeSchedule: %+v, %v", r, err)
	}
	if err := c.DeleteSchedule(ctx, "daily"); err != nil {
		t.Fatal(err)
	}
	for op, err := range map[string]error{
		"get":    func() error { _, err := c.GetSchedule(ctx, "daily"); return err }(),
		"pause":  func() error { _, err := c.PauseSchedule(ctx, "daily"); return err }(),
		"resume": func() error { _, err := c.ResumeSchedule(ctx, "daily"); return err }(),
		"delete": c.DeleteSchedule(ctx, "daily"),
	} {
		var nf *NotFoundError
		if !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) || nf.Message() != `schedule "daily" not found` {
			t.Errorf("%s of a deleted schedule: %v, want a NotFoundError naming it", op, err)
		}
	}
	if _, _, err := c.PutSchedule(ctx, "bad name", spec); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bad name: %v", err)
	}
	spec.Cron = "@every 500ms"
	if _, _, err := c.PutSchedule(ctx, "fast", spec); !errors.Is(err, ErrInvalid) {
		t.Errorf("an interval under 1s: %v", err)
	}
}

func mustLoad(t *testing.T, tz string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// PutSchedule enqueues the ticks due within the next few seconds itself, so the first tick is
// on time without waiting for a Scheduler's look.
func TestPutScheduleEnqueuesTheFirstTicks(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	sch := mustPutSchedule(t, c, "fast", ScheduleSpec{Cron: "@every 1s", Topic: "ticks", Job: Spec{Body: []byte("b")}})
	ticks := ticksAfter(sch.CreatedAt, time.Second, 3)
	for _, tk := range ticks[:2] {
		j, err := c.Get(ctx, "ticks", TickID("fast", tk))
		if err != nil || !j.RunAt.Equal(tk) || string(j.Body) != "b" {
			t.Fatalf("the job of tick %v: %+v, %v", tk, j, err)
		}
	}
	if sch.LastTick.Before(ticks[1]) {
		t.Fatalf("LastTick %v, want at least %v", sch.LastTick, ticks[1])
	}
}

// Ticks that passed while no Scheduler ran (the clock moves an hour on): the latest policy
// enqueues the last of them, due at once, and skip none; neither enqueues any again.
func TestMissedTicks(t *testing.T) {
	t.Parallel()
	for _, policy := range []MissedPolicy{MissedLatest, MissedSkip} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, Config{})
			ctx := testContext(t)
			sch := mustPutSchedule(t, c, "s", ScheduleSpec{Cron: "@every 10s", Topic: "t", Missed: policy})
			advance(c, time.Hour)
			look(t, c)
			look(t, c)
			st, err := c.Stats(ctx, "t")
			if errors.Is(err, ErrNotFound) {
				st, err = &TopicStats{}, nil // no job made the topic
			}
			if err != nil {
				t.Fatal(err)
			}
			// An hour and a few seconds later: tick 360 is the last to have passed by the
			// Redis server's clock, and tick 361 is more than the look-ahead away.
			lastMissed := ticksAfter(sch.CreatedAt, 10*time.Second, 360)[359]
			_, err = c.Get(ctx, "t", TickID("s", lastMissed))
			switch {
			case policy == MissedLatest && (err != nil || st.Ready != 1 || st.Delayed != 0):
				t.Fatalf("latest: tick %v: %v; counts %+v; want it alone, ready", lastMissed, err, st)
			case policy == MissedSkip && st.Ready+st.Delayed != 0:
				t.Fatalf("skip: counts %+v, want no job", st)
			}
			got, err := c.GetSchedule(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if wantLast := map[MissedPolicy]time.Time{MissedLatest: lastMissed}[policy]; !got.LastTick.Equal(wantLast) {
				t.Fatalf("LastTick %v, want %v", got.LastTick, wantLast)
			}
		})
	}
}

// A paused schedule enqueues nothing; resumed, it goes on from now, passing over the ticks of
// the pause.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	sch := mustPutSchedule(t, c, "s", ScheduleSpec{Cron: "@every 1s", Topic: "t"})
	if _, err := c.PauseSchedule(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Stats(ctx, "t")
	advance(c, time.Minute)
	look(t, c)
	if st, _ := c.Stats(ctx, "t"); st.Ready+st.Delayed != before.Ready+before.Delayed {
		t.Fatalf("a paused schedule enqueued ticks: %+v, before %+v", st, before)
	}
	r, err := c.ResumeSchedule(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	// The ticks a look finds due after the resume are those from now on; none of the pause's.
	ticks := ticksAfter(sch.CreatedAt, time.Second, 70)
	for _, tk := range ticks {
		_, err := c.Get(ctx, "t", TickID("s", tk))
		enqueued := err == nil
		fromPutOrResume := !tk.After(sch.LastTick) || (tk.After(r.NextRuns[0].Add(-time.Second)) && !tk.After(r.LastTick))
		if enqueued != fromPutOrResume {
			t.Errorf("tick %v: enqueued %v, want %v (put enqueued up to %v; resumed at %v up to %v)", tk, enqueued, fromPutOrResume, sch.LastTick, r.NextRuns[0], r.LastTick)
		}
	}
	if r.LastTick.Before(r.NextRuns[0]) {
		t.Fatalf("resume enqueued no tick: %+v", r)
	}
}

// A replaced schedule keeps the jobs enqueued already and makes the next ones from the new
// definition.
func TestReplaceAppliesFromTheNextTick(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	first := mustPutSchedule(t, c, "s", ScheduleSpec{Cron: "@every 1s", Topic: "t", Job: Spec{Body: []byte("old")}})
	mustPutSchedule(t, c, "s", ScheduleSpec{Cron: "@every 1s", Topic: "t", Job: Spec{Body: []byte("new")}})
	advance(c, 10*time.Second)
	look(t, c)
	for _, tk := range ticksAfter(first.CreatedAt, time.Second, 12) {
		j, err := c.Get(ctx, "t", TickID("s", tk))
		want := "new"
		if !tk.After(first.LastTick) {
			want = "old"
		}
		if tk.Before(first.CreatedAt.Add(10*time.Second)) && tk.After(first.LastTick) {
			continue // passed while no Scheduler ran: only the latest of them is enqueued
		}
		if err != nil || string(j.Body) != want {
			t.Errorf("tick %v: %v, %v; want body %q", tk, j, err, want)
		}
	}
}

// On a Cluster, each schedule's state lives in its own slot and its ticks' jobs in their
// partitions: schedules run there as anywhere.
func TestSchedulesOnCluster(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewCluster(t, 3, 0).Client(t)
	a, b := newClientOn(t, rdb, Config{}), newClientOn(t, rdb, Config{})
	var got deliveries
	startWorker(t, b, WorkerConfig{Concurrency: 4}, map[string]Handler{"ticks": got.handle})
	for i := range 3 {
		mustPutSchedule(t, a, fmt.Sprint("s", i), ScheduleSpec{Cron: "@every 1s", Topic: "ticks"})
	}
	cfg := SchedulerConfig{Interval: 100 * time.Millisecond, Lookahead: time.Second}
	startScheduler(t, a, cfg)
	startScheduler(t, b, cfg)
	list, err := b.Schedules(testContext(t))
	if err != nil || len(list) != 3 {
		t.Fatalf("Schedules: %v, %v", list, err)
	}
	var ticks []string
	for _, s := range list {
		for _, tk := range ticksAfter(s.CreatedAt, time.Second, 3) {
			ticks = append(ticks, TickID(s.Name, tk))
		}
	}
	testwait.For(t, 20*time.Second, "three ticks of each schedule", func() bool {
		counts := got.byID()
		for _, id := range ticks {
			if counts[id] == 0 {
				return false
			}
		}
		return true
	})
	for id, n := range got.byID() {
		if n != 1 {
			t.Errorf("job %s was handed out %d times", id, n)
		}
	}
}

// A schedule replaced by one that ticks more often, while Schedulers ran all along, starts
// ticking after the replace: the new definition's ticks before it did not pass unseen, so none
// is enqueued as missed.
func TestReplaceEnqueuesNoTickOfThePast(t *testing.T) {
	t.Parallel()
	for _, policy := range []MissedPolicy{MissedLatest, MissedSkip} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, Config{})
			ctx := testContext(t)
			mustPutSchedule(t, c, "s", ScheduleSpec{Cron: "0 0 1 1 *", Topic: "t", Missed: policy, StartAt: time.Now().AddDate(1, 0, 0)})
			advance(c, 10*time.Minute)
			look(t, c) // a Scheduler looks: no tick is due
			mustPutSchedule(t, c, "s", ScheduleSpec{Cron: "* * * * *", Topic: "t", Missed: policy})
			look(t, c)
			got, err := c.GetSchedule(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			// A tick after the replace may be due within the look-ahead already.
			if !got.LastTick.IsZero() && !got.LastTick.After(got.UpdatedAt) {
				t.Errorf("the tick %v was enqueued, before the replace at %v", got.LastTick, got.UpdatedAt)
			}
		})
	}
}

// A schedule deleted while two Schedulers run, and put again at once under its name, in its
// topic or another one with its own partition count: each tick gives one job. The ticks the
// deleted schedule enqueued ahead (or a look of it under way still may) stay its own, and the
// new one ticks after them.
func TestScheduleDeletedAndPutAgainGivesOneJobPerTick(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		topic      string
		partitions int
	}{
		{"same topic", "a", 4},
		{"another topic", "b", 4},
		{"another topic with another partition count", "b", 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			changeWhileSchedulersRun(t, c.partitions, func(ctx context.Context, a, again *Client) *Schedule {
				if err := a.DeleteSchedule(ctx, "s"); err != nil {
					t.Fatal(err)
				}
				return mustPutSchedule(t, again, "s", ScheduleSpec{Cron: "@every 1s", Topic: c.topic})
			})
		})
	}
}

// changeWhileSchedulersRun puts schedule "s", @every 1s in topic "a" with 4 partitions, lets
// two Schedulers enqueue its ticks, changes it with change (again is a Client whose new topics
// get partitions partitions), lets them go on for five seconds, and checks that every tick has
// one job in topic "a" or "b".
func changeWhileSchedulersRun(t *testing.T, partitions int, change func(ctx context.Context, a, again *Client) *Schedule) {
	t.Helper()
	srv := redistest.Standalone(t)
	a, b := newClientOn(t, srv.Client(t), Config{Partitions: 4}), newClientOn(t, srv.Client(t), Config{Partitions: 4})
	again := newClientOn(t, srv.Client(t), Config{Partitions: partitions})
	ctx := testContext(t)
	first := mustPutSchedule(t, a, "s", ScheduleSpec{Cron: "@every 1s", Topic: "a"})
	cfg := SchedulerConfig{Interval: 50 * time.Millisecond}
	stopA, stopB := startScheduler(t, a, cfg), startScheduler(t, b, cfg)
	testwait.For(t, 20*time.Second, "the schedule's ticks enqueued ahead", func() bool {
		s, err := a.GetSchedule(ctx, "s")
		return err == nil && s.LastTick.After(first.CreatedAt.Add(4*time.Second))
	})
	changed := change(ctx, a, again)
	testwait.For(t, 20*time.Second, "the changed schedule's ticks", func() bool {
		s, err := a.GetSchedule(ctx, "s")
		return err == nil && s.LastTick.After(changed.UpdatedAt.Add(5*time.Second))
	})
	stopA()
	stopB()
	last, err := a.GetSchedule(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for tk := ticksAfter(first.CreatedAt, time.Second, 1)[0]; !tk.After(last.LastTick); tk = tk.Add(time.Second) {
		if n := jobsOfTick(t, a, "s", tk, "a", "b"); n != 1 {
			t.Errorf("tick %v has %d jobs, want 1", tk, n)
		}
	}
}
