// Package middleware has ready-made delayq.Middleware for a Worker's handlers: a log line per
// job, a time limit per job, and Prometheus metrics of handler durations and outcomes.
//
//	w.Use(middleware.Logging(logger), middleware.Metrics(prometheus.DefaultRegisterer), middleware.Timeout(time.Minute))
package middleware

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq"
)

// Logging logs every job a handler finishes: at Debug when it succeeded, at Warn with the error
// when it failed, with the topic, id, attempts (Job.Attempts) and how long the handler took.
func Logging(log *slog.Logger) delayq.Middleware {
	return func(next delayq.Handler) delayq.Handler {
		return func(ctx context.Context, job *delayq.Job) error {
			start := time.Now()
			err := next(ctx, job)
			attrs := []any{"topic", job.Topic, "id", job.ID, "attempts", job.Attempts, "took", time.Since(start)}
			if err != nil {
				log.WarnContext(ctx, "delayq: handler failed", append(attrs, "err", err)...)
			} else {
				log.DebugContext(ctx, "delayq: handler done", attrs...)
			}
			return err
		}
	}
}

// ErrTimeout is the cause of a handler's context when Timeout ended it, and the error a job
// gets when its handler returns nothing else after its time ran out.
var ErrTimeout = errors.New("delayq: the handler's time ran out")

// Timeout gives each job's handler at most d: its context ends then, with ErrTimeout as the
// cause. A handler that returns nil after its context ended still fails, with ErrTimeout, so
// that the job is retried rather than acked half done. The job's TTR still bounds its lease.
func Timeout(d time.Duration) delayq.Middleware {
	return func(next delayq.Handler) delayq.Handler {
		return func(ctx context.Context, job *delayq.Job) error {
			ctx, cancel := context.WithTimeoutCause(ctx, d, ErrTimeout)
			defer cancel()
			err := next(ctx, job)
			if err == nil && errors.Is(context.Cause(ctx), ErrTimeout) {
				return ErrTimeout
			}
			return err
		}
	}
}

// Metrics records each handler run in the histogram delayq_worker_handler_duration_seconds, by topic
// and outcome ("ok", "error", or "panic", which it lets go on to the Worker's recovery), on
// reg. It panics when reg holds a different metric of that name, as prometheus.MustRegister
// does; middleware made twice on one registry share the histogram.
func Metrics(reg prometheus.Registerer) delayq.Middleware {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "delayq_worker_handler_duration_seconds",
		Help:    "How long a Worker's handlers took, by topic and outcome (ok, error, panic).",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms to about 4 min
	}, []string{"topic", "outcome"})
	if err := reg.Register(h); err != nil {
		are, ok := err.(prometheus.AlreadyRegisteredError)
		if !ok {
			panic(fmt.Sprintf("delayq middleware: registering its metrics: %v", err))
		}
		h = are.ExistingCollector.(*prometheus.HistogramVec)
	}
	return func(next delayq.Handler) delayq.Handler {
		return func(ctx context.Context, job *delayq.Job) (err error) {
			start := time.Now()
			outcome := "panic"
			defer func() { h.WithLabelValues(job.Topic, outcome).Observe(time.Since(start).Seconds()) }()
			err = next(ctx, job)
			outcome = "ok"
			if err != nil {
				outcome = "error"
			}
			return err
		}
	}
}
