// Package tracing makes delayq's OpenTelemetry spans and carries W3C trace context in a job's
// headers. It uses the OpenTelemetry API only: with no SDK installed every span is a
// non-recording one that still passes on the trace context it was started in, so a job enqueued
// inside a request that carried a traceparent keeps it, whatever the process exports.
package tracing

import (
	"context"
	"reflect"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of delayq's spans.
const Name = "github.com/delayq/delayq"

// The headers that carry trace context (W3C Trace Context), as a job stores them.
const (
	TraceParent = "traceparent"
	TraceState  = "tracestate"
)

// W3C is the one propagator delayq uses for jobs and webhook requests, whatever the process's
// global propagator is: the format is part of the job.
var W3C = propagation.TraceContext{}

var systemAttr = semconv.MessagingSystemKey.String("delayq")

// Tracer starts delayq's spans.
type Tracer struct {
	t trace.Tracer
	// unset, for a Tracer over the global provider made while none was installed, is that
	// provider (OpenTelemetry's default, which records nothing until one is): while it is
	// still the global one, Start makes no span at all (see quiet).
	unset trace.TracerProvider
}

// New returns a Tracer over tp; nil means the global provider, including one installed later:
// the global provider's tracers pass their spans on to it.
func New(tp trace.TracerProvider) Tracer {
	if tp != nil {
		return Tracer{t: tp.Tracer(Name)}
	}
	g := otel.GetTracerProvider()
	t := Tracer{t: g.Tracer(Name)}
	if isDefault(g) {
		t.unset = g
	}
	return t
}

// isDefault tells whether tp is the global provider OpenTelemetry has before one is installed.
func isDefault(tp trace.TracerProvider) bool {
	return reflect.TypeOf(tp).String() == "*global.tracerProvider"
}

// quiet tells whether no span of t can record now: it follows the global provider, and none
// has been installed since t was made. Its spans would then be non-recording ones carrying
// the trace context they were started in, which the caller's context carries already, so
// making them is work for nothing: an enqueue, reserve or ack in a process without an SDK
// makes no span and allocates nothing for tracing.
func (t Tracer) quiet() bool { return t.unset != nil && otel.GetTracerProvider() == t.unset }

// noSpan is the span a quiet Tracer answers: it records nothing, and ending it ends nothing.
var noSpan = trace.SpanFromContext(context.Background())

// Op names a messaging operation: its span name starts with it.
type Op struct {
	name string
	kind []trace.SpanStartOption // the span kind, as a slice made once: no allocation per span
	typ  attribute.KeyValue
}

// The operations delayq traces.
var (
	Send    = newOp("send", trace.SpanKindProducer, semconv.MessagingOperationTypeSend)
	Receive = newOp("receive", trace.SpanKindClient, semconv.MessagingOperationTypeReceive)
	Process = newOp("process", trace.SpanKindConsumer, semconv.MessagingOperationTypeProcess)
	Deliver = newOp("deliver", trace.SpanKindConsumer, semconv.MessagingOperationTypeProcess)
	Ack     = newOp("ack", trace.SpanKindClient, semconv.MessagingOperationTypeSettle)
	Nack    = newOp("nack", trace.SpanKindClient, semconv.MessagingOperationTypeSettle)
	Release = newOp("release", trace.SpanKindClient, semconv.MessagingOperationTypeSettle)
)

func newOp(name string, kind trace.SpanKind, typ attribute.KeyValue) Op {
	return Op{name, []trace.SpanStartOption{trace.WithSpanKind(kind)}, typ}
}

// Start starts the span of op on topic, named "<op> <topic>" as the messaging conventions ask,
// with the given attributes besides the system, destination and operation. The attributes are
// set once the span has started, and only when it records. (A sampler sees the span's name and
// kind, which name the operation and topic, but not its attributes.) Without an SDK it makes
// no span (see quiet).
func (t Tracer) Start(ctx context.Context, op Op, topic string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t.quiet() {
		return ctx, noSpan
	}
	ctx, span := t.t.Start(ctx, op.name+" "+topic, op.kind...)
	if span.IsRecording() {
		span.SetAttributes(systemAttr, semconv.MessagingDestinationName(topic),
			semconv.MessagingOperationName(op.name), op.typ)
		span.SetAttributes(attrs...)
	}
	return ctx, span
}

// StartServer starts the span of an HTTP request, named by its method until its route is known.
func (t Tracer) StartServer(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t.quiet() {
		return ctx, noSpan
	}
	return t.t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// StartJob starts the span of op for one job: a child of the trace context in its headers or,
// with link set or without such a context, the start of a new trace, linked to that context if
// there is one. ctx's own span is never the parent: a Worker's deliveries do not join the trace
// of whatever started the Worker. Long delays make traces hours long; linking keeps each
// delivery its own trace. It runs once per delivery, so a span that does not record costs no
// attribute and no context more than it must.
func (t Tracer) StartJob(ctx context.Context, op Op, topic, id string, attempt int, headers map[string]string, link bool) (context.Context, trace.Span) {
	producer := trace.SpanContextFromContext(Extract(context.Background(), headers))
	parent := ctx
	switch {
	case producer.IsValid() && !link:
		parent = trace.ContextWithRemoteSpanContext(ctx, producer)
	case trace.SpanContextFromContext(ctx).IsValid():
		parent = trace.ContextWithSpanContext(ctx, trace.SpanContext{})
	}
	ctx, span := t.Start(parent, op, topic)
	if span.IsRecording() {
		span.SetAttributes(semconv.MessagingMessageID(id), AttemptKey.Int(attempt))
		if producer.IsValid() && link {
			span.AddLink(trace.Link{SpanContext: producer})
		}
	}
	return ctx, span
}

// AttemptKey is the attribute of a delivery's attempt number (1 for the first).
const AttemptKey = attribute.Key("delayq.job.attempt")

// Set sets attributes on span when it records; on a span that does not, it costs nothing.
func Set(span trace.Span, attrs ...attribute.KeyValue) {
	if span.IsRecording() {
		span.SetAttributes(attrs...)
	}
}

// End ends span, marking it failed when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Inject returns headers with the trace context of ctx's span added under traceparent and
// tracestate, unless headers has a traceparent already or ctx carries no trace. headers itself
// is never changed: when something is added the result is a new map.
func Inject(ctx context.Context, headers map[string]string) map[string]string {
	if _, ok := headers[TraceParent]; ok || !trace.SpanContextFromContext(ctx).IsValid() {
		return headers
	}
	carrier := make(propagation.MapCarrier, len(headers)+2)
	for k, v := range headers {
		carrier[k] = v
	}
	W3C.Inject(ctx, carrier)
	return carrier
}

// Extract returns ctx with the remote trace context of headers, if they carry a valid one.
func Extract(ctx context.Context, headers map[string]string) context.Context {
	if headers[TraceParent] == "" {
		return ctx
	}
	return W3C.Extract(ctx, propagation.MapCarrier(headers))
}
