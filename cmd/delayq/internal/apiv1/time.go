package apiv1

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// TimeLayout is the API's time format: RFC 3339 with exactly millisecond precision. Times are
// written in UTC, so the zone is always "Z".
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t in TimeLayout, in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// FormatMs writes a *_ms field for people: a Go duration without zero units, such as 30s, 3m
// or 1h30m.
func FormatMs(ms int64) string {
	s := (time.Duration(ms) * time.Millisecond).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Time is a time in an answer of the API. It is written in TimeLayout and read from any
// RFC 3339 time.
type Time struct{ time.Time }

// MarshalJSON writes the time in TimeLayout, in UTC.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + FormatTime(t.Time) + `"`), nil
}

// UnmarshalJSON reads an RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("apiv1: time: %w", err)
	}
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("apiv1: time: %w", err)
	}
	t.Time = p
	return nil
}

// String returns the time in TimeLayout, in UTC.
func (t Time) String() string { return FormatTime(t.Time) }

// timePtr returns t as an optional Time: nil when t is zero.
func timePtr(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t}
}
