package dashboard

import (
	"context"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The charts show what this server's own metrics counted: jobs enqueued, delivered, acked and
// failed through its API and webhook delivery, and the lateness of its deliveries. history
// samples them from the server's registry every historyStep and keeps the last historySpan,
// in memory: a restart starts the charts afresh, and jobs that Go programs enqueue or consume
// with the library directly are not in them.
const (
	historyStep = 10 * time.Second
	historySpan = time.Hour
)

// The counters charted, by metric name, and the lateness histogram.
var rateMetrics = [...]string{"delayq_jobs_enqueued_total", "delayq_jobs_delivered_total", "delayq_jobs_acked_total", "delayq_jobs_nacked_total"}

const latenessMetric = "delayq_delivery_lateness_seconds"

// rates are per-second rates of the charted counters, one value per step, oldest first.
type rates [len(rateMetrics)][]float64

// history is the charts' memory.
type history struct {
	g    prometheus.Gatherer
	keep int // steps kept

	mu     sync.Mutex
	last   time.Time
	counts map[string]*[len(rateMetrics)]float64 // the previous sample's counters by topic
	bounds []float64                             // lateness bucket upper bounds
	cumul  []float64                             // the previous sample's cumulative bucket counts
	ends   []time.Time                           // the end of each step kept
	total  rates
	topics map[string]*rates
	p50    []float64 // lateness of each step, seconds; NaN for a step without deliveries
	p99    []float64

	lateBounds []float64                 // the per-topic lateness bucket upper bounds
	late       map[string]*topicLateness // by topic
}

func newHistory(g prometheus.Gatherer) *history {
	return &history{g: g, keep: int(historySpan / historyStep), counts: map[string]*[len(rateMetrics)]float64{}, topics: map[string]*rates{}, late: map[string]*topicLateness{}}
}

// run samples every historyStep until ctx ends.
func (h *history) run(ctx context.Context) {
	t := time.NewTicker(historyStep)
	defer t.Stop()
	h.sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			h.sample(now)
		}
	}
}

// sample reads the registry at now and adds a step since the previous sample.
func (h *history) sample(now time.Time) {
	families, err := h.g.Gather()
	if err != nil && len(families) == 0 {
		return
	}
	r := readCounters(families)
	counts, bounds, cumul := r.counts, r.bounds, r.cumul
	h.mu.Lock()
	defer h.mu.Unlock()
	first := h.last.IsZero()
	secs := now.Sub(h.last).Seconds()
	h.last = now
	h.sampleTopicLateness(now, first, r.topicBounds, r.topicCumul)
	if first || secs <= 0 {
		h.counts, h.bounds, h.cumul = counts, bounds, cumul
		return
	}
	h.ends = keepLast(append(h.ends, now), h.keep)
	var total [len(rateMetrics)]float64
	for topic, c := range counts {
		prev := h.counts[topic]
		r := h.topics[topic]
		if r == nil {
			r = &rates{}
			h.topics[topic] = r
		}
		for i := range c {
			d := c[i]
			if prev != nil && c[i] >= prev[i] {
				d = c[i] - prev[i]
			}
			r[i] = keepLast(append(r[i], d/secs), h.keep)
			total[i] += d / secs
		}
	}
	for i := range total {
		h.total[i] = keepLast(append(h.total[i], total[i]), h.keep)
	}
	steps := bucketSteps(h.bounds, h.cumul, bounds, cumul)
	h.p50 = keepLast(append(h.p50, quantile(0.5, bounds, steps)), h.keep)
	h.p99 = keepLast(append(h.p99, quantile(0.99, bounds, steps)), h.keep)
	h.counts, h.bounds, h.cumul = counts, bounds, cumul
}

func keepLast[T any](s []T, n int) []T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// reading is what sample reads from the registry.
type reading struct {
	counts        map[string]*[len(rateMetrics)]float64 // the charted counters by topic
	bounds, cumul []float64                             // the lateness histogram, over its modes
	topicBounds   []float64                             // the per-topic lateness histogram's bounds
	topicCumul    map[string][]float64                  // and its cumulative buckets by topic
}

// readCounters sums the charted counters by topic (over their other labels) and the lateness
// histogram's cumulative buckets (over its modes), and reads the per-topic lateness histogram.
func readCounters(families []*dto.MetricFamily) reading {
	r := reading{counts: map[string]*[len(rateMetrics)]float64{}, topicCumul: map[string][]float64{}}
	for _, f := range families {
		switch f.GetName() {
		case latenessMetric:
			r.bounds, r.cumul = sumBuckets(f.GetMetric())
			continue
		case topicLatenessMetric:
			for _, m := range f.GetMetric() {
				r.topicBounds, r.topicCumul[labelValue(m, "topic")] = sumBuckets([]*dto.Metric{m})
			}
			continue
		}
		for i, name := range rateMetrics {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				topic := labelValue(m, "topic")
				if r.counts[topic] == nil {
					r.counts[topic] = &[len(rateMetrics)]float64{}
				}
				r.counts[topic][i] += m.GetCounter().GetValue()
			}
		}
	}
	return r
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// sumBuckets adds up the cumulative buckets of histograms that share their bounds, the last
// one +Inf (every observation).
func sumBuckets(ms []*dto.Metric) (bounds, cumul []float64) {
	for _, m := range ms {
		h := m.GetHistogram()
		add := func(i int, bound, count float64) {
			if i == len(bounds) {
				bounds, cumul = append(bounds, bound), append(cumul, 0)
			}
			cumul[i] += count
		}
		for i, b := range h.GetBucket() {
			add(i, b.GetUpperBound(), float64(b.GetCumulativeCount()))
		}
		add(len(h.GetBucket()), math.Inf(1), float64(h.GetSampleCount()))
	}
	return bounds, cumul
}

// bucketSteps is how much each cumulative bucket grew between two samples.
func bucketSteps(prevBounds, prev, bounds, now []float64) []float64 {
	out := make([]float64, len(now))
	for i := range now {
		out[i] = now[i]
		if len(prevBounds) == len(bounds) && now[i] >= prev[i] {
			out[i] = now[i] - prev[i]
		}
	}
	return out
}

// quantile estimates the q-quantile from cumulative bucket counts whose last bound is +Inf,
// as Prometheus's histogram_quantile does: linearly within the bucket the rank falls in. NaN
// without observations; the highest finite bound when the rank falls past it.
func quantile(q float64, bounds, cumul []float64) float64 {
	if len(cumul) < 2 || cumul[len(cumul)-1] == 0 {
		return math.NaN()
	}
	rank := q * cumul[len(cumul)-1]
	i := sort.SearchFloat64s(cumul, rank)
	if i >= len(bounds)-1 {
		return bounds[len(bounds)-2]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = bounds[i-1], cumul[i-1]
	}
	inBucket := cumul[i] - below
	if inBucket == 0 {
		return bounds[i]
	}
	return lower + (bounds[i]-lower)*(rank-below)/inBucket
}
