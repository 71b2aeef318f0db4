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
	for _, series := range []string{`delayq_delivery_lateness_seconds_sum\{mode="pull"\}`, `delayq_delivery_lateness_by_topic_seconds_sum\{topic="late"\}`} {
		m := regexp.MustCompile(`(?m)^` + series + ` (\S+)$`).FindStringSubmatch(metrics)
		if m == nil {
			t.Fatalf("no %s in:\n%s", series, metrics)
		}
		if sum, err := strconv.ParseFloat(m[1], 64); err != nil || sum > 10 {
			t.Fatalf("%s: %s s for one job reserved right after its enqueue", series, m[1])
		}
	}
}
