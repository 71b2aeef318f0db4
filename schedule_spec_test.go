package delayq

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestScheduleValidation(t *testing.T) {
	t.Parallel()
	ok := ScheduleSpec{Cron: "*/5 * * * *", Topic: "reports"}
	for _, c := range []struct {
		name  string
		edit  func(*ScheduleSpec)
		field string
		says  string
	}{
		{"no cron", func(s *ScheduleSpec) { s.Cron = " " }, "cron", "required"},
		{"too long", func(s *ScheduleSpec) { s.Cron = strings.Repeat("*", 257) }, "cron", "longer than 256 bytes"},
		{"six fields", func(s *ScheduleSpec) { s.Cron = "0 */5 * * * *" }, "cron", "expected exactly 5 fields"},
		{"bad field", func(s *ScheduleSpec) { s.Cron = "61 * * * *" }, "cron", "61"},
		{"bad descriptor", func(s *ScheduleSpec) { s.Cron = "@fortnightly" }, "cron", "unrecognized descriptor"},
		{"interval under a second", func(s *ScheduleSpec) { s.Cron = "@every 500ms" }, "cron", "under 1s"},
		{"interval of no time", func(s *ScheduleSpec) { s.Cron = "@every 0s" }, "cron", "under 1s"},
		{"interval in part seconds", func(s *ScheduleSpec) { s.Cron = "@every 1500ms" }, "cron", "whole number of seconds"},
		{"interval not a duration", func(s *ScheduleSpec) { s.Cron = "@every often" }, "cron", "not a duration"},
		{"zone in the expression", func(s *ScheduleSpec) { s.Cron = "CRON_TZ=Europe/Berlin 0 9 * * *" }, "cron", "timezone"},
		{"never ticks", func(s *ScheduleSpec) { s.Cron = "0 0 30 2 *" }, "cron", "never ticks"},
		{"unknown zone", func(s *ScheduleSpec) { s.TimeZone = "Europe/Atlantis" }, "timezone", "IANA"},
		{"local zone", func(s *ScheduleSpec) { s.TimeZone = "Local" }, "timezone", "IANA"},
		{"bad topic", func(s *ScheduleSpec) { s.Topic = "a b" }, "topic", "must match"},
		{"job id", func(s *ScheduleSpec) { s.Job.ID = "x" }, "job.id", "names each tick's job"},
		{"job delay", func(s *ScheduleSpec) { s.Job.Delay = time.Second }, "job.delay", "due at its tick"},
		{"job run_at", func(s *ScheduleSpec) { s.Job.RunAt = time.Now() }, "job.run_at", "due at its tick"},
		{"job ttr", func(s *ScheduleSpec) { s.Job.TTR = time.Millisecond }, "job.ttr", "outside"},
		{"job backoff step", func(s *ScheduleSpec) { s.Job.Backoff = []time.Duration{1, -1} }, "job.backoff[1]", "outside"},
		{"end before start", func(s *ScheduleSpec) {
			s.StartAt, s.EndAt = utc("2026-06-01T00:00:00Z"), utc("2026-05-01T00:00:00Z")
		}, "end_at", "not after start_at"},
		{"end within a second of start", func(s *ScheduleSpec) {
			s.StartAt, s.EndAt = utc("2030-06-01T00:00:00.200Z"), utc("2030-06-01T00:00:00.700Z")
		}, "end_at", "not after start_at 2030-06-01T00:00:01Z"},
		{"end in the past", func(s *ScheduleSpec) { s.EndAt = time.Now().Add(-time.Hour) }, "end_at", "in the past"},
		{"start and end in the past", func(s *ScheduleSpec) {
			s.Cron, s.StartAt, s.EndAt = "@every 1s", time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
		}, "end_at", "in the past"},
		{"end before the first tick", func(s *ScheduleSpec) { s.Cron, s.EndAt = "@every 1h", time.Now().Add(time.Minute) }, "end_at", "before the first tick"},
		{"end before a late start's first tick", func(s *ScheduleSpec) {
			s.StartAt, s.EndAt = utc("2030-06-01T00:01:00Z"), utc("2030-06-01T00:04:00Z")
		}, "end_at", "before the first tick"},
		{"missed", func(s *ScheduleSpec) { s.Missed = "all" }, "missed", `"latest" or "skip"`},
		{"start past the longest delay", func(s *ScheduleSpec) { s.StartAt = time.Now().AddDate(11, 0, 0) }, "start_at", "ahead"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.edit(&s)
			err := s.Validate(Limits{})
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Field != c.field || !strings.Contains(inv.Reason, c.says) {
				t.Fatalf("Validate: %v; want an invalid %s that says %q", err, c.field, c.says)
			}
		})
	}
	for _, good := range []string{"*/5 * * * *", "@hourly", "@daily", "@every 1s", "@every 1h30m", "0 9 * * MON-FRI"} {
		s := ok
		s.Cron, s.TimeZone = good, "Europe/Berlin"
		if err := s.Validate(Limits{}); err != nil {
			t.Errorf("Validate(%q): %v", good, err)
		}
	}
	big := ok
	big.Job.Body = make([]byte, 2<<20)
	if err := big.Validate(Limits{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a template body over the limit: %v, want ErrTooLarge", err)
	}
}

func TestTickIDsSortByTime(t *testing.T) {
	t.Parallel()
	a, b := TickID("nightly", utc("2026-11-22T02:30:00Z")), TickID("nightly", utc("2027-01-02T00:00:00.5Z"))
	if a != "nightly@2026-11-22T02:30:00.000Z" || a >= b {
		t.Fatalf("TickID: %q, %q", a, b)
	}
	if err := ValidateID(TickID(strings.Repeat("n", 128), time.Now())); err != nil {
		t.Fatalf("the longest name's tick id: %v", err)
	}
}

// Any cron expression and time zone is accepted or refused as ErrInvalid, never a panic; an
// accepted one ticks forward, and latest agrees with next.
func FuzzScheduleCron(f *testing.F) {
	for _, s := range []string{"*/5 * * * *", "@every 1s", "@every 500ms", "0 9 * * MON-FRI", "61 * * * *", "@hourly", "0-59/0 * * * *", "* * 31 2 *", "@every 9999999h", "TZ=UTC * * * * *"} {
		f.Add(s, "Europe/Berlin")
	}
	f.Add("0 2 * * *", "")
	f.Add("0 2 * * *", "Local")
	created := utc("2026-03-28T00:00:00.300Z")
	f.Fuzz(func(t *testing.T, cron, tz string) {
		c, err := ScheduleSpec{Cron: cron, TimeZone: tz, Topic: "t"}.compile(Limits{}.WithDefaults(), created)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("compile(%q, %q): %v, not ErrInvalid", cron, tz, err)
			}
			return
		}
		ticks := c.ticks.upcoming(created, 3)
		if len(ticks) == 0 || !ticks[0].After(created) {
			t.Fatalf("compile(%q, %q): ticks %v", cron, tz, ticks)
		}
		for i := 1; i < len(ticks); i++ {
			if !ticks[i].After(ticks[i-1]) {
				t.Fatalf("%q: ticks %v do not move forward", cron, ticks)
			}
			if got := c.ticks.latest(created, ticks[i]); !got.Equal(ticks[i-1]) {
				t.Fatalf("%q: latest before %v is %v, want %v", cron, ticks[i], got, ticks[i-1])
			}
		}
	})
}
