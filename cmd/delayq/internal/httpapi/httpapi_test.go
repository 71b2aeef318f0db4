package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/delayq/delayq"
)

// spanCounter counts the spans started and ended.
type spanCounter struct{ started, ended atomic.Int64 }

func (s *spanCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) { s.started.Add(1) }
func (s *spanCounter) OnEnd(sdktrace.ReadOnlySpan)                     { s.ended.Add(1) }
func (s *spanCounter) Shutdown(context.Context) error                  { return nil }
func (s *spanCounter) ForceFlush(context.Context) error                { return nil }

// Every span of a request ends: a long poll its client leaves, a bad request, an enqueue.
func TestRequestSpansEnd(t *testing.T) {
	t.Parallel()
	cnt := &spanCounter{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(cnt))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	e := newEnv(t, func(c *Config) { c.TracerProvider = tp })
	e.enqueue("sp", map[string]any{"id": "x", "body": 1, "delay_ms": 3600000})
	e.badRequests().raw(e.url, "POST", "/v1/topics/sp/jobs", "application/json", `{"headers":{"a b":"1"}}`).
		want(t, http.StatusBadRequest)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/topics/sp/reserve", strings.NewReader(`{"wait_ms":20000}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a long poll answered %d before its client left", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for cnt.started.Load() != cnt.ended.Load() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s, e := cnt.started.Load(), cnt.ended.Load(); s != e || s == 0 {
		t.Fatalf("%d spans started, %d ended", s, e)
	}
}

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
func TestEnqueueAtEveryLimitFitsARequest(t *testing.T) {
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
