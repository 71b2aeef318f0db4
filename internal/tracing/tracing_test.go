package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// Without an SDK a delivery's span records nothing, but its context still carries the job's
// trace to the handler (so that a job the handler enqueues joins it), never the trace of the
// context the Worker runs in, and none at all when the delivery is to start a trace of its own.
func TestStartJobWithoutSDKPassesOnTheJobsTraceOnly(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	headers := map[string]string{TraceParent: parent}
	job := trace.SpanContextFromContext(Extract(context.Background(), headers))
	workers := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled,
	}))
	tr := New(nil)
	for _, c := range []struct {
		name    string
		ctx     context.Context
		headers map[string]string
		link    bool
		want    trace.SpanContext
	}{
		{"the job's trace", context.Background(), headers, false, job},
		{"the job's trace, not the Worker's", workers, headers, false, job},
		{"linked: a trace of its own", workers, headers, true, trace.SpanContext{}},
		{"a job without a trace: not the Worker's", workers, nil, false, trace.SpanContext{}},
		{"a job without a trace", context.Background(), nil, false, trace.SpanContext{}},
	} {
		ctx, span := tr.StartJob(c.ctx, Process, "topic", "id", 1, c.headers, c.link)
		span.End()
		if span.IsRecording() {
			t.Errorf("%s: the span records without an SDK", c.name)
		}
		if got := trace.SpanContextFromContext(ctx); !got.Equal(c.want) {
			t.Errorf("%s: the handler's context carries %v, want %v", c.name, got.TraceID(), c.want.TraceID())
		}
	}
}
