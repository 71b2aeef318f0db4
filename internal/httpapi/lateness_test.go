package httpapi

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"
)

// The lateness histogram of a job given a run_at years in the past records the moments from its
// enqueue to its lease, not the years.
func TestLatenessOfAPastRunAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("late", map[string]any{"run_at": "2001-01-01T00:00:00.000Z"})
	e.reserveOne("late", nil)
	metrics := string(e.call("GET", "/metrics", nil).want(t, http.StatusOK).body)
	m := regexp.MustCompile(`(?m)^delayq_delivery_lateness_seconds_sum\{mode="pull"\} (\S+)$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("no pull lateness in:\n%s", metrics)
	}
	if sum, err := strconv.ParseFloat(m[1], 64); err != nil || sum > 10 {
		t.Fatalf("lateness sum %s s for one job reserved right after its enqueue", m[1])
	}
}
