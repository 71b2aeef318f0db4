package httpapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/metrics"
)

// topicCollector reads every topic's job counts from the store at scrape time.
type topicCollector struct {
	topics  func(context.Context) ([]delayq.TopicStats, error) // every topic's counts: Client.Topics
	m       *metrics.Metrics                                   // its per-topic series of topics that are gone are dropped; may be nil
	timeout time.Duration
	inline  bool // the client ends calls at their context's deadline: see bounded
	log     *slog.Logger

	jobs    *prometheus.Desc
	oldest  *prometheus.Desc
	expired *prometheus.Desc
	up      *prometheus.Desc
}

func newTopicCollector(c *delayq.Client, m *metrics.Metrics, timeout time.Duration, inline bool, log *slog.Logger) *topicCollector {
	return &topicCollector{
		topics:  c.Topics,
		m:       m,
		timeout: timeout,
		inline:  inline,
		log:     log,
		jobs: prometheus.NewDesc("delayq_jobs", "Jobs by topic and state, read from the store at scrape time.",
			[]string{"topic", "state"}, nil),
		oldest: prometheus.NewDesc("delayq_oldest_ready_seconds", "How long the oldest ready job of a topic has waited.",
			[]string{"topic"}, nil),
		expired: prometheus.NewDesc("delayq_leases_expired_total", "Leases that reached their deadline unsettled, by topic: each such job was retried or went dead. Counted in Redis, the same on every server.",
			[]string{"topic"}, nil),
		up: prometheus.NewDesc("delayq_store_up", "1 when the scrape could read the store, else 0.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (t *topicCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- t.jobs
	ch <- t.oldest
	ch <- t.expired
	ch <- t.up
}

// Collect implements prometheus.Collector. When the store cannot be read, it reports
// delayq_store_up 0 and no per-topic series rather than failing the scrape.
func (t *topicCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	var had map[string]bool
	if t.m != nil {
		had = t.m.SeriesTopics() // before the registry is read: see ForgetTopics
	}
	topics, err := bounded(ctx, t.inline, t.topics)
	if err != nil {
		t.log.Warn("httpapi: reading topic counts for metrics", "err", err)
		ch <- prometheus.MustNewConstMetric(t.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(t.up, prometheus.GaugeValue, 1)
	if t.m != nil {
		live := make(map[string]bool, len(topics))
		for _, s := range topics {
			live[s.Name] = true
		}
		t.m.ForgetTopics(had, live)
	}
	for _, s := range topics {
		for _, c := range []struct {
			state string
			n     int64
		}{
			{string(delayq.StateDelayed), s.Delayed},
			{string(delayq.StateReady), s.Ready},
			{string(delayq.StateReserved), s.Reserved},
			{string(delayq.StateDead), s.Dead},
		} {
			ch <- prometheus.MustNewConstMetric(t.jobs, prometheus.GaugeValue, float64(c.n), s.Name, c.state)
		}
		ch <- prometheus.MustNewConstMetric(t.oldest, prometheus.GaugeValue, s.OldestReady.Seconds(), s.Name)
		ch <- prometheus.MustNewConstMetric(t.expired, prometheus.CounterValue, float64(s.LeasesExpired), s.Name)
	}
}
