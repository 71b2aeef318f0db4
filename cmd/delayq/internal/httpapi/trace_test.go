package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A request's traceparent reaches the job it enqueues, and a pull consumer finds it in the
// reserved job's headers; a traceparent the job names itself wins.
func TestEnqueueKeepsTheRequestsTraceContext(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := e.raw(e.url, http.MethodPost, "/v1/topics/traced/jobs", "application/json", `{"id":"a","body":1}`,
		"traceparent", incoming, "tracestate", "vendor=x")
	job := decode[struct {
		Headers map[string]string `json:"headers"`
	}](t, r.want(t, http.StatusCreated))
	if job.Headers["traceparent"] != incoming || job.Headers["tracestate"] != "vendor=x" {
		t.Fatalf("enqueued job's headers %v, want the request's trace context", job.Headers)
	}
	got := e.reserveOne("traced", map[string]any{})
	if got.Headers["traceparent"] != incoming || got.Headers["tracestate"] != "vendor=x" {
		t.Fatalf("reserved job's headers %v, want the request's trace context", got.Headers)
	}

	own := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	r = e.raw(e.url, http.MethodPost, "/v1/topics/traced/jobs", "application/json",
		`{"id":"b","body":1,"headers":{"traceparent":"`+own+`"}}`, "traceparent", incoming)
	job = decode[struct {
		Headers map[string]string `json:"headers"`
	}](t, r.want(t, http.StatusCreated))
	if job.Headers["traceparent"] != own {
		t.Fatalf("traceparent %q, want the job's own %q", job.Headers["traceparent"], own)
	}

	plain := e.enqueue("traced", map[string]any{"id": "c", "body": 1})
	if plain.Headers != nil {
		t.Fatalf("a request without trace context made headers %v", plain.Headers)
	}
}

// An enqueue sent again in another trace answers the job as stored, the first trace's context
// in its headers, alone and in a batch.
func TestEnqueueRepeatInAnotherTraceKeepsTheFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const first = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const second = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	type answer struct {
		Headers map[string]string `json:"headers"`
	}
	body := `{"id":"r","body":1,"delay_ms":60000,"headers":{"x":"1"}}`
	a := decode[answer](t, e.raw(e.url, "POST", "/v1/topics/rep/jobs", "application/json", body, "traceparent", first))
	b := decode[answer](t, e.raw(e.url, "POST", "/v1/topics/rep/jobs", "application/json", body, "traceparent", second))
	if a.Headers["traceparent"] != first || b.Headers["traceparent"] != first {
		t.Fatalf("traceparent: first answer %q, repeat %q; want %q both", a.Headers["traceparent"], b.Headers["traceparent"], first)
	}
	r := e.raw(e.url, "POST", "/v1/topics/rep/jobs/batch", "application/json", `{"jobs":[`+body+`]}`, "traceparent", second)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), first) {
		t.Fatalf("a batch repeat: %d %s; want the first trace", r.status, r.body)
	}
}
