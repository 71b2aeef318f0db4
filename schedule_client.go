package delayq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
)

// Schedules enqueue one job per tick with no leader among the servers that run them: a tick's
// job has a deterministic id (TickID), and is enqueued by a script that marks the tick in the
// job's partition and refuses a tick marked there before (see tick.lua). Any number of
// Schedulers, and the calls below, may try the same tick; one job comes of it. The marks see
// one topic's partitions only: across a delete and a new put of the name, or a replace in
// another topic, the schedule's own state keeps the horizon of its looks, and the new
// definition ticks after it (schedule_look.lua, schedule_delete.lua, schedule_put.lua).

// defaultLookahead is how far ahead ticks are enqueued: SchedulerConfig.Lookahead's default,
// and what PutSchedule and ResumeSchedule enqueue themselves.
const defaultLookahead = 3 * time.Second

// PutSchedule creates schedule name, or replaces its definition, and reports whether it created
// it. A new schedule first ticks after it was created, and after the ticks of a schedule of the
// name deleted just before (see DeleteSchedule). A replaced one keeps its pause and its
// last tick, and the jobs of ticks enqueued already stay as they are: the new definition
// applies from the first tick after now not yet enqueued (ticks are enqueued a few seconds
// ahead of time); its ticks before the replace are not missed ones. PutSchedule then enqueues
// the ticks due within the next few seconds itself, so that the first one is on time even
// before a Scheduler looks; a failure to do so is logged and left to the Schedulers.
func (c *Client) PutSchedule(ctx context.Context, name string, s ScheduleSpec) (*Schedule, bool, error) {
	if err := ValidateScheduleName(name); err != nil {
		return nil, false, err
	}
	comp, err := s.compile(c.cfg.Limits, time.Now())
	if err != nil {
		return nil, false, err
	}
	def, err := json.Marshal(newScheduleRecord(s, comp.job))
	if err != nil {
		return nil, false, fmt.Errorf("delayq: encoding schedule %q: %w", name, err)
	}
	st, created, err := c.store.PutSchedule(ctx, name, def, s.Topic, defaultLookahead.Milliseconds())
	if err != nil {
		return nil, false, err
	}
	sch, err := c.startSchedule(ctx, name, st)
	return sch, created, err
}

// GetSchedule returns schedule name, or a NotFoundError.
func (c *Client) GetSchedule(ctx context.Context, name string) (*Schedule, error) {
	if err := ValidateScheduleName(name); err != nil {
		return nil, err
	}
	st, err := c.store.Schedule(ctx, name)
	if err != nil {
		return nil, scheduleNotFound(err, name)
	}
	sch, _, err := c.loadSchedule(name, st)
	return sch, err
}

// Schedules returns every schedule, sorted by name. Each holds its job's body: to list many
// schedules a part at a time, use ScheduleNames and SchedulesNamed.
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	names, err := c.ScheduleNames(ctx)
	if err != nil {
		return nil, err
	}
	return c.SchedulesNamed(ctx, names)
}

// ScheduleNames returns the names of every schedule, sorted, without reading the schedules.
func (c *Client) ScheduleNames(ctx context.Context) ([]string, error) {
	names, err := c.store.ScheduleNames(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// SchedulesNamed returns the schedules of names, in their order, leaving out those that do not
// exist (deleted since they were listed, say).
func (c *Client) SchedulesNamed(ctx context.Context, names []string) ([]Schedule, error) {
	for _, name := range names {
		if err := ValidateScheduleName(name); err != nil {
			return nil, err
		}
	}
	states, err := c.store.Schedules(ctx, names)
	if err != nil {
		return nil, err
	}
	out := make([]Schedule, 0, len(names))
	for i, st := range states {
		if st == nil {
			continue // deleted since it was listed
		}
		sch, _, err := c.loadSchedule(names[i], *st)
		if err != nil {
			return nil, err
		}
		out = append(out, *sch)
	}
	return out, nil
}

// DeleteSchedule deletes schedule name, or answers a NotFoundError. The jobs of ticks enqueued
// already (those due within the next few seconds) stay, like any job: cancel them by their
// TickID if they must not run. A schedule put again under the name, in any topic, ticks after
// them and after every tick a look under way at the delete may still enqueue.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	if err := ValidateScheduleName(name); err != nil {
		return err
	}
	return scheduleNotFound(c.store.DeleteSchedule(ctx, name), name)
}

// PauseSchedule stops schedule name from enqueueing ticks until ResumeSchedule, and returns it.
// The jobs of ticks enqueued already stay, as with DeleteSchedule.
func (c *Client) PauseSchedule(ctx context.Context, name string) (*Schedule, error) {
	if err := ValidateScheduleName(name); err != nil {
		return nil, err
	}
	st, err := c.store.PauseSchedule(ctx, name, true, 0)
	if err != nil {
		return nil, scheduleNotFound(err, name)
	}
	sch, _, err := c.loadSchedule(name, st)
	return sch, err
}

// ResumeSchedule lets a paused schedule tick again, from now: the ticks of the pause are passed
// over, not treated as missed. Like PutSchedule, it enqueues the ticks due within the next few
// seconds itself. Resuming a running schedule changes nothing.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (*Schedule, error) {
	if err := ValidateScheduleName(name); err != nil {
		return nil, err
	}
	st, err := c.store.PauseSchedule(ctx, name, false, defaultLookahead.Milliseconds())
	if err != nil {
		return nil, scheduleNotFound(err, name)
	}
	return c.startSchedule(ctx, name, st)
}

// startSchedule enqueues the ticks of a schedule just put or resumed that are due within
// defaultLookahead, and returns the schedule.
func (c *Client) startSchedule(ctx context.Context, name string, st store.ScheduleState) (*Schedule, error) {
	sch, comp, err := c.loadSchedule(name, st)
	if err != nil {
		return nil, err
	}
	last, err := c.enqueueTicks(ctx, name, st, comp, defaultLookahead)
	if err != nil {
		c.log.Warn("delayq: enqueueing a schedule's first ticks failed; a Scheduler will", "schedule", name, "err", err)
	}
	if last.After(sch.LastTick) {
		sch.LastTick = last
	}
	return sch, nil
}

// scheduleNotFound names schedule name in a not-found error; other errors pass unchanged.
func scheduleNotFound(err error, name string) error {
	if errors.Is(err, ErrNotFound) {
		return &NotFoundError{Schedule: name}
	}
	return err
}

// loadSchedule reads a stored schedule, with its next runs.
func (c *Client) loadSchedule(name string, st store.ScheduleState) (*Schedule, compiled, error) {
	sch, comp, err := c.readSchedule(name, st)
	if err == nil && !st.Paused {
		// The ticks up to the floor are those of a schedule deleted just before.
		sch.NextRuns = comp.ticks.upcoming(time.UnixMilli(max(st.NowMs, st.FloorMs)).UTC(), nextRunsShown)
	}
	return sch, comp, err
}

// readSchedule reads a stored schedule without its next runs, which a Scheduler's look does
// not need: for a rare calendar schedule (Feb 29) they cost more than the rest of the look.
func (c *Client) readSchedule(name string, st store.ScheduleState) (*Schedule, compiled, error) {
	var rec scheduleRecord
	if err := json.Unmarshal(st.Def, &rec); err != nil {
		return nil, compiled{}, fmt.Errorf("delayq: stored schedule %q: %w", name, err)
	}
	spec, job := rec.spec()
	created := time.UnixMilli(st.CreatedMs).UTC()
	// The template was validated when it was put, and is not held to limits set since.
	comp, err := spec.timing(created)
	if err != nil {
		return nil, compiled{}, fmt.Errorf("delayq: stored schedule %q: %w", name, err)
	}
	comp.topic, comp.job = spec.Topic, job
	sch := &Schedule{
		Name:         name,
		Spec:         spec,
		Paused:       st.Paused,
		SkippedTicks: st.SkippedTicks,
		CreatedAt:    created,
		UpdatedAt:    time.UnixMilli(st.UpdatedMs).UTC(),
	}
	if st.LastTickMs != 0 {
		sch.LastTick = time.UnixMilli(st.LastTickMs).UTC()
	}
	return sch, comp, nil
}

// enqueueTicks does one look at schedule name, as read in st (ticker.plan): it enqueues the
// ticks due within ahead of the server's clock, and the latest missed tick under MissedLatest,
// then moves the schedule's cursor past the ticks it dealt with. It returns the latest tick it
// enqueued (or found enqueued), zero when none. Ticks it comes to when st is older than ahead
// (and clockSlack) are not enqueued (errLookTooLate): the schedule may have been paused, changed or deleted.
func (c *Client) enqueueTicks(ctx context.Context, name string, st store.ScheduleState, comp compiled, ahead time.Duration) (time.Time, error) {
	if st.Paused {
		return time.Time{}, nil
	}
	p := comp.ticks.plan(time.UnixMilli(st.CursorMs).UTC(), time.UnixMilli(st.NowMs).UTC(), ahead, comp.missed)
	var done, last, taken time.Time // the latest tick dealt with, and enqueued; the first skipped
	if comp.missed == MissedSkip {
		done = p.missed
	}
	var err error
	var skipped int64
	until := st.NowMs + (ahead + clockSlack).Milliseconds()
	for _, t := range p.enqueue {
		var out store.TickOutcome
		if out, err = c.enqueueTick(ctx, name, comp, t, until); err != nil {
			break
		}
		done = t
		if out == store.TickIDTaken {
			if skipped++; skipped == 1 {
				taken = t
			}
		} else {
			last = t
		}
	}
	if done.IsZero() {
		return last, err
	}
	a := store.Advance{CreatedMs: st.CreatedMs, CursorMs: done.UnixMilli(), Skipped: skipped}
	if !last.IsZero() {
		a.LastMs = last.UnixMilli()
	}
	// A crash before this line is harmless: the next look tries the same ticks, which their
	// partitions refuse. Only the count of skipped ticks misses those this look found.
	ok, before, aerr := c.store.AdvanceSchedule(ctx, name, a)
	if aerr != nil {
		err = errors.Join(err, aerr)
	}
	if ok && skipped > 0 && before == 0 {
		// Once per schedule: its skipped_ticks counts the rest.
		c.log.Warn("delayq: a schedule's tick was skipped: another job has its id; the schedule counts such ticks in skipped_ticks",
			"schedule", name, "topic", comp.topic, "id", TickID(name, taken))
	}
	return last, err
}

// clockSlack is how far apart the clocks of the Redis servers that hold a schedule and its
// ticks' partitions (Cluster shards) may be without failing a look: a tick is not enqueued
// when the clock of its partition's server is past the time the schedule was read, by its
// server's clock, plus the look-ahead and clockSlack.
const clockSlack = time.Second

// errLookTooLate is enqueueTicks' failure when the look took longer than its look-ahead.
var errLookTooLate = errors.New("delayq: the look outlasted its look-ahead; the next look enqueues the ticks")

// enqueueTick enqueues the job of schedule name's tick at t, unless it was enqueued before, or
// the Redis server's clock is past untilMs: the schedule read then may have been paused,
// changed or deleted since.
func (c *Client) enqueueTick(ctx context.Context, name string, comp compiled, t time.Time, untilMs int64) (store.TickOutcome, error) {
	j := comp.job
	j.ID, j.RunAtMs = TickID(name, t), t.UnixMilli()
	n, err := c.partitions(ctx, comp.topic, true)
	if err != nil {
		return 0, err
	}
	out, err := c.store.EnqueueTick(ctx, c.store.Partition(comp.topic, keys.PartitionOf(j.ID, n)), name, j, untilMs)
	if err == nil && out == store.TickTooLate {
		err = errLookTooLate
	}
	return out, err
}

// scheduleRecord is a schedule's definition as stored: JSON with names of its own, so that the
// stored form does not change with the Go types. The job template is in the store's units,
// validated when it was put.
type scheduleRecord struct {
	Cron        string  `json:"cron"`
	TimeZone    string  `json:"timezone,omitempty"`
	Topic       string  `json:"topic"`
	StartAtMs   int64   `json:"start_at_ms,omitempty"`
	EndAtMs     int64   `json:"end_at_ms,omitempty"`
	Missed      string  `json:"missed,omitempty"`
	Body        []byte  `json:"body,omitempty"`
	Format      int     `json:"format,omitempty"`
	TTRMs       int64   `json:"ttr_ms"`
	MaxRetries  int     `json:"max_retries"`
	MaxSnoozes  int     `json:"max_snoozes,omitempty"`
	BackoffMs   []int64 `json:"backoff_ms,omitempty"`
	Priority    int     `json:"priority,omitempty"`
	CallbackURL string  `json:"callback_url,omitempty"`
	// Headers are validated: lower-case names.
	Headers map[string]string `json:"headers,omitempty"`
}

func newScheduleRecord(s ScheduleSpec, job store.NewJob) scheduleRecord {
	r := scheduleRecord{
		Cron: s.Cron, TimeZone: s.TimeZone, Topic: s.Topic, Missed: string(s.Missed),
		Body: job.Body, Format: job.Format, TTRMs: job.TTRMs, MaxRetries: job.MaxRetries,
		MaxSnoozes: job.MaxSnoozes, BackoffMs: job.BackoffMs, Priority: job.Priority,
		CallbackURL: job.Callback, Headers: job.Headers,
	}
	if !s.StartAt.IsZero() {
		r.StartAtMs = ceilSecond(s.StartAt).UnixMilli()
	}
	if !s.EndAt.IsZero() {
		r.EndAtMs = s.EndAt.UnixMilli()
	}
	return r
}

// spec returns the schedule r stores, and its job template in the store's units.
func (r scheduleRecord) spec() (ScheduleSpec, store.NewJob) {
	job := store.NewJob{
		Format: r.Format, Priority: r.Priority, MaxRetries: r.MaxRetries, TTRMs: r.TTRMs,
		Body: r.Body, BackoffMs: r.BackoffMs, Callback: r.CallbackURL, Headers: r.Headers,
		MaxSnoozes: r.MaxSnoozes,
	}
	s := ScheduleSpec{
		Cron: r.Cron, TimeZone: r.TimeZone, Topic: r.Topic, Missed: MissedPolicy(r.Missed),
		Job: Spec{
			Body: r.Body, Format: Format(r.Format), TTR: time.Duration(r.TTRMs) * time.Millisecond,
			MaxRetries: r.MaxRetries, NoRetries: r.MaxRetries == 0, MaxSnoozes: r.MaxSnoozes,
			Priority: r.Priority, CallbackURL: r.CallbackURL, Headers: r.Headers,
		},
	}
	if s.Missed == "" {
		s.Missed = MissedLatest
	}
	for _, ms := range r.BackoffMs {
		s.Job.Backoff = append(s.Job.Backoff, time.Duration(ms)*time.Millisecond)
	}
	if r.StartAtMs != 0 {
		s.StartAt = time.UnixMilli(r.StartAtMs).UTC()
	}
	if r.EndAtMs != 0 {
		s.EndAt = time.UnixMilli(r.EndAtMs).UTC()
	}
	return s, job
}
