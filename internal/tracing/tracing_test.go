package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
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

// Without an SDK, Start makes no span: the caller's context, which carries whatever trace it
// was in, goes on as it is, and nothing is allocated for tracing.
func TestStartWithoutSDKMakesNoSpan(t *testing.T) {
	if !isDefault(otel.GetTracerProvider()) {
		t.Fatalf("OpenTelemetry's default global provider is %T, which isDefault does not know", otel.GetTracerProvider())
	}
	tr := New(nil)
	in := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled,
	}))
	ctx, span := tr.Start(in, Send, "topic")
	span.End()
	if ctx != in || span.IsRecording() || !trace.SpanContextFromContext(in).Equal(trace.SpanContextFromContext(ctx)) {
		t.Errorf("Start without an SDK changed the context or made a span that records")
	}
	if n := testing.AllocsPerRun(100, func() { _, s := tr.Start(in, Send, "topic"); s.End() }); n != 0 {
		t.Errorf("Start without an SDK allocates %v times", n)
	}
	// Once a provider is installed, the global one is no longer the one the Tracer was made
	// with, and its spans come from the provider installed.
	installed := Tracer{t: tr.t, unset: noop.NewTracerProvider()}
	if installed.quiet() {
		t.Errorf("a Tracer whose provider was replaced stays quiet")
	}
}
