package apiv1

import (
	"encoding/json"
	"testing"
	"time"
)

func TestTimeIsWrittenInUTCWithMilliseconds(t *testing.T) {
	t.Parallel()
	seoul := time.FixedZone("KST", 9*3600)
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"another zone", time.Date(2026, 11, 22, 10, 0, 0, 123_000_000, seoul), `"2026-11-22T01:00:00.123Z"`},
		{"whole seconds keep their zeros", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), `"2026-01-02T03:04:05.000Z"`},
		{"finer digits are cut, not rounded", time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.UTC), `"2026-01-02T03:04:05.999Z"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(Time{tt.in})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s, want %s", got, tt.want)
			}
			if s := `"` + (Time{tt.in}).String() + `"`; s != tt.want {
				t.Errorf("String = %s, want %s", s, tt.want)
			}
		})
	}
}

func TestTimeReadsAnyRFC3339Time(t *testing.T) {
	t.Parallel()
	want := time.Date(2020, 1, 2, 1, 4, 5, 678_000_000, time.UTC)
	for _, in := range []string{`"2020-01-02T01:04:05.678Z"`, `"2020-01-02T03:04:05.678+02:00"`, `"2020-01-02T01:04:05.678000Z"`} {
		var got Time
		if err := json.Unmarshal([]byte(in), &got); err != nil {
			t.Errorf("Unmarshal(%s): %v", in, err)
			continue
		}
		if !got.Equal(want) {
			t.Errorf("Unmarshal(%s) = %v, want %v", in, got, want)
		}
	}
	for _, in := range []string{`"tomorrow"`, `"2020-01-02 01:04:05Z"`, `12`, `null`} {
		var got Time
		if err := json.Unmarshal([]byte(in), &got); err == nil && in != `null` {
			t.Errorf("Unmarshal(%s) = %v, want an error", in, got)
		}
	}
}

func TestFormatMs(t *testing.T) {
	t.Parallel()
	for ms, want := range map[int64]string{0: "0s", 1500: "1.5s", 180000: "3m", 5400000: "1h30m", 3600000: "1h", 3601000: "1h0m1s", 54000000: "15h"} {
		if got := FormatMs(ms); got != want {
			t.Errorf("FormatMs(%d) = %q, want %q", ms, got, want)
		}
	}
}
