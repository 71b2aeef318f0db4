package dashboard

import (
	"math"
	"time"
)

// topicLatenessMetric is the lateness histogram by topic; the overview shows each topic's p50
// and p99 over the last historySpan from it.
const topicLatenessMetric = "delayq_delivery_lateness_by_topic_seconds"

// latenessSnapStep is how far apart a topic's kept lateness samples are: per-topic memory is
// about historySpan/latenessSnapStep bucket lists, whatever historyStep is.
const latenessSnapStep = time.Minute

// topicLateness is one topic's lateness histogram over the last historySpan.
type topicLateness struct {
	now   []float64  // the latest cumulative bucket counts
	snaps []lateSnap // earlier ones, at least latenessSnapStep apart, oldest first
}

// lateSnap is a topic's cumulative bucket counts at a sample.
type lateSnap struct {
	at    time.Time
	cumul []float64
}

// add records cumul, read at now; the oldest snapshot kept is the newest one at least
// historySpan old, so that the window covers the whole last hour.
func (l *topicLateness) add(now time.Time, cumul []float64) {
	l.now = cumul
	if len(l.snaps) == 0 || now.Sub(l.snaps[len(l.snaps)-1].at) >= latenessSnapStep {
		l.snaps = append(l.snaps, lateSnap{now, cumul})
	}
	for len(l.snaps) > 1 && !l.snaps[1].at.After(now.Add(-historySpan)) {
		l.snaps = l.snaps[1:]
	}
}

// quantiles are the p50 and p99 of the deliveries since the oldest snapshot, in seconds; NaN
// without deliveries.
func (l *topicLateness) quantiles(bounds []float64) (p50, p99 float64) {
	if len(l.snaps) == 0 {
		return math.NaN(), math.NaN()
	}
	steps := bucketSteps(bounds, l.snaps[0].cumul, bounds, l.now)
	return quantile(0.5, bounds, steps), quantile(0.99, bounds, steps)
}

// sampleTopicLateness adds a sample of every topic's lateness histogram at now, and forgets
// the topics whose series are gone (the metrics drop a deleted topic's). A topic first seen
// after the first sample had all its deliveries since the previous one: its window starts
// from zero.
func (h *history) sampleTopicLateness(now time.Time, first bool, bounds []float64, byTopic map[string][]float64) {
	if len(bounds) != len(h.lateBounds) {
		clear(h.late)
	}
	h.lateBounds = bounds
	for topic := range h.late {
		if byTopic[topic] == nil {
			delete(h.late, topic)
		}
	}
	for topic, cumul := range byTopic {
		l := h.late[topic]
		if l == nil {
			l = &topicLateness{}
			h.late[topic] = l
			if !first {
				l.snaps = []lateSnap{{now, make([]float64, len(cumul))}}
			}
		}
		l.add(now, cumul)
	}
}

// topicQuantiles are topic's lateness p50 and p99 over the last hour, in seconds; NaN without
// deliveries. The caller holds h.mu.
func (h *history) topicQuantiles(topic string) (p50, p99 float64) {
	l := h.late[topic]
	if l == nil {
		return math.NaN(), math.NaN()
	}
	return l.quantiles(h.lateBounds)
}

// millis writes a lateness in seconds as milliseconds; "—" for NaN.
func millis(seconds float64) string {
	if math.IsNaN(seconds) {
		return "—"
	}
	return formatValue(seconds*1000) + " ms"
}
