package delayq

import (
	"fmt"
	"strings"
	"testing"
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
