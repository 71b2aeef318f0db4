// Package metrics holds delayq server's Prometheus metrics, registered on a registry the caller
// owns; nothing here is global.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are the server's counters and histograms. Per-topic gauges are read at scrape time
// by a collector of the HTTP layer.
type Metrics struct {
	Enqueued  *prometheus.CounterVec   // by topic
	Delivered *prometheus.CounterVec   // by topic and mode (pull, push)
	Acked     *prometheus.CounterVec   // by topic
	Nacked    *prometheus.CounterVec   // by topic
	Retried   *prometheus.CounterVec   // by topic: failed attempts that will be retried
	Dead      *prometheus.CounterVec   // by topic: jobs that went to the dead letters
	Cancelled *prometheus.CounterVec   // by topic
	Webhooks  *prometheus.CounterVec   // by topic and outcome (ok, http_error, gone, timeout, refused, error)
	Lateness  *prometheus.HistogramVec // by mode: lease time minus due time (Job.Lateness), seconds
	// TopicLateness is Lateness by topic (over both modes), so that a late topic shows among
	// punctual ones; ObserveLateness records both.
	TopicLateness *prometheus.HistogramVec
	Duration      *prometheus.HistogramVec // by mode: handler or webhook duration, seconds

	Requests        *prometheus.CounterVec   // HTTP requests by route template, method and status code
	RequestDuration *prometheus.HistogramVec // by route template, method and status code, seconds
}

// latenessBuckets are the bounds of both lateness histograms, in seconds.
var latenessBuckets = []float64{.001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New creates the metrics and registers them on reg.
func New(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "delayq", Name: name, Help: help}, labels)
	}
	m := &Metrics{
		Enqueued:  counter("jobs_enqueued_total", "Jobs enqueued.", "topic"),
		Delivered: counter("jobs_delivered_total", "Jobs handed to a consumer or a webhook.", "topic", "mode"),
		Acked:     counter("jobs_acked_total", "Jobs acknowledged as done.", "topic"),
		Nacked:    counter("jobs_nacked_total", "Attempts reported as failed.", "topic"),
		Retried:   counter("jobs_retried_total", "Failed attempts scheduled for a retry.", "topic"),
		Dead:      counter("jobs_dead_total", "Jobs sent to the dead letters.", "topic"),
		Cancelled: counter("jobs_cancelled_total", "Jobs cancelled.", "topic"),
		Webhooks:  counter("webhook_attempts_total", "Webhook deliveries by outcome.", "topic", "outcome"),
		Lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "delayq", Name: "delivery_lateness_seconds",
			Help:    "From when a job was due (never before it was enqueued) to when Redis leased it, by the Redis server's clock.",
			Buckets: latenessBuckets,
		}, []string{"mode"}),
		TopicLateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "delayq", Name: "delivery_lateness_by_topic_seconds",
			Help:    "delayq_delivery_lateness_seconds by topic, over both delivery modes.",
			Buckets: latenessBuckets,
		}, []string{"topic"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "delayq", Name: "handler_duration_seconds",
			Help:    "Time from delivery to ack or nack (pull), or of the webhook call (push).",
			Buckets: prometheus.DefBuckets,
		}, []string{"mode"}),
		Requests: counter("http_requests_total", "HTTP requests by route template, method and status code.", "route", "method", "code"),
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "delayq", Name: "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request (a reserve's long-poll wait included), by route template, method and status code.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "method", "code"}),
	}
	reg.MustRegister(m.Enqueued, m.Delivered, m.Acked, m.Nacked, m.Retried, m.Dead, m.Cancelled,
		m.Webhooks, m.Lateness, m.TopicLateness, m.Duration, m.Requests, m.RequestDuration)
	return m
}

// ObserveLateness records how late a delivery of topic in mode (pull, push) was leased after it
// was due (Job.Lateness).
func (m *Metrics) ObserveLateness(topic, mode string, late time.Duration) {
	m.Lateness.WithLabelValues(mode).Observe(late.Seconds())
	m.TopicLateness.WithLabelValues(topic).Observe(late.Seconds())
}

// byTopic are the series labelled with a topic.
func (m *Metrics) byTopic() []*prometheus.MetricVec {
	return []*prometheus.MetricVec{
		m.Enqueued.MetricVec, m.Delivered.MetricVec, m.Acked.MetricVec, m.Nacked.MetricVec,
		m.Retried.MetricVec, m.Dead.MetricVec, m.Cancelled.MetricVec, m.Webhooks.MetricVec,
		m.TopicLateness.MetricVec,
	}
}

// SeriesTopics returns the topics that have per-topic series now. A caller that drops the
// series of topics no longer registered reads this before it reads the registry (see
// ForgetTopics).
func (m *Metrics) SeriesTopics() map[string]bool {
	topics := map[string]bool{}
	for _, vec := range m.byTopic() {
		ch := make(chan prometheus.Metric, 64)
		go func() {
			vec.Collect(ch)
			close(ch)
		}()
		for metric := range ch {
			var d dto.Metric
			if metric.Write(&d) != nil {
				continue
			}
			for _, l := range d.GetLabel() {
				if l.GetName() == "topic" {
					topics[l.GetValue()] = true
				}
			}
		}
	}
	return topics
}

// ForgetTopics stops exporting the per-topic series of each topic of had (SeriesTopics, read
// before live) that live, the registered topics, does not hold: a topic that no longer exists
// leaves no series behind. The order matters: a job is counted after its topic is registered,
// so a topic whose first series appear while the registry is read is not in had, and a topic
// registered meanwhile is never taken for gone.
func (m *Metrics) ForgetTopics(had, live map[string]bool) {
	for topic := range had {
		if live[topic] {
			continue
		}
		for _, vec := range m.byTopic() {
			vec.DeletePartialMatch(prometheus.Labels{"topic": topic})
		}
	}
}
