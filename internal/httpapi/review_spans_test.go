package httpapi

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

type spanCounter struct{ started, ended atomic.Int64 }

func (s *spanCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) { s.started.Add(1) }
func (s *spanCounter) OnEnd(sdktrace.ReadOnlySpan)                     { s.ended.Add(1) }
func (s *spanCounter) Shutdown(context.Context) error                  { return nil }
func (s *spanCounter) ForceFlush(context.Context) error                { return nil }

// Every span of a request ends: a long poll its client leaves, a bad request, an enqueue.
func TestReviewRequestSpansEnd(t *testing.T) {
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
