package delayq

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/delayq/delayq/internal/store"
)

// ScheduleSpec describes a recurring job: a schedule enqueues one job in Topic for each of its
// ticks, made from the template Job. See Client.PutSchedule and Scheduler.
type ScheduleSpec struct {
	// Cron says when the schedule ticks: five fields (minute, hour, day of month, month, day of
	// week), such as "*/5 * * * *" or "0 9 * * MON-FRI", or a descriptor: @yearly, @monthly,
	// @weekly, @daily, @hourly, or @every <interval> for a fixed interval of whole seconds, from
	// 1s to ten years (87600h), such as "@every 30s". Parsed by github.com/robfig/cron/v3.
	Cron string
	// TimeZone is the IANA time zone the five fields are read in, such as "Europe/Berlin".
	// Defaults to UTC. Across a daylight-saving change the wall clock decides, as robfig/cron
	// computes it: a time the change skips does not occur that day, and an hour that occurs
	// twice ticks in each of its occurrences. An @every interval ignores the zone.
	TimeZone string
	// Topic is where each tick's job goes.
	Topic string
	// Job is the template of each tick's job. Its ID, Delay and RunAt must be empty: a tick's
	// job has the id TickID(name, tick) and is due at the tick.
	Job Spec
	// StartAt, when set, is the earliest time the schedule ticks, at most Limits.MaxDelay ahead;
	// an @every schedule ticks at StartAt and every interval after it. Ticks are whole seconds:
	// a StartAt within a second is rounded up to the next whole second, and stored so. Without
	// it, an @every schedule first ticks one interval after it was created (in whole seconds).
	StartAt time.Time
	// EndAt, when set, is the latest time the schedule ticks. A schedule with no tick to come,
	// its EndAt past or before its first tick, is refused.
	EndAt time.Time
	// Missed says which ticks to enqueue late when no Scheduler ran at their time. Defaults to
	// MissedLatest.
	Missed MissedPolicy
}

// MissedPolicy says what a schedule does with ticks whose time passed while no Scheduler ran
// (every server down for an hour, say). Either way a schedule never enqueues a flood.
type MissedPolicy string

// The missed-tick policies.
const (
	// MissedLatest enqueues the most recent missed tick, due at once, and passes over the others.
	MissedLatest MissedPolicy = "latest"
	// MissedSkip passes over every missed tick.
	MissedSkip MissedPolicy = "skip"
)

// Schedule is a schedule as stored, with where its ticks are.
type Schedule struct {
	Name string
	Spec ScheduleSpec
	// Paused says the schedule enqueues no tick until it is resumed.
	Paused bool
	// LastTick is the latest tick whose job has been enqueued; zero before the first. Ticks are
	// enqueued ahead of time (see Scheduler), so it can be a few seconds ahead.
	LastTick time.Time
	// SkippedTicks counts the ticks that enqueued nothing because another job held the tick's
	// id (TickID) already: a job enqueued with that id by hand, say. The first one is logged.
	SkippedTicks int64
	// NextRuns are the next ticks after now (by the Redis server's clock), at most five: none
	// while paused or once EndAt has passed.
	NextRuns  []time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// nextRunsShown is how many NextRuns a Schedule lists.
const nextRunsShown = 5

// ValidateScheduleName reports whether name is a valid schedule name: the same rules as a topic
// name.
func ValidateScheduleName(name string) error {
	if !validTopic(name) {
		return invalid("name", "%q must match %s", name, topicPattern)
	}
	return nil
}

// TickID returns the id of the job of schedule's tick at t: the schedule's name, "@" and the
// tick's time in UTC with milliseconds, so that a schedule's tick jobs sort by time. For
// example "nightly-report@2026-11-22T02:30:00.000Z".
func TickID(schedule string, t time.Time) string {
	return schedule + "@" + t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Validate reports whether s is a schedule that a Client with limits l would accept, as an
// *InvalidError naming the first wrong field: cron, timezone, topic, job.<field> (the fields of
// Spec.Validate), start_at, end_at or missed.
func (s ScheduleSpec) Validate(l Limits) error {
	_, err := s.compile(l.WithDefaults(), time.Now())
	return err
}

// compiled is a validated schedule: when it ticks and the job each tick enqueues.
type compiled struct {
	ticks  ticker
	missed MissedPolicy
	topic  string
	job    store.NewJob // the template, without an id or a due time
}

// compile validates s against l (defaults set) for a schedule put at created, which an
// @every schedule without StartAt counts its ticks from: a schedule with no tick after created
// is refused.
func (s ScheduleSpec) compile(l Limits, created time.Time) (compiled, error) {
	c, err := s.timing(created)
	if err != nil {
		return c, err
	}
	if c.ticks.next(created).IsZero() {
		switch {
		case !s.EndAt.IsZero() && !s.EndAt.After(created):
			return c, invalid("end_at", "%s is in the past: the schedule would never tick", s.EndAt.Format(time.RFC3339Nano))
		case !s.EndAt.IsZero():
			return c, invalid("end_at", "%s comes before the first tick of %q: the schedule would never tick", s.EndAt.Format(time.RFC3339Nano), s.Cron)
		default:
			return c, invalid("cron", "%q never ticks", s.Cron)
		}
	}
	// As for a job's run_at: a schedule's next runs then stay within the times the API writes.
	if time.Until(s.StartAt) > l.MaxDelay {
		return c, invalid("start_at", "%s is more than %s ahead", s.StartAt.Format(time.RFC3339Nano), ms(l.MaxDelay))
	}
	if err := ValidateTopic(s.Topic); err != nil {
		return c, err
	}
	c.topic = s.Topic
	c.job, err = s.template(l)
	return c, err
}

// timing validates when s ticks and what it does with missed ticks.
func (s ScheduleSpec) timing(created time.Time) (compiled, error) {
	var c compiled
	when, every, err := parseCron(s.Cron, s.TimeZone)
	if err != nil {
		return c, err
	}
	if !s.StartAt.IsZero() && s.StartAt.UnixMilli() <= 0 {
		return c, invalid("start_at", "%s is not after 1970-01-01", s.StartAt.Format(time.RFC3339Nano))
	}
	if !s.EndAt.IsZero() && s.EndAt.UnixMilli() <= 0 {
		return c, invalid("end_at", "%s is not after 1970-01-01", s.EndAt.Format(time.RFC3339Nano))
	}
	// Ticks are whole seconds.
	start := ceilSecond(s.StartAt)
	if !s.EndAt.IsZero() && !start.IsZero() && !s.EndAt.After(start) {
		return c, invalid("end_at", "%s is not after start_at %s", s.EndAt.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano))
	}
	switch s.Missed {
	case "":
		c.missed = MissedLatest
	case MissedLatest, MissedSkip:
		c.missed = s.Missed
	default:
		return c, invalid("missed", "%q is not %q or %q", s.Missed, MissedLatest, MissedSkip)
	}
	c.ticks = ticker{cron: when, every: every, start: start, end: s.EndAt}
	if every > 0 {
		c.ticks.first = start
		if c.ticks.first.IsZero() {
			c.ticks.first = created.Truncate(time.Second).Add(every)
		}
	} else if when.Next(created).IsZero() {
		return c, invalid("cron", "%q never ticks", s.Cron)
	}
	return c, nil
}

// ceilSecond returns t rounded up to a whole second; the zero time stays zero.
func ceilSecond(t time.Time) time.Time {
	if s := t.Truncate(time.Second); !s.Equal(t) {
		return s.Add(time.Second)
	}
	return t
}

// template validates the job template and converts it into the store's units.
func (s ScheduleSpec) template(l Limits) (store.NewJob, error) {
	switch {
	case s.Job.ID != "":
		return store.NewJob{}, invalid("job.id", "a schedule names each tick's job itself: <name>@<tick time>")
	case s.Job.Delay != 0:
		return store.NewJob{}, invalid("job.delay", "a tick's job is due at its tick")
	case !s.Job.RunAt.IsZero():
		return store.NewJob{}, invalid("job.run_at", "a tick's job is due at its tick")
	}
	j, err := l.toNewJob(s.Job, func() string { return "" })
	var inv *InvalidError
	if errors.As(err, &inv) {
		in := *inv
		in.Field = "job." + inv.Field
		return j, &in
	}
	return j, err
}

// maxCron is the longest cron expression, in bytes.
const maxCron = 256

// maxEvery is the longest @every interval, ten years: a schedule's next ticks, counted from its
// first in a Duration, stay within its 292 years.
const maxEvery = 10 * 365 * 24 * time.Hour

// cronParser reads standard five-field expressions and descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseCron reads a cron expression in time zone tz: a calendar schedule, or the interval of an
// @every one (when is nil then).
func parseCron(expr, tz string) (when cron.Schedule, every time.Duration, err error) {
	loc := time.UTC
	if tz != "" {
		// "Local" would be each server's own zone: servers must agree on every tick.
		if loc, err = time.LoadLocation(tz); err != nil || tz == "Local" {
			return nil, 0, invalid("timezone", "%q is not an IANA time zone such as Europe/Berlin", tz)
		}
	}
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, 0, invalid("cron", "is required, such as \"*/5 * * * *\" or \"@every 30s\"")
	}
	if len(expr) > maxCron {
		return nil, 0, invalid("cron", "is longer than %d bytes", maxCron)
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, 0, invalid("cron", "give the time zone in timezone, not in the expression")
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		// The parser would round an interval to whole seconds, and up to 1s, without a word.
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		switch {
		case err != nil:
			return nil, 0, invalid("cron", "%q: the interval is not a duration such as 30s, 5m or 1h30m", expr)
		case d < time.Second:
			return nil, 0, invalid("cron", "%q: the interval %v is under 1s", expr, d)
		case d%time.Second != 0:
			return nil, 0, invalid("cron", "%q: the interval %v is not a whole number of seconds", expr, d)
		case d > maxEvery:
			return nil, 0, invalid("cron", "%q: the interval %v is longer than %v", expr, d, maxEvery)
		}
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return nil, 0, invalid("cron", "%q: %v", expr, err)
	}
	switch sc := sched.(type) {
	case *cron.SpecSchedule:
		sc.Location = loc
		return sc, 0, nil
	case cron.ConstantDelaySchedule:
		return nil, sc.Delay, nil
	}
	return nil, 0, fmt.Errorf("delayq: cron %q: unexpected schedule %T", expr, sched)
}
