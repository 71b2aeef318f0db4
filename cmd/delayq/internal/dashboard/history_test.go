package dashboard

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/metrics"
)

func TestHistoryRatesAndLateness(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	h := newHistory(reg)
	t0 := time.Unix(1_000_000, 0)
	m.Enqueued.WithLabelValues("a").Add(5) // before the first sample: not a rate
	h.sample(t0)
	m.Enqueued.WithLabelValues("a").Add(20)
	m.Enqueued.WithLabelValues("b").Add(10)
	m.Delivered.WithLabelValues("a", "pull").Add(6)
	m.Delivered.WithLabelValues("a", "push").Add(4)
	m.Nacked.WithLabelValues("a").Add(1)
	for range 98 {
		m.Lateness.WithLabelValues("pull").Observe(0.0015) // in the (1 ms, 2 ms] bucket
	}
	m.Lateness.WithLabelValues("push").Observe(0.3)
	m.Lateness.WithLabelValues("push").Observe(0.3)
	h.sample(t0.Add(10 * time.Second))
	a := h.topics["a"]
	if a == nil || a[0][0] != 2 || a[1][0] != 1 || a[2][0] != 0 || a[3][0] != 0.1 {
		t.Fatalf("topic a's rates = %v", a)
	}
	if h.total[0][0] != 3 {
		t.Errorf("total enqueue rate = %v, want 3/s", h.total[0])
	}
	if p50 := h.p50[0]; math.Abs(p50-0.0015102) > 1e-6 {
		t.Errorf("p50 = %v, want about 1.51 ms", p50)
	}
	if p99 := h.p99[0]; p99 <= 0.25 || p99 > 0.5 {
		t.Errorf("p99 = %v, want within (0.25 s, 0.5 s]", p99)
	}
	h.sample(t0.Add(20 * time.Second)) // nothing happened
	if got := h.topics["a"][0]; len(got) != 2 || got[1] != 0 || !math.IsNaN(h.p50[1]) {
		t.Errorf("a quiet step: rates %v, p50 %v", got, h.p50)
	}
	if got := *h.recent("a"); got != (recentRates{Enqueue: "1", Ack: "0", Fail: "0.05", LateP50: "—", LateP99: "—"}) {
		t.Errorf("a's rates over the last minute = %+v", got)
	}
	if got := *h.recent("nobody"); got != (recentRates{"0", "0", "0", "—", "—"}) {
		t.Errorf("an unknown topic's rates = %+v", got)
	}
	for range h.keep + 5 {
		t0 = t0.Add(time.Minute)
		h.sample(t0)
	}
	if len(h.ends) != h.keep || len(h.total[0]) != h.keep || len(h.topics["b"][0]) != h.keep {
		t.Errorf("kept %d steps, want %d", len(h.ends), h.keep)
	}
}

func TestHistoryTopicLatenessOverTheLastHour(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	h := newHistory(reg)
	late := func(topic string) (string, string) {
		r := h.recent(topic)
		return r.LateP50, r.LateP99
	}
	t0 := time.Unix(1_000_000, 0)
	h.sample(t0)
	for range 98 {
		m.ObserveLateness("a", "pull", 1500*time.Microsecond) // in the (1 ms, 2 ms] bucket
	}
	m.ObserveLateness("a", "push", 300*time.Millisecond)
	m.ObserveLateness("a", "push", 300*time.Millisecond)
	m.Enqueued.WithLabelValues("b").Inc()
	now := t0.Add(historyStep)
	h.sample(now)
	if p50, p99 := late("a"); p50 != "1.51 ms" || p99 != "375 ms" {
		t.Errorf("a's lateness p50, p99 = %s, %s; want 1.51 ms, 375 ms", p50, p99)
	}
	if p50, p99 := late("b"); p50 != "—" || p99 != "—" {
		t.Errorf("b delivered nothing, yet its lateness is %s, %s", p50, p99)
	}
	for i := range 70 {
		now = now.Add(time.Minute)
		if i == 30 {
			for range 10 {
				m.ObserveLateness("a", "pull", 4*time.Millisecond) // in (2 ms, 5 ms]
			}
		}
		h.sample(now)
	}
	if p50, _ := late("a"); p50 != "3.5 ms" {
		t.Errorf("over the last hour a's p50 = %s, want 3.5 ms: the deliveries of an hour ago are out", p50)
	}
	if n := len(h.late["a"].snaps); n > int(historySpan/latenessSnapStep)+1 {
		t.Errorf("a topic keeps %d snapshots", n)
	}
	m.ForgetTopics(m.SeriesTopics(), map[string]bool{"b": true})
	h.sample(now.Add(historyStep))
	if p50, _ := late("a"); p50 != "—" || h.late["a"] != nil {
		t.Errorf("a deleted topic's lateness is still %s", p50)
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	inf := math.Inf(1)
	for _, tc := range []struct {
		name          string
		bounds, cumul []float64
		q, want       float64
	}{
		{"none", []float64{1, inf}, []float64{0, 0}, 0.5, math.NaN()},
		{"all in the first bucket", []float64{1, 2, inf}, []float64{10, 10, 10}, 0.5, 0.5},
		{"in the second", []float64{1, 2, inf}, []float64{0, 10, 10}, 0.99, 1.99},
		{"past the last bound", []float64{1, 2, inf}, []float64{0, 0, 10}, 0.5, 2},
	} {
		got := quantile(tc.q, tc.bounds, tc.cumul)
		if !(math.Abs(got-tc.want) < 1e-9 || (math.IsNaN(got) && math.IsNaN(tc.want))) {
			t.Errorf("%s: quantile = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestChartPoints(t *testing.T) {
	t.Parallel()
	c := newChart("t", "/s", 1, 3, []series{{"a", "c-a", []float64{2, math.NaN(), 4}}, {"b", "c-b", []float64{1}}})
	if c.Top != "4/s" || c.Lines[0].Points != "0.0,40.0 360.0,0.0" || c.Lines[1].Points != "360.0,60.0" || c.Lines[0].Last != "4/s" {
		t.Errorf("chart = %+v", c)
	}
}

func TestPagesShowCharts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	s := newSite(t, func(c *Config) { c.Gatherer = reg })
	s.enqueue("t", delayq.Spec{})
	if first := s.get("/"); strings.Contains(first.body, "<svg") || !strings.Contains(first.body, "The first sample comes") {
		t.Errorf("charts before any sample:\n%s", first.body)
	}
	now := time.Now()
	s.dash.hist.sample(now)
	m.Enqueued.WithLabelValues("t").Add(30)
	m.ObserveLateness("t", "pull", 1500*time.Microsecond)
	s.dash.hist.sample(now.Add(10 * time.Second))
	for path, want := range map[string]string{
		"/":                `<td class="n rates">3 · 0 · <span>0</span></td>`,
		"/?page=1":         "Jobs per second, all topics",
		"/?sort=name":      `<td class="n late">1.5 ms · 1.99 ms</td>`,
		"/overview/topics": "Delivery lateness",
		"/topics/t":        `<li class="c-enqueue">enqueue 3/s</li>`,
	} {
		a := s.get(path)
		if a.status != http.StatusOK || !strings.Contains(a.body, want) || !strings.Contains(a.body, "<polyline") {
			t.Errorf("GET %s: %d, lacks %q or a polyline:\n%.3000s", path, a.status, want, a.body)
		}
	}
}

// Where the dashboard shows lateness it says that lateness includes the time a due job waited
// for a free consumer: a topic with too few consumers looks late, however punctual delayq is.
func TestLatenessSaysItIncludesWaitingForAConsumer(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	s := newSite(t, func(c *Config) { c.Gatherer = reg })
	s.enqueue("t", delayq.Spec{})
	now := time.Now()
	s.dash.hist.sample(now)
	m.ObserveLateness("t", "pull", 1500*time.Microsecond)
	s.dash.hist.sample(now.Add(10 * time.Second))
	a := s.get("/")
	for _, want := range []string{
		`<p class="hint" id="lateness-note">Late: from when a job was due to when a consumer leased it, so it includes the time the job waited for a free consumer`,
		`<p class="hint chart-note">From when each job was due to when a consumer leased it, including the time it waited for a free consumer.</p>`,
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the overview lacks %q:\n%s", want, a.body)
		}
	}
}
