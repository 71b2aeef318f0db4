package delayq

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/delayq/delayq/internal/redistest"
)

// A caller's own traceparent is kept whatever the case of its name, as any header name is
// compared without case: an enqueue inside a span must not add a second one.
func TestReviewEnqueueInASpanKeepsAMixedCaseTraceparent(t *testing.T) {
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
}

// Headers that Validate accepts are accepted inside a span too: the trace context is added
// only when it fits within the limits.
func TestReviewEnqueueInASpanAtTheHeaderLimits(t *testing.T) {
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
}

// A repeat in another span answers the first call's job as it is stored: its trace context is
// the first call's, which a Get returns too.
func TestReviewEnqueueRepeatAnswersTheStoredTraceContext(t *testing.T) {
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
}

// The repeat's answer survives a lost reply: the call run again answers the stored trace too.
func TestReviewEnqueueRepeatWhoseReplyWasLost(t *testing.T) {
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
}
