package delayq

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// mustTicker compiles s, created at created, and returns its ticker.
func mustTicker(t *testing.T, s ScheduleSpec, created time.Time) ticker {
	t.Helper()
	if s.Topic == "" {
		s.Topic = "t"
	}
	c, err := s.compile(Limits{}.WithDefaults(), created)
	if err != nil {
		t.Fatalf("compile %+v: %v", s, err)
	}
	return c.ticks
}

func utcs(ss ...string) []time.Time {
	out := make([]time.Time, len(ss))
	for i, s := range ss {
		out[i] = utc(s)
	}
	return out
}

// inUTC makes times comparable by cmp: the ticks of a zoned schedule carry their zone.
func inUTC(ts []time.Time) []time.Time {
	out := make([]time.Time, len(ts))
	for i, t := range ts {
		out[i] = t.UTC()
	}
	return out
}

// Europe/Berlin leaves CET (+01:00) for CEST (+02:00) at 02:00 on 29 March 2026 and goes back at
// 03:00 on 25 October 2026. The ticks follow the wall clock as robfig/cron computes it.
func TestTicksAcrossDaylightSavingInBerlin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, cron, from string
		want             []time.Time
	}{
		{"daily 09:00 keeps its wall-clock time", "0 9 * * *", "2026-03-27T12:00:00Z", utcs(
			"2026-03-28T08:00:00Z", // 09:00 CET
			"2026-03-29T07:00:00Z", // 09:00 CEST
			"2026-03-30T07:00:00Z",
		)},
		{"hourly across spring forward: 02:00 does not exist", "0 * * * *", "2026-03-28T23:30:00Z", utcs(
			"2026-03-29T00:00:00Z", // 01:00 CET
			"2026-03-29T01:00:00Z", // 03:00 CEST
			"2026-03-29T02:00:00Z", // 04:00 CEST
		)},
		{"02:30 is skipped on the day it does not exist", "30 2 * * *", "2026-03-27T12:00:00Z", utcs(
			"2026-03-28T01:30:00Z", // 02:30 CET
			"2026-03-30T00:30:00Z", // 02:30 CEST, the next day
		)},
		{"hourly across fall back: 02:00 comes twice", "0 * * * *", "2026-10-24T23:30:00Z", utcs(
			"2026-10-25T00:00:00Z", // 02:00 CEST
			"2026-10-25T01:00:00Z", // 02:00 CET
			"2026-10-25T02:00:00Z", // 03:00 CET
		)},
		{"02:30 ticks in both 02:30s of the day it comes twice", "30 2 * * *", "2026-10-24T12:00:00Z", utcs(
			"2026-10-25T00:30:00Z", // 02:30 CEST
			"2026-10-25T01:30:00Z", // 02:30 CET
			"2026-10-26T01:30:00Z",
		)},
		{"daily 09:00 after fall back", "0 9 * * *", "2026-10-24T12:00:00Z", utcs(
			"2026-10-25T08:00:00Z", // 09:00 CET
			"2026-10-26T08:00:00Z",
		)},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := mustTicker(t, ScheduleSpec{Cron: c.cron, TimeZone: "Europe/Berlin"}, utc("2026-01-01T00:00:00Z"))
			got := inUTC(k.upcoming(utc(c.from), len(c.want)))
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("ticks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTicksOfAnInterval(t *testing.T) {
	t.Parallel()
	created := utc("2026-05-01T10:00:00.700Z")
	k := mustTicker(t, ScheduleSpec{Cron: "@every 30s"}, created)
	want := utcs("2026-05-01T10:00:30Z", "2026-05-01T10:01:00Z", "2026-05-01T10:01:30Z")
	if diff := cmp.Diff(want, k.upcoming(created, 3)); diff != "" {
		t.Fatalf("from creation (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[1:], k.upcoming(utc("2026-05-01T10:00:30Z"), 2)); diff != "" {
		t.Fatalf("from a tick (-want +got):\n%s", diff)
	}

	// With StartAt, the ticks count from it, whenever the schedule was made; EndAt ends them.
	k = mustTicker(t, ScheduleSpec{Cron: "@every 1h", StartAt: utc("2026-06-01T08:15:00Z"), EndAt: utc("2026-06-01T10:15:00Z")}, created)
	want = utcs("2026-06-01T08:15:00Z", "2026-06-01T09:15:00Z", "2026-06-01T10:15:00Z")
	if diff := cmp.Diff(want, k.upcoming(created, 10)); diff != "" {
		t.Fatalf("with start and end (-want +got):\n%s", diff)
	}
}

// An interval of up to ten years ticks forward, one interval apart; a longer one, whose ticks a
// Duration counted from the first could not reach, is refused rather than ticking back in time.
func TestTicksOfALongInterval(t *testing.T) {
	t.Parallel()
	created := utc("2026-05-01T10:00:00Z")
	k := mustTicker(t, ScheduleSpec{Cron: "@every 87600h"}, created)
	ticks := k.upcoming(created, nextRunsShown)
	for i := 1; i < len(ticks); i++ {
		if ticks[i].Sub(ticks[i-1]) != k.every {
			t.Fatalf("ticks %v are not one interval apart", ticks)
		}
	}
	for _, every := range []string{"@every 87601h", "@every 1000000h", "@every 2562047h"} {
		err := ScheduleSpec{Cron: every, Topic: "t"}.Validate(Limits{})
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != "cron" {
			t.Errorf("%s: %v, want the cron refused", every, err)
		}
	}
}

// Ticks are whole seconds: a StartAt within a second is rounded up to the next one, for the
// ticks and for the schedule as stored.
func TestStartAtWithinASecondRoundsUp(t *testing.T) {
	t.Parallel()
	k := mustTicker(t, ScheduleSpec{Cron: "@every 1s", StartAt: utc("2026-06-01T08:00:00.001Z")}, utc("2026-05-01T00:00:00Z"))
	want := utcs("2026-06-01T08:00:01Z", "2026-06-01T08:00:02Z")
	if diff := cmp.Diff(want, k.upcoming(utc("2026-05-01T00:00:00Z"), 2)); diff != "" {
		t.Fatalf("ticks (-want +got):\n%s", diff)
	}
	k = mustTicker(t, ScheduleSpec{Cron: "* * * * *", StartAt: utc("2026-06-01T08:00:00.500Z")}, utc("2026-05-01T00:00:00Z"))
	if got := k.next(utc("2026-05-01T00:00:00Z")); !got.Equal(utc("2026-06-01T08:01:00Z")) {
		t.Fatalf("a calendar schedule's first tick %v, want 08:01:00", got)
	}

	c, _ := newTestClient(t, Config{})
	start := time.Now().UTC().Truncate(time.Second).Add(time.Hour + 500*time.Millisecond)
	sch := mustPutSchedule(t, c, "s", ScheduleSpec{Cron: "@every 1m", Topic: "t", StartAt: start})
	rounded := start.Truncate(time.Second).Add(time.Second)
	if !sch.Spec.StartAt.Equal(rounded) || !sch.NextRuns[0].Equal(rounded) {
		t.Fatalf("StartAt %v, next runs %v; want both from %v", sch.Spec.StartAt, sch.NextRuns, rounded)
	}
}

func TestStartAndEndBoundACalendarSchedule(t *testing.T) {
	t.Parallel()
	k := mustTicker(t, ScheduleSpec{Cron: "0 * * * *", StartAt: utc("2026-06-01T08:00:00Z"), EndAt: utc("2026-06-01T09:59:00Z")}, utc("2026-01-01T00:00:00Z"))
	want := utcs("2026-06-01T08:00:00Z", "2026-06-01T09:00:00Z")
	if diff := cmp.Diff(want, inUTC(k.upcoming(utc("2026-05-01T00:00:00Z"), 10))); diff != "" {
		t.Fatalf("ticks (-want +got):\n%s", diff)
	}
}

// latest must agree with walking every tick, for intervals and calendar schedules, far apart or
// close.
func TestLatestTickAgreesWithAWalk(t *testing.T) {
	t.Parallel()
	created := utc("2026-01-01T00:00:00.250Z")
	for _, s := range []ScheduleSpec{
		{Cron: "@every 7s"},
		{Cron: "@every 1h", EndAt: utc("2026-01-03T00:00:00Z")},
		{Cron: "*/5 * * * *"},
		{Cron: "0 9 * * MON-FRI", TimeZone: "Europe/Berlin"},
		{Cron: "* 9 * * 1", TimeZone: "America/New_York"},
		{Cron: "0 0 1 */3 *", StartAt: utc("2026-03-01T00:00:00Z")},
	} {
		k := mustTicker(t, s, created)
		for _, gap := range []time.Duration{time.Second, 90 * time.Second, 3 * time.Hour, 50 * time.Hour, 40 * 24 * time.Hour, 200 * 24 * time.Hour} {
			after := created.Add(13 * time.Minute)
			before := after.Add(gap)
			var walked time.Time
			for tk := k.next(after); !tk.IsZero() && tk.Before(before); tk = k.next(tk) {
				walked = tk
			}
			if got := k.latest(after, before); !got.Equal(walked) {
				t.Errorf("%q over %v: latest %v, a walk finds %v", s.Cron, gap, got, walked)
			}
		}
	}
}

func TestPlanEnqueuesAheadAndOneMissedTick(t *testing.T) {
	t.Parallel()
	created := utc("2026-05-01T10:00:00Z")
	k := mustTicker(t, ScheduleSpec{Cron: "@every 10s"}, created)
	now := utc("2026-05-01T11:00:05Z") // an hour of ticks went by unseen
	for _, c := range []struct {
		policy MissedPolicy
		want   []time.Time
	}{
		{MissedLatest, utcs("2026-05-01T11:00:00Z", "2026-05-01T11:00:10Z")},
		{MissedSkip, utcs("2026-05-01T11:00:10Z")},
	} {
		p := k.plan(created, now, 5*time.Second, c.policy)
		if !p.missed.Equal(utc("2026-05-01T11:00:00Z")) {
			t.Errorf("%s: missed %v, want 11:00:00", c.policy, p.missed)
		}
		if diff := cmp.Diff(c.want, p.enqueue); diff != "" {
			t.Errorf("%s: enqueues (-want +got):\n%s", c.policy, diff)
		}
	}

	// On time: nothing missed; the ticks up to now+ahead after the cursor, a tick at now too.
	p := k.plan(utc("2026-05-01T11:00:00Z"), utc("2026-05-01T11:00:10Z"), 25*time.Second, MissedLatest)
	if want := utcs("2026-05-01T11:00:10Z", "2026-05-01T11:00:20Z", "2026-05-01T11:00:30Z"); !p.missed.IsZero() || !cmp.Equal(want, p.enqueue) {
		t.Errorf("on time: missed %v, enqueues %v; want none and %v", p.missed, p.enqueue, want)
	}
	// Ticks enqueued ahead already are not enqueued again.
	p = k.plan(utc("2026-05-01T11:00:30Z"), utc("2026-05-01T11:00:11Z"), 30*time.Second, MissedLatest)
	if want := utcs("2026-05-01T11:00:40Z"); !cmp.Equal(want, p.enqueue) {
		t.Errorf("ahead: enqueues %v, want %v", p.enqueue, want)
	}
	// A huge look-ahead is taken a bounded bite at a time.
	if p := k.plan(created, created, 24*time.Hour, MissedLatest); len(p.enqueue) != maxTicksPerLook {
		t.Errorf("a day ahead: %d ticks in one look, want %d", len(p.enqueue), maxTicksPerLook)
	}
}
