package delayq

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// spanCounter counts the spans started and ended.
type spanCounter struct{ started, ended atomic.Int64 }

func (s *spanCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) { s.started.Add(1) }
func (s *spanCounter) OnEnd(sdktrace.ReadOnlySpan)                     { s.ended.Add(1) }
func (s *spanCounter) Shutdown(context.Context) error                  { return nil }
func (s *spanCounter) ForceFlush(context.Context) error                { return nil }

func (s *spanCounter) check(t *testing.T, step string) {
	t.Helper()
	testwait.For(t, 10*time.Second, step+": every span ended", func() bool {
		return s.started.Load() == s.ended.Load()
	})
	if s.started.Load() == 0 {
		t.Fatalf("%s: no span started", step)
	}
}

// Every span delayq starts ends, on errors too.
func TestReviewSpansAlwaysEnd(t *testing.T) {
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
	if err := w.Handle("w", func(ctx context.Context, j *Job) error {
		defer handled.Add(1)
		switch j.ID {
		case "fail":
			return errors.New("failed")
		case "panic":
			panic("boom")
		case "slow":
			tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			<-tctx.Done()
			return tctx.Err()
		}
		return nil
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
}

// A delivery that fails, panics or runs out of time ends its span with an error status; one that
// succeeds does not.
func TestReviewDeliverySpanStatus(t *testing.T) {
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
	if err := w.Handle("st", func(ctx context.Context, j *Job) error {
		switch j.ID {
		case "fail":
			return errors.New("failed")
		case "panic":
			panic("boom")
		case "slow":
			tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			<-tctx.Done()
			return tctx.Err()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	testwait.For(t, 20*time.Second, "four process spans", func() bool {
		n := 0
		for _, s := range exp.GetSpans() {
			if s.Name == "process st" {
				n++
			}
		}
		return n == 4
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
}

// A Worker started inside a span (a request that starts it, say) does not put its deliveries in
// that span's trace: with LinkTraces each delivery is a trace of its own, and a job without
// trace context starts one.
func TestReviewWorkerStartedInASpan(t *testing.T) {
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
		n := 0
		for _, s := range exp.GetSpans() {
			if s.Name == "process ws" {
				n++
			}
		}
		return n == 2
	})
	for _, s := range exp.GetSpans() {
		if s.Name == "process ws" && (s.SpanContext.TraceID() == starter.SpanContext().TraceID() || s.Parent.IsValid()) {
			t.Errorf("a delivery span in the trace of the span that started the Worker: parent %v", s.Parent)
		}
	}
}
