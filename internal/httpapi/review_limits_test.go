package httpapi

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/delayq/delayq"
)

// escaped writes s as a JSON string with every character a six-byte \u escape.
func escaped(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	b.WriteByte('"')
	return b.String()
}

// A job at every limit at once, each of its strings written with the longest escapes and sent
// inside a trace, fits in an enqueue request and in a batch of one.
func TestReviewEnqueueAtEveryLimitOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var hdr []string
	per := (delayq.MaxHeadersBytes - delayq.MaxHeaders*3) / delayq.MaxHeaders
	total := 0
	for i := range delayq.MaxHeaders {
		name := fmt.Sprintf("h%02d", i)
		n := per
		if i == delayq.MaxHeaders-1 {
			n = delayq.MaxHeadersBytes - total - 3
		}
		total += 3 + n
		hdr = append(hdr, escaped(name)+":"+escaped(strings.Repeat("v", n)))
	}
	if total != delayq.MaxHeadersBytes {
		t.Fatalf("headers of %d bytes, want %d", total, delayq.MaxHeadersBytes)
	}
	var steps []string
	for range 100 {
		steps = append(steps, "86400000")
	}
	job := func(id string) string {
		return `{"id":` + escaped(id+strings.Repeat("i", 256-len(id))) +
			`,"body_base64":"` + base64.StdEncoding.EncodeToString(make([]byte, testLimits.MaxBody)) +
			`","backoff_ms":[` + strings.Join(steps, ",") + `],"headers":{` + strings.Join(hdr, ",") + `}}`
	}
	tp := []string{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	r := e.raw(e.url, "POST", "/v1/topics/lim/jobs", "application/json", job("a"), tp...)
	if r.status != http.StatusCreated {
		t.Fatalf("an enqueue at every limit: %d %s", r.status, r.body)
	}
	r = e.raw(e.url, "POST", "/v1/topics/lim/jobs/batch", "application/json", `{"jobs":[`+job("b")+`]}`, tp...)
	if r.status != http.StatusOK || strings.Contains(string(r.body), `"error"`) {
		t.Fatalf("a batch of one job at every limit: %d %.300s", r.status, r.body)
	}
	if j := e.get("lim", "b"+strings.Repeat("i", 255)); len(j.Headers) != delayq.MaxHeaders {
		t.Fatalf("the batch's job has %d headers, want %d", len(j.Headers), delayq.MaxHeaders)
	}
}

// An enqueue sent again in another trace answers the job as stored, the first trace's context
// in its headers, alone and in a batch.
func TestReviewRepeatInAnotherTraceOverHTTP(t *testing.T) {
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
