// Package middleware has ready-made delayq.Middleware for a Worker's handlers: a log line per
// job, a time limit per job, Prometheus metrics of handler durations and outcomes, and an
// OpenTelemetry span around the handler.
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
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/delayq/delayq"
)

// Logging logs every job a handler finishes: at Debug when it succeeded, at Warn with the error
// when it failed, with the topic, id, attempts (Job.Attempts), how long the handler took, and
// the trace id of the delivery when it is traced.
func Logging(log *slog.Logger) delayq.Middleware {
	return func(next delayq.Handler) delayq.Handler {
		return func(ctx context.Context, job *delayq.Job) error {
			start := time.Now()
			err := next(ctx, job)
			attrs := []any{"topic", job.Topic, "id", job.ID, "attempts", job.Attempts, "took", time.Since(start)}
			if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
				attrs = append(attrs, "trace_id", sc.TraceID().String())
			}
			if err != nil {
				log.WarnContext(ctx, "delayq: handler failed", append(attrs, "err", err)...)
			} else {
				log.DebugContext(ctx, "delayq: handler done", attrs...)
			}
			return err
		}
	}
}

// Tracing runs the rest of the chain in a span of its own, "handle <topic>", a child of the
// Worker's delivery span ("process <topic>", which every Worker makes): place it innermost to
// time the handler apart from the middleware before it. The span records the handler's error,
// and a panic, which it lets go on to the Worker's recovery. tp nil means the global provider.
func Tracing(tp trace.TracerProvider) delayq.Middleware {
	return func(next delayq.Handler) delayq.Handler {
		return func(ctx context.Context, job *delayq.Job) (err error) {
			p := tp
			if p == nil {
				p = otel.GetTracerProvider()
			}
			ctx, span := p.Tracer(tracerName).Start(ctx, "handle "+job.Topic, trace.WithAttributes(
				semconv.MessagingSystemKey.String("delayq"), semconv.MessagingDestinationName(job.Topic),
				semconv.MessagingMessageID(job.ID)))
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
					endSpan(span, err)
					panic(r)
				}
				endSpan(span, err)
			}()
			return next(ctx, job)
		}
	}
}

// tracerName is the instrumentation scope of Tracing's spans.
const tracerName = "github.com/delayq/delayq/middleware"

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
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
