package delayq

import (
	"time"

	"github.com/robfig/cron/v3"
)

// ticker computes when a schedule ticks. It is pure: every server computes the same ticks from
// the same stored schedule, which is what lets several of them enqueue one job per tick.
type ticker struct {
	cron  cron.Schedule // a calendar schedule in its time zone; nil for a fixed interval
	every time.Duration // the interval of an @every schedule
	first time.Time     // an @every schedule's first tick
	// start and end bound the ticks; zero when open.
	start, end time.Time
}

// next returns the first tick after t, or the zero time when there is none.
func (k ticker) next(t time.Time) time.Time {
	if !k.start.IsZero() && t.Before(k.start) {
		t = k.start.Add(-time.Nanosecond)
	}
	var n time.Time
	switch {
	case k.cron != nil:
		n = k.cron.Next(t)
	case t.Before(k.first):
		n = k.first
	default:
		n = k.first.Add((t.Sub(k.first)/k.every + 1) * k.every)
	}
	if n.IsZero() || (!k.end.IsZero() && n.After(k.end)) {
		return time.Time{}
	}
	return n
}

// upcoming returns the ticks after t, at most n.
func (k ticker) upcoming(t time.Time, n int) []time.Time {
	var out []time.Time
	for next := k.next(t); !next.IsZero() && len(out) < n; next = k.next(next) {
		out = append(out, next)
	}
	return out
}

// latest returns the last tick after after and before before, or the zero time when there is
// none. It does not walk every tick of a long gap: an @every schedule's is arithmetic, and a
// calendar schedule's is searched for in windows that double back from before.
func (k ticker) latest(after, before time.Time) time.Time {
	if k.cron == nil {
		if !k.end.IsZero() && before.After(k.end) {
			before = k.end.Add(time.Nanosecond)
		}
		if !before.After(k.first) {
			return time.Time{}
		}
		t := k.first.Add((before.Sub(k.first) - 1) / k.every * k.every)
		if !t.After(after) {
			return time.Time{}
		}
		return t
	}
	for window := time.Minute; ; window *= 2 {
		from := before.Add(-window)
		if !from.After(after) {
			from = after
		}
		var last time.Time
		for t := k.next(from); !t.IsZero() && t.Before(before); t = k.next(t) {
			last = t
		}
		if !last.IsZero() || !from.After(after) {
			return last
		}
	}
}

// maxTicksPerLook bounds the ticks one look at a schedule enqueues, for a look-ahead far longer
// than the interval; the next look enqueues the rest.
const maxTicksPerLook = 64

// tickPlan is what one look at a schedule does.
type tickPlan struct {
	// missed is the latest tick that passed unseen: after the cursor and before now; zero when
	// none did.
	missed time.Time
	// enqueue are the ticks to enqueue, in order: missed when the policy keeps it, then the
	// ticks due from now to now+ahead.
	enqueue []time.Time
}

// plan returns what a look at a schedule at now does, with every tick up to cursor dealt with:
// it enqueues the ticks due within ahead, and the latest missed tick under MissedLatest.
func (k ticker) plan(cursor, now time.Time, ahead time.Duration, missed MissedPolicy) tickPlan {
	var p tickPlan
	from := cursor
	if from.Before(now) {
		p.missed = k.latest(cursor, now)
		if !p.missed.IsZero() && missed == MissedLatest {
			p.enqueue = append(p.enqueue, p.missed)
		}
		from = now.Add(-time.Nanosecond) // a tick at now is on time
	}
	for t := k.next(from); !t.IsZero() && !t.After(now.Add(ahead)) && len(p.enqueue) < maxTicksPerLook; t = k.next(t) {
		p.enqueue = append(p.enqueue, t)
	}
	return p
}
