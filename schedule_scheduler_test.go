package delayq

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// Two Schedulers on one Redis race for the ticks of an @every 1s schedule for ten seconds; one
// of them is stopped abruptly half-way, its connections cut. Every tick gives one job, handed out
// once, enqueued ahead of its time.
func TestTwoSchedulersGiveOneJobPerTick(t *testing.T) {
	t.Parallel()
	srv := redistest.Standalone(t)
	opt := &redis.Options{Addr: srv.Addr}
	rdbA := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdbA.Close() })
	a, b, w := newClientOn(t, rdbA, Config{}), newClientOn(t, srv.Client(t), Config{}), newClientOn(t, srv.Client(t), Config{})
	var got deliveries
	startWorker(t, w, WorkerConfig{Concurrency: 4}, map[string]Handler{"ticks": got.handle})
	sch := mustPutSchedule(t, a, "every-second", ScheduleSpec{Cron: "@every 1s", Topic: "ticks"})
	cfg := SchedulerConfig{Interval: 50 * time.Millisecond, Lookahead: time.Second}
	stopA := startScheduler(t, a, cfg)
	startScheduler(t, b, cfg)

	ticks := ticksAfter(sch.CreatedAt, time.Second, 10)
	testwait.For(t, 20*time.Second, "the fifth tick's job", func() bool { return got.byID()[TickID("every-second", ticks[4])] > 0 })
	stopA()
	_ = rdbA.Close()
	testwait.For(t, 20*time.Second, "the tenth tick's job", func() bool { return got.byID()[TickID("every-second", ticks[9])] > 0 })

	counts := got.byID()
	for _, tk := range ticks {
		if n := counts[TickID("every-second", tk)]; n != 1 {
			t.Errorf("tick %v was handed out %d times, want once", tk, n)
		}
	}
	var late time.Duration
	got.mu.Lock()
	defer got.mu.Unlock()
	for _, j := range got.jobs {
		if counts[j.ID] > 1 {
			t.Errorf("job %s was handed out %d times", j.ID, counts[j.ID])
		}
		if !j.CreatedAt.Before(j.RunAt) {
			t.Errorf("job %s was enqueued at %v, not ahead of its tick %v", j.ID, j.CreatedAt, j.RunAt)
		}
		late = max(late, j.Lateness())
	}
	t.Logf("%d jobs for the ticks of %v; the latest was handed out %v after its tick", len(got.jobs), ticks[9].Sub(ticks[0])+time.Second, late)
}

// A Scheduler that stalls between reading a schedule and enqueueing its ticks (a process
// stopped for a minute) enqueues nothing when it goes on: the schedule was paused meanwhile,
// and its look is older than the look-ahead.
func TestStalledLookEnqueuesNothingAfterAPause(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustPutSchedule(t, c, "s", ScheduleSpec{Cron: "@every 1s", Topic: "t"})
	advance(c, 10*time.Second)
	st, err := c.store.Schedule(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	_, comp, err := c.loadSchedule("s", st)
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.Stats(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PauseSchedule(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	advance(c, time.Minute)
	last, err := c.enqueueTicks(ctx, "s", st, comp, defaultLookahead)
	if !last.IsZero() {
		t.Errorf("the stalled look enqueued ticks up to %v (%v), after the pause", last, err)
	}
	if after, _ := c.Stats(ctx, "t"); after.Ready+after.Delayed != before.Ready+before.Delayed {
		t.Errorf("counts %+v after the stalled look, %+v before", after, before)
	}
}

// BenchmarkSchedulerLook is one look of a Scheduler at 1,000 schedules with nothing due: the
// cost every server pays each second when idle.
func BenchmarkSchedulerLook(b *testing.B) {
	c, _ := newTestClient(b, Config{})
	ctx := testContext(b)
	crons := []string{"@hourly", "0 0 29 2 *", "@every 1h", "*/5 * * * *"}
	zones := []string{"Europe/Berlin", "Australia/Lord_Howe", "Asia/Kathmandu", ""}
	for i := range 1000 {
		spec := ScheduleSpec{Cron: crons[i%len(crons)], TimeZone: zones[i%len(zones)], Topic: "t"}
		if _, _, err := c.PutSchedule(ctx, fmt.Sprint("s", i), spec); err != nil {
			b.Fatal(err)
		}
	}
	s, err := NewScheduler(c, SchedulerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	s.look(ctx)
	b.ResetTimer()
	for range b.N {
		s.look(ctx)
	}
}

// A look that read a schedule just before it was deleted and put again in another topic, or
// replaced by one in another topic, enqueues its ticks afterwards: those ticks are the old
// definition's, and the new one does not enqueue them again.
func TestStaleLookDoesNotDoubleTheTicksOfAMovedSchedule(t *testing.T) {
	t.Parallel()
	for name, move := range map[string]func(ctx context.Context, c *Client) error{
		"deleted and put again": func(ctx context.Context, c *Client) error {
			if err := c.DeleteSchedule(ctx, "s"); err != nil {
				return err
			}
			_, _, err := c.PutSchedule(ctx, "s", ScheduleSpec{Cron: "@every 1s", Topic: "b"})
			return err
		},
		"replaced": func(ctx context.Context, c *Client) error {
			_, _, err := c.PutSchedule(ctx, "s", ScheduleSpec{Cron: "@every 1s", Topic: "b"})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, Config{})
			ctx := testContext(t)
			first := mustPutSchedule(t, c, "s", ScheduleSpec{Cron: "@every 1s", Topic: "a"})
			advance(c, 10*time.Second)
			states, err := c.store.LookSchedules(ctx, []string{"s"}, defaultLookahead.Milliseconds())
			if err != nil || states[0] == nil {
				t.Fatalf("LookSchedules: %v, %v", states, err)
			}
			_, comp, err := c.readSchedule("s", *states[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := move(ctx, c); err != nil {
				t.Fatal(err)
			}
			stale, err := c.enqueueTicks(ctx, "s", *states[0], comp, defaultLookahead)
			if err != nil || stale.IsZero() {
				t.Fatalf("the stale look: %v, %v; want its ticks enqueued", stale, err)
			}
			moved, err := c.GetSchedule(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			// A schedule put again does not list the deleted one's ticks among its next runs.
			if moved.CreatedAt.After(first.CreatedAt) && !moved.NextRuns[0].After(stale) {
				t.Errorf("the next run %v is not after the stale look's last tick %v", moved.NextRuns[0], stale)
			}
			look(t, c)
			end := time.UnixMilli(states[0].NowMs).Add(2 * defaultLookahead)
			for tk := ticksAfter(first.CreatedAt, time.Second, 1)[0]; tk.Before(end); tk = tk.Add(time.Second) {
				if n := jobsOfTick(t, c, "s", tk, "a", "b"); n > 1 {
					t.Errorf("tick %v has %d jobs, want at most 1", tk, n)
				}
			}
		})
	}
}

// A tick whose id another job holds already enqueues nothing and leaves that job as it is; the
// schedule counts such ticks, and the first one is logged, once for the schedule.
func TestTickWithItsIDTakenIsCountedAndLoggedOnce(t *testing.T) {
	t.Parallel()
	var logs testwait.Buffer
	c, _ := newTestClient(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := testContext(t)
	start := time.Now().Truncate(time.Second).Add(time.Minute)
	for _, tk := range []time.Time{start, start.Add(time.Second), start.Add(5 * time.Second)} {
		mustEnqueue(t, c, "t", Spec{ID: TickID("s", tk), Body: []byte("mine"), RunAt: tk})
	}
	mustPutSchedule(t, c, "s", ScheduleSpec{Cron: "@every 1s", Topic: "t", StartAt: start})
	// Half a second past start, so that each look's edge falls between two ticks: the clock
	// offset is whole milliseconds, and an edge at a tick's instant could take it or not.
	advance(c, time.Until(start)+500*time.Millisecond)
	look(t, c) // the ticks at start, +1s, +2s and +3s: the first two are taken
	advance(c, 3*time.Second)
	look(t, c) // +4s to +6s: +5s is taken

	got, err := c.GetSchedule(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if got.SkippedTicks != 3 || !got.LastTick.Equal(start.Add(6*time.Second)) {
		t.Errorf("SkippedTicks %d, LastTick %v; want 3 and %v", got.SkippedTicks, got.LastTick, start.Add(6*time.Second))
	}
	for _, tk := range []time.Time{start, start.Add(time.Second), start.Add(5 * time.Second)} {
		if j, err := c.Get(ctx, "t", TickID("s", tk)); err != nil || string(j.Body) != "mine" {
			t.Errorf("the job holding tick %v's id: %+v, %v; want it as it was", tk, j, err)
		}
	}
	if n := strings.Count(logs.String(), "tick was skipped"); n != 1 {
		t.Errorf("%d log lines of skipped ticks, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), TickID("s", start)) {
		t.Errorf("the log does not name the first skipped tick %s:\n%s", TickID("s", start), logs.String())
	}
}
