package delayq

import (
	"context"
	"log/slog"
	"time"
)

// SchedulerConfig configures a Scheduler. Zero fields take the defaults.
type SchedulerConfig struct {
	// Interval is how often the Scheduler looks at every schedule. Defaults to 1s.
	Interval time.Duration
	// Lookahead is how long before its time a tick's job is enqueued. The job is an ordinary
	// delayed job, so it is handed out on time to the millisecond as long as some Scheduler
	// looked within Lookahead before the tick: a longer one rides out longer stalls, a shorter
	// one makes a pause or a change take effect sooner (ticks enqueued already stay). Must be
	// longer than Interval. Defaults to 3s.
	Lookahead time.Duration
	// Logger receives failures. Defaults to the Client's.
	Logger *slog.Logger
}

// Scheduler enqueues the jobs of every schedule's ticks. Run one in each process that should
// keep schedules going (delayq server runs one): however many run on one Redis, each tick gives
// one job, with no leader among them, and while any one runs no tick is missed.
type Scheduler struct {
	c   *Client
	cfg SchedulerConfig
	log *slog.Logger
}

// lookBatch bounds how many schedules one round trip reads.
const lookBatch = 500

// NewScheduler returns a Scheduler of the schedules c sees; Run sets it going.
func NewScheduler(c *Client, cfg SchedulerConfig) (*Scheduler, error) {
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.Lookahead == 0 {
		cfg.Lookahead = max(defaultLookahead, 2*cfg.Interval)
	}
	if cfg.Interval < 0 {
		return nil, invalid("interval", "%v must not be negative", cfg.Interval)
	}
	if cfg.Lookahead <= cfg.Interval {
		return nil, invalid("lookahead", "%v is not longer than the interval %v: ticks would be enqueued late", cfg.Lookahead, cfg.Interval)
	}
	if cfg.Logger == nil {
		cfg.Logger = c.log
	}
	return &Scheduler{c: c, cfg: cfg, log: cfg.Logger}, nil
}

// Run looks at every schedule each Interval until ctx ends, and then returns nil. Stopping it
// at any point, even by killing the process, loses nothing: another Scheduler, or this one
// started again, takes over from where the schedules' state says it got.
func (s *Scheduler) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		s.look(ctx)
		t.Reset(s.cfg.Interval)
	}
}

// look enqueues the ticks every schedule has due within the look-ahead. A schedule that fails
// is logged and tried again at the next look.
func (s *Scheduler) look(ctx context.Context) {
	names, err := s.c.store.ScheduleNames(ctx)
	if err != nil {
		s.logFailure(ctx, "listing schedules failed", "err", err)
		return
	}
	for len(names) > 0 {
		batch := names[:min(lookBatch, len(names))]
		read := time.Now()
		states, err := s.c.store.LookSchedules(ctx, batch, s.cfg.Lookahead.Milliseconds())
		if err != nil {
			s.logFailure(ctx, "reading schedules failed", "err", err)
			return
		}
		for i, st := range states {
			// A state older than the look-ahead enqueues nothing (enqueueTicks): in a slow
			// look, the rest of the batch is read again.
			if i > 0 && time.Since(read) > s.cfg.Lookahead/2 {
				break
			}
			names = names[1:]
			if st == nil {
				continue
			}
			_, comp, err := s.c.readSchedule(batch[i], *st)
			if err == nil {
				_, err = s.c.enqueueTicks(ctx, batch[i], *st, comp, s.cfg.Lookahead)
			}
			if err != nil {
				s.logFailure(ctx, "enqueueing a schedule's ticks failed", "schedule", batch[i], "err", err)
			}
		}
	}
}

// logFailure logs a failed look, unless it failed because the Scheduler is stopping.
func (s *Scheduler) logFailure(ctx context.Context, msg string, args ...any) {
	if ctx.Err() == nil {
		s.log.Warn("delayq: scheduler: "+msg, args...)
	}
}
