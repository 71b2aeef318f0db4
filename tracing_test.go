package delayq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/delayq/delayq/internal/testwait"
	"github.com/delayq/delayq/internal/tracing"
)

// newTracedClient returns a Client whose spans end in the returned exporter.
func newTracedClient(t *testing.T) (*Client, *tracetest.InMemoryExporter, trace.Tracer) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	c, _ := newTestClient(t, Config{TracerProvider: tp})
	return c, exp, tp.Tracer("test")
}

// spanNamed returns the one ended span of that name, failing the test unless there is one.
func spanNamed(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range exp.GetSpans() {
			names = append(names, s.Name)
		}
		t.Fatalf("%d spans named %q, want 1; spans: %s", len(found), name, strings.Join(names, ", "))
	}
	return found[0]
}

// runOne runs a Worker with cfg over topic until h has run once, and waits until the span
// named wait has ended.
func runOne(t *testing.T, c *Client, exp *tracetest.InMemoryExporter, cfg WorkerConfig, topic string, h Handler, wait string) {
	t.Helper()
	w, err := NewWorker(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Handle(topic, h); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	testwait.For(t, 10*time.Second, "span "+wait, func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == wait {
				return true
			}
		}
		return false
	})
}

func TestTraceLinksEnqueueToDelivery(t *testing.T) {
	c, exp, tracer := newTracedClient(t)
	ctx, parent := tracer.Start(testContext(t), "request")
	job, err := c.Enqueue(ctx, "orders", Spec{ID: "o1", Body: []byte("x")})
	parent.End()
	if err != nil {
		t.Fatal(err)
	}
	send := spanNamed(t, exp, "send orders")
	if send.Parent.SpanID() != parent.SpanContext().SpanID() || send.SpanKind != trace.SpanKindProducer {
		t.Fatalf("send span: parent %v kind %v, want child of the request span, producer", send.Parent.SpanID(), send.SpanKind)
	}
	want := "00-" + send.SpanContext.TraceID().String() + "-" + send.SpanContext.SpanID().String() + "-01"
	if job.Headers["traceparent"] != want {
		t.Fatalf("enqueued job's traceparent %q, want %q (the send span)", job.Headers["traceparent"], want)
	}
	if got, err := c.Get(testContext(t), "orders", "o1"); err != nil || got.Headers["traceparent"] != want {
		t.Fatalf("Get: traceparent %q (%v), want %q", got.Headers["traceparent"], err, want)
	}

	runOne(t, c, exp, WorkerConfig{}, "orders", func(ctx context.Context, job *Job) error {
		if !trace.SpanContextFromContext(ctx).IsValid() {
			return errors.New("the handler's ctx has no span")
		}
		return errors.New("try again")
	}, "nack orders")
	process := spanNamed(t, exp, "process orders")
	if process.SpanContext.TraceID() != send.SpanContext.TraceID() || process.Parent.SpanID() != send.SpanContext.SpanID() {
		t.Fatalf("process span: trace %v parent %v, want a child of the send span %v", process.SpanContext.TraceID(), process.Parent.SpanID(), send.SpanContext.SpanID())
	}
	if process.SpanKind != trace.SpanKindConsumer || process.Status.Description != "try again" {
		t.Fatalf("process span: kind %v status %+v", process.SpanKind, process.Status)
	}
	attrs := map[string]string{}
	for _, a := range process.Attributes {
		attrs[string(a.Key)] = a.Value.String()
	}
	for k, v := range map[string]string{"messaging.system": "delayq", "messaging.destination.name": "orders",
		"messaging.message.id": "o1", "messaging.operation.type": "process", "delayq.job.attempt": "1", "delayq.outcome": "nack"} {
		if attrs[k] != v {
			t.Errorf("process span attribute %s = %q, want %q", k, attrs[k], v)
		}
	}
	nack := spanNamed(t, exp, "nack orders")
	if nack.Parent.SpanID() != process.SpanContext.SpanID() {
		t.Fatalf("nack span's parent %v, want the process span %v", nack.Parent.SpanID(), process.SpanContext.SpanID())
	}
	// The retry keeps the job's trace context.
	advance(c, time.Minute)
	again := reserveOne(t, c, "orders", 0)
	if again.Headers["traceparent"] != want {
		t.Fatalf("retried job's traceparent %q, want %q", again.Headers["traceparent"], want)
	}
}

func TestLinkTracesStartsANewTraceLinkedToTheEnqueue(t *testing.T) {
	c, exp, tracer := newTracedClient(t)
	ctx, parent := tracer.Start(testContext(t), "request")
	if _, err := c.Enqueue(ctx, "orders", Spec{ID: "o1"}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	send := spanNamed(t, exp, "send orders")
	runOne(t, c, exp, WorkerConfig{LinkTraces: true}, "orders", func(context.Context, *Job) error { return nil }, "process orders")
	process := spanNamed(t, exp, "process orders")
	if process.SpanContext.TraceID() == send.SpanContext.TraceID() {
		t.Fatal("the process span is in the enqueue's trace; want a trace of its own")
	}
	if len(process.Links) != 1 || process.Links[0].SpanContext.SpanID() != send.SpanContext.SpanID() {
		t.Fatalf("process span links %+v, want one to the send span", process.Links)
	}
}

func TestEnqueueKeepsTheCallersTraceparent(t *testing.T) {
	c, exp, tracer := newTracedClient(t)
	own := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx, span := tracer.Start(testContext(t), "request")
	defer span.End()
	job, err := c.Enqueue(ctx, "t", Spec{Headers: map[string]string{"traceparent": own}})
	if err != nil {
		t.Fatal(err)
	}
	if job.Headers["traceparent"] != own {
		t.Fatalf("traceparent %q, want the caller's %q", job.Headers["traceparent"], own)
	}
	// Outside any span, the send span starts the job's trace.
	root, err := c.Enqueue(testContext(t), "t", Spec{ID: "root"})
	if err != nil {
		t.Fatal(err)
	}
	var send tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "send t" && !s.Parent.IsValid() {
			send = s
		}
	}
	if want := "00-" + send.SpanContext.TraceID().String() + "-" + send.SpanContext.SpanID().String() + "-01"; root.Headers["traceparent"] != want {
		t.Fatalf("a job enqueued outside any span: traceparent %q, want the root send span's %q", root.Headers["traceparent"], want)
	}
}

// Without an SDK and outside any span there is no trace: the job gets no headers.
func TestNoTraceNoHeaders(t *testing.T) {
	c, _ := newTestClient(t, Config{})
	plain, err := c.Enqueue(testContext(t), "t", Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Headers != nil {
		t.Fatalf("a job enqueued outside any trace got headers %v", plain.Headers)
	}
}

// Without an SDK (the global provider makes no spans), a trace context that came in from
// elsewhere, as an HTTP request's traceparent, still reaches the job and its delivery.
func TestTraceContextTravelsWithoutAnSDK(t *testing.T) {
	c, _ := newTestClient(t, Config{})
	incoming := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := tracing.Extract(testContext(t), map[string]string{"traceparent": incoming})
	job, err := c.Enqueue(ctx, "t", Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if job.Headers["traceparent"] != incoming {
		t.Fatalf("traceparent %q, want the incoming %q", job.Headers["traceparent"], incoming)
	}
}

// An enqueue tried again in a new span (as an instrumented HTTP client's retry is) differs from
// the first only in its trace context: it is still the same call, answered with the first job.
// Any other difference in its headers is not.
func TestEnqueueRepeatedInAnotherSpanAnswersTheFirst(t *testing.T) {
	c, _, tracer := newTracedClient(t)
	spec := Spec{ID: "a", Body: []byte("one"), Delay: time.Minute, Headers: map[string]string{"tenant": "x"}}
	ctx1, span1 := tracer.Start(testContext(t), "try 1")
	first, err := c.Enqueue(ctx1, "t", spec)
	span1.End()
	if err != nil {
		t.Fatal(err)
	}
	ctx2, span2 := tracer.Start(testContext(t), "try 2")
	defer span2.End()
	again, err := c.Enqueue(ctx2, "t", spec)
	if err != nil {
		t.Fatalf("the same enqueue in another span = %v, want the first job", err)
	}
	if !again.CreatedAt.Equal(first.CreatedAt) || again.Headers["traceparent"] == "" {
		t.Fatalf("the repeat answered created %v headers %v, want the first job's %v", again.CreatedAt, again.Headers, first.CreatedAt)
	}
	spec.Headers = map[string]string{"tenant": "y"}
	if _, err := c.Enqueue(ctx2, "t", spec); !errors.Is(err, ErrExists) {
		t.Fatalf("an enqueue with another header = %v, want ErrExists", err)
	}
	spec.Headers = nil
	if _, err := c.Enqueue(ctx2, "t", spec); !errors.Is(err, ErrExists) {
		t.Fatalf("an enqueue without the header = %v, want ErrExists", err)
	}
}
