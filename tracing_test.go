package delayq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/delayq/delayq/internal/redistest"
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

// TestEnqueueTraceContext: Enqueue stores the trace context of its caller's span, and a repeat
// answers the one stored first.
func TestEnqueueTraceContext(t *testing.T) {
	t.Run("keeps the caller's traceparent", func(t *testing.T) {
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
	})

	// A caller's own traceparent is kept whatever the case of its name, as any header name is
	// compared without case: an enqueue inside a span must not add a second one.
	t.Run("in a span keeps a mixed-case traceparent", func(t *testing.T) {
		c, _, tracer := newTracedClient(t)
		own := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		ctx, span := tracer.Start(testContext(t), "request")
		defer span.End()
		job, err := c.Enqueue(ctx, "t", Spec{Headers: map[string]string{"TraceParent": own, "TraceState": "a=1"}})
		if err != nil {
			t.Fatalf("an enqueue with the caller's TraceParent inside a span: %v", err)
		}
		if job.Headers["traceparent"] != own || job.Headers["tracestate"] != "a=1" {
			t.Fatalf("headers %v, want the caller's trace context", job.Headers)
		}
		// A caller's tracestate alone gives way to the span's trace context.
		job, err = c.Enqueue(ctx, "t", Spec{Headers: map[string]string{"TraceState": "a=1"}})
		if err != nil {
			t.Fatalf("an enqueue with the caller's TraceState inside a span: %v", err)
		}
		if job.Headers["traceparent"] == "" {
			t.Fatalf("headers %v, want the span's traceparent", job.Headers)
		}
	})

	// Headers that Validate accepts are accepted inside a span too: the trace context is added
	// only when it fits within the limits.
	t.Run("in a span at the header limits", func(t *testing.T) {
		c, _, tracer := newTracedClient(t)
		ctx, span := tracer.Start(testContext(t), "request")
		defer span.End()
		full := map[string]string{}
		for i := range MaxHeaders {
			full[fmt.Sprintf("h%d", i)] = "v"
		}
		big := map[string]string{"x": strings.Repeat("v", MaxHeadersBytes-1)}
		for name, h := range map[string]map[string]string{"32 headers": full, "8 KiB": big} {
			if err := (Spec{Headers: h}).Validate(Limits{}); err != nil {
				t.Fatalf("%s: Validate: %v", name, err)
			}
			job, err := c.Enqueue(ctx, "t", Spec{Headers: h})
			if err != nil {
				t.Fatalf("%s: Enqueue inside a span: %v", name, err)
			}
			if len(job.Headers) != len(h) {
				t.Fatalf("%s: %d headers, want the caller's %d", name, len(job.Headers), len(h))
			}
			res, err := c.EnqueueBatch(ctx, "t", []Spec{{Headers: h}})
			if err != nil || res[0].Err != nil {
				t.Fatalf("%s: EnqueueBatch inside a span: %v, %v", name, err, res[0].Err)
			}
		}
		// Room for the trace context: it is added.
		delete(full, "h0")
		job, err := c.Enqueue(ctx, "t", Spec{Headers: full})
		if err != nil || job.Headers["traceparent"] == "" {
			t.Fatalf("31 headers inside a span: %v, %v; want the traceparent added", job, err)
		}
	})

	// An enqueue tried again in a new span (as an instrumented HTTP client's retry is) differs from
	// the first only in its trace context: it is still the same call, answered with the first job.
	// Any other difference in its headers is not.
	t.Run("repeated in another span answers the first", func(t *testing.T) {
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
	})

	// A repeat in another span answers the first call's job as it is stored: its trace context is
	// the first call's, which a Get returns too.
	t.Run("repeat answers the stored trace context", func(t *testing.T) {
		c, _, tracer := newTracedClient(t)
		spec := Spec{ID: "a", Delay: time.Minute}
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
			t.Fatal(err)
		}
		stored, err := c.Get(testContext(t), "t", "a")
		if err != nil {
			t.Fatal(err)
		}
		if again.Headers["traceparent"] != stored.Headers["traceparent"] || first.Headers["traceparent"] != stored.Headers["traceparent"] {
			t.Fatalf("traceparent: first %q, repeat answered %q, stored %q", first.Headers["traceparent"], again.Headers["traceparent"], stored.Headers["traceparent"])
		}
	})

	// The repeat's answer survives a lost reply: the call run again answers the stored trace too.
	t.Run("repeat whose reply was lost", func(t *testing.T) {
		tp := sdktrace.NewTracerProvider()
		t.Cleanup(func() { tp.Shutdown(context.Background()) })
		srv := redistest.Standalone(t)
		proxy := redistest.NewProxy(t, srv.Addr)
		rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
		t.Cleanup(func() { rdb.Close() })
		c := newClientOn(t, rdb, Config{TracerProvider: tp})
		tracer := tp.Tracer("test")
		spec := Spec{ID: "lost-repeat", Delay: time.Minute, Headers: map[string]string{"x": "1"}}
		ctx1, span1 := tracer.Start(testContext(t), "try 1")
		first, err := c.Enqueue(ctx1, "t", spec)
		span1.End()
		if err != nil {
			t.Fatal(err)
		}
		ctx2, span2 := tracer.Start(testContext(t), "try 2")
		defer span2.End()
		fired := proxy.DropReplyOnce(scriptCall("lost-repeat"))
		again, err := c.Enqueue(ctx2, "t", spec)
		if err != nil {
			t.Fatal(err)
		}
		mustFire(t, fired)
		if diff := cmp.Diff(first.Headers, again.Headers); diff != "" {
			t.Fatalf("the repeat whose reply was lost answered headers (-first +answer):\n%s", diff)
		}
	})
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

// spanCounter counts the spans started and ended.
type spanCounter struct{ started, ended atomic.Int64 }

func (s *spanCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) { s.started.Add(1) }

func (s *spanCounter) OnEnd(sdktrace.ReadOnlySpan) { s.ended.Add(1) }

func (s *spanCounter) Shutdown(context.Context) error { return nil }

func (s *spanCounter) ForceFlush(context.Context) error { return nil }

func (s *spanCounter) check(t *testing.T, step string) {
	t.Helper()
	testwait.For(t, 10*time.Second, step+": every span ended", func() bool {
		return s.started.Load() == s.ended.Load()
	})
	if s.started.Load() == 0 {
		t.Fatalf("%s: no span started", step)
	}
}

// TestSpans: every span the Client and the Worker start ends, with the status of its outcome.
func TestSpans(t *testing.T) {
	// Every span delayq starts ends, on errors too.
	t.Run("always end", func(t *testing.T) {
		t.Parallel()
		cnt := &spanCounter{}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(cnt))
		t.Cleanup(func() { tp.Shutdown(context.Background()) })
		srv := redistest.Standalone(t)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		c := newClientOn(t, rdb, Config{TracerProvider: tp})
		ctx := testContext(t)

		if _, err := c.Enqueue(ctx, "t", Spec{Headers: map[string]string{"a b": "x"}}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("invalid enqueue: %v", err)
		}
		cnt.check(t, "an invalid enqueue")
		mustEnqueue(t, c, "t", Spec{ID: "x", Delay: time.Hour})
		cnt.check(t, "an enqueue")

		// A Reserve whose ctx ends while it waits.
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		if _, err := c.Reserve(rctx, "t", ReserveOptions{Wait: 10 * time.Second}); err == nil {
			t.Fatal("Reserve whose ctx ended: no error")
		}
		cancel()
		cnt.check(t, "a reserve cancelled while it waits")

		// A Worker whose handlers fail, panic and overrun their time.
		mustEnqueue(t, c, "w", Spec{ID: "fail", MaxRetries: 0})
		mustEnqueue(t, c, "w", Spec{ID: "panic", MaxRetries: 0})
		mustEnqueue(t, c, "w", Spec{ID: "slow", MaxRetries: 0, TTR: time.Second})
		mustEnqueue(t, c, "w", Spec{ID: "ok"})
		var handled atomic.Int64
		w, err := NewWorker(c, WorkerConfig{Concurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		h := endByID(200 * time.Millisecond)
		if err := w.Handle("w", func(ctx context.Context, j *Job) error {
			defer handled.Add(1)
			return h(ctx, j)
		}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 20*time.Second, "four handlers", func() bool { return handled.Load() == 4 })
		testwait.For(t, 20*time.Second, "the jobs settled", func() bool {
			s, err := c.Stats(ctx, "w")
			return err == nil && s.Reserved == 0 && s.Ready == 0
		})
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		cnt.check(t, "a Worker's deliveries")

		// Redis down.
		srv.Kill(t)
		dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
		defer dcancel()
		if _, err := c.Enqueue(dctx, "t", Spec{ID: "down"}); err == nil {
			t.Fatal("Enqueue with Redis down: no error")
		}
		if _, err := c.Reserve(dctx, "t", ReserveOptions{}); err == nil {
			t.Fatal("Reserve with Redis down: no error")
		}
		if err := c.Ack(dctx, Lease{Topic: "t", ID: "x", Token: "0123456789abcdef01234567"}); err == nil {
			t.Fatal("Ack with Redis down: no error")
		}
		cnt.check(t, "calls with Redis down")
	})

	// A delivery that fails, panics or runs out of time ends its span with an error status; one that
	// succeeds does not.
	t.Run("delivery status", func(t *testing.T) {
		t.Parallel()
		c, exp, _ := newTracedClient(t)
		ctx := testContext(t)
		for _, id := range []string{"fail", "panic", "slow", "ok"} {
			mustEnqueue(t, c, "st", Spec{ID: id, MaxRetries: 0})
		}
		w, err := NewWorker(c, WorkerConfig{Concurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Handle("st", endByID(100*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Stop(context.Background())
		testwait.For(t, 20*time.Second, "four process spans", func() bool {
			return len(spansNamed(exp, "process st")) == 4
		})
		for _, s := range exp.GetSpans() {
			if s.Name != "process st" {
				continue
			}
			var id string
			for _, a := range s.Attributes {
				if a.Key == "messaging.message.id" {
					id = a.Value.AsString()
				}
			}
			if failed := s.Status.Code == codes.Error; failed != (id != "ok") {
				t.Errorf("job %q: span status %v %q", id, s.Status.Code, s.Status.Description)
			}
		}
	})

	// A Worker started inside a span (a request that starts it, say) does not put its deliveries in
	// that span's trace: with LinkTraces each delivery is a trace of its own, and a job without
	// trace context starts one.
	t.Run("worker started in a span", func(t *testing.T) {
		t.Parallel()
		c, exp, tracer := newTracedClient(t)
		// One job linked to its enqueue, one without any trace context.
		mustEnqueue(t, c, "ws", Spec{ID: "traced"})
		if _, err := c.EnqueueBatch(trace.ContextWithSpanContext(testContext(t), trace.SpanContext{}), "ws", []Spec{{ID: "plain"}}); err != nil {
			t.Fatal(err)
		}
		ctx, starter := tracer.Start(testContext(t), "starter")
		defer starter.End()
		w, err := NewWorker(c, WorkerConfig{LinkTraces: true})
		if err != nil {
			t.Fatal(err)
		}
		var ran atomic.Int64
		if err := w.Handle("ws", func(context.Context, *Job) error { ran.Add(1); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Stop(context.Background())
		testwait.For(t, 10*time.Second, "two process spans", func() bool {
			return len(spansNamed(exp, "process ws")) == 2
		})
		for _, s := range exp.GetSpans() {
			if s.Name == "process ws" && (s.SpanContext.TraceID() == starter.SpanContext().TraceID() || s.Parent.IsValid()) {
				t.Errorf("a delivery span in the trace of the span that started the Worker: parent %v", s.Parent)
			}
		}
	})
}

// endByID returns a Handler that ends a job by its id: "fail" with an error, "panic" in a
// panic, "slow" with its context's error once slow has passed, any other with success.
func endByID(slow time.Duration) Handler {
	return func(ctx context.Context, j *Job) error {
		switch j.ID {
		case "fail":
			return errors.New("failed")
		case "panic":
			panic("boom")
		case "slow":
			tctx, cancel := context.WithTimeout(ctx, slow)
			defer cancel()
			<-tctx.Done()
			return tctx.Err()
		}
		return nil
	}
}

// spansNamed returns the ended spans called name.
func spansNamed(exp *tracetest.InMemoryExporter, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}
