package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestObserveLatenessByModeAndTopic(t *testing.T) {
	m := New(prometheus.NewRegistry())
	m.ObserveLateness("emails", "pull", 3*time.Millisecond)
	m.ObserveLateness("emails", "push", 2*time.Second)
	m.ObserveLateness("reports", "pull", time.Millisecond)
	for _, c := range []struct {
		vec   *prometheus.HistogramVec
		label string
		want  int
	}{
		{m.Lateness, "pull", 2},
		{m.Lateness, "push", 1},
		{m.TopicLateness, "emails", 2},
		{m.TopicLateness, "reports", 1},
	} {
		count := sampleCount(t, c.vec, c.label)
		if int(count) != c.want {
			t.Errorf("%s: %d observations, want %d", c.label, count, c.want)
		}
	}
}

// sampleCount is how many observations the histogram of vec with label value holds.
func sampleCount(t *testing.T, vec *prometheus.HistogramVec, value string) uint64 {
	t.Helper()
	var d dto.Metric
	if err := vec.WithLabelValues(value).(prometheus.Histogram).Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetHistogram().GetSampleCount()
}

func TestForgetTopicsDropsTheirLateness(t *testing.T) {
	m := New(prometheus.NewRegistry())
	m.ObserveLateness("gone", "pull", time.Millisecond)
	m.ObserveLateness("kept", "pull", time.Millisecond)
	m.Enqueued.WithLabelValues("gone").Inc()
	m.ForgetTopics(m.SeriesTopics(), map[string]bool{"kept": true})
	if got := seriesCount(m.TopicLateness); got != 1 {
		t.Errorf("per-topic lateness series after forgetting a topic: %d, want 1", got)
	}
	if got := seriesCount(m.Enqueued); got != 0 {
		t.Errorf("enqueue series after forgetting their topic: %d, want 0", got)
	}
	if got := seriesCount(m.Lateness); got != 1 {
		t.Errorf("lateness by mode has %d series, want the one of pull", got)
	}
}

// seriesCount is how many series c exports.
func seriesCount(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	n := 0
	for range ch {
		n++
	}
	return n
}
