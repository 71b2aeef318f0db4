package cli

import (
	"strings"
	"testing"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// A job put over the beanstalkd protocol has no retry limit: its max_retries row says so
// instead of showing 2147483647.
// The snoozes a job took show with their limit, or that it has none.
func TestPrintJobShowsSnoozes(t *testing.T) {
	for _, tc := range []struct {
		snoozes, most int
		want          string
	}{
		{0, 0, "snoozes      0\nmax_snoozes  no limit\n"},
		{2, 5, "snoozes      2\nmax_snoozes  5\n"},
	} {
		var out strings.Builder
		printJob(&out, &apiv1.Job{Topic: "t", ID: "j", State: "ready", Snoozes: tc.snoozes, MaxSnoozes: tc.most})
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("snoozes %d of %d printed as:\n%s\nwant the rows %q", tc.snoozes, tc.most, out.String(), tc.want)
		}
	}
}

func TestPrintJobShowsTheRetryLimit(t *testing.T) {
	for _, tc := range []struct {
		maxRetries int
		want       string
	}{
		{5, "max_retries  5\n"},
		{0, "max_retries  0\n"},
		{delayq.NoRetryLimit, "max_retries  no limit\n"},
	} {
		var out strings.Builder
		printJob(&out, &apiv1.Job{Topic: "t", ID: "j", State: "ready", MaxRetries: tc.maxRetries})
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("max_retries %d printed as:\n%s\nwant a row %q", tc.maxRetries, out.String(), tc.want)
		}
	}
}
