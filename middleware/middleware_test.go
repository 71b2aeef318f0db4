package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
	"github.com/delayq/delayq/middleware"
)

// testRedis is a redis-server of the package's tests, started by TestMain.
var testRedis *redistest.Server

func TestMain(m *testing.M) {
	os.Exit(redistest.RunWithServer(m, &testRedis))
}

// startWorker runs a Worker on its own namespace with mw around h for topic "t".
func startWorker(t *testing.T, h delayq.Handler, mw ...delayq.Middleware) *delayq.Client {
	t.Helper()
	return startWorkerWith(t, delayq.Config{}, h, mw...)
}

// startWorkerWith is startWorker with a Client made from cfg.
func startWorkerWith(t *testing.T, cfg delayq.Config, h delayq.Handler, mw ...delayq.Middleware) *delayq.Client {
	t.Helper()
	ctx := context.Background()
	rdb := testRedis.NewClient()
	t.Cleanup(func() { rdb.Close() })
	ns := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()) // a namespace of its own, also under -count
	cfg.Namespace, cfg.Logger = ns, slog.New(slog.DiscardHandler)
	c, err := delayq.New(ctx, rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w, err := delayq.NewWorker(c, delayq.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Use(mw...); err != nil {
		t.Fatal(err)
	}
	if err := w.Handle("t", h); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return c
}

// waitDead waits until job id of topic "t" is dead and returns its last error.
func waitDead(t *testing.T, c *delayq.Client, id string) string {
	t.Helper()
	var last string
	testwait.ForNil(t, 20*time.Second, id+" dead", func() error {
		j, err := c.Get(context.Background(), "t", id)
		if err != nil {
			return err
		}
		if j.State != delayq.StateDead {
			return fmt.Errorf("%s is %s", id, j.State)
		}
		last = j.LastError
		return nil
	})
	return last
}

func enqueue(t *testing.T, c *delayq.Client, id string) {
	t.Helper()
	if _, err := c.Enqueue(context.Background(), "t", delayq.Spec{ID: id, NoRetries: true}); err != nil {
		t.Fatal(err)
	}
}

func TestTimeoutEndsAHandlerAndFailsItsJob(t *testing.T) {
	t.Parallel()
	c := startWorker(t, func(ctx context.Context, job *delayq.Job) error {
		<-ctx.Done()
		if job.ID == "ignores" {
			return nil // a handler that does not report the end of its context
		}
		return context.Cause(ctx)
	}, middleware.Timeout(50*time.Millisecond))
	enqueue(t, c, "waits")
	enqueue(t, c, "ignores")
	for _, id := range []string{"waits", "ignores"} {
		if last := waitDead(t, c, id); !strings.Contains(last, middleware.ErrTimeout.Error()) {
			t.Errorf("%s: last error %q, want the timeout", id, last)
		}
	}
}

func TestLoggingSaysHowEachJobEnded(t *testing.T) {
	t.Parallel()
	var buf testwait.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := startWorker(t, func(_ context.Context, job *delayq.Job) error {
		if job.ID == "bad" {
			return errors.New("no stock")
		}
		return nil
	}, middleware.Logging(logger))
	enqueue(t, c, "good")
	enqueue(t, c, "bad")
	waitDead(t, c, "bad")
	testwait.For(t, 20*time.Second, "both log lines", func() bool {
		out := buf.String()
		return strings.Contains(out, "level=DEBUG msg=\"delayq: handler done\" topic=t id=good") &&
			strings.Contains(out, "level=WARN msg=\"delayq: handler failed\" topic=t id=bad") &&
			strings.Contains(out, "err=\"no stock\"")
	})
}

func TestMetricsCountOutcomesByTopic(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	mw := middleware.Metrics(reg)
	if again := middleware.Metrics(reg); again == nil { // a second one shares the histogram
		t.Fatal("nil middleware")
	}
	c := startWorker(t, func(_ context.Context, job *delayq.Job) error {
		switch job.ID {
		case "bad":
			return errors.New("failed")
		case "panics":
			panic("boom")
		}
		return nil
	}, mw)
	for _, id := range []string{"ok", "bad", "panics"} {
		enqueue(t, c, id)
	}
	waitDead(t, c, "bad")
	waitDead(t, c, "panics")
	testwait.For(t, 20*time.Second, "a run of each outcome counted", func() bool {
		n, err := testutil.GatherAndCount(reg, "delayq_worker_handler_duration_seconds")
		return err == nil && n == 3
	})
}

func TestTracingSpansTheHandlerUnderTheDelivery(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	c := startWorkerWith(t, delayq.Config{TracerProvider: tp}, func(_ context.Context, job *delayq.Job) error {
		if job.ID == "panics" {
			panic("boom")
		}
		return nil
	}, middleware.Tracing(tp))
	enqueue(t, c, "ok")
	enqueue(t, c, "panics")
	waitDead(t, c, "panics")
	byID := map[string]tracetest.SpanStub{}
	testwait.For(t, 20*time.Second, "the six spans of two enqueues, deliveries and handlers", func() bool { return len(exp.GetSpans()) >= 6 })
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == "messaging.message.id" {
				byID[s.Name+" "+a.Value.AsString()] = s
			}
		}
	}
	for _, id := range []string{"ok", "panics"} {
		handle, process := byID["handle t "+id], byID["process t "+id]
		if !handle.SpanContext.IsValid() || handle.Parent.SpanID() != process.SpanContext.SpanID() {
			t.Errorf("%s: handle span %v under %v, want under the process span %v", id, handle.SpanContext.SpanID(), handle.Parent.SpanID(), process.SpanContext.SpanID())
		}
	}
	if st := byID["handle t panics"].Status; st.Code != codes.Error || st.Description != "panic: boom" {
		t.Errorf("the panicking handler's span status %+v, want error \"panic: boom\"", st)
	}
}

func Example() {
	ctx := context.Background()
	rdb := testRedis.NewClient()
	defer rdb.Close()
	client, err := delayq.New(ctx, rdb, delayq.Config{Namespace: "example-middleware"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	worker, _ := delayq.NewWorker(client, delayq.WorkerConfig{})
	// Around every handler: a log line per job, its duration and outcome in Prometheus, and at
	// most a minute for each.
	worker.Use(
		middleware.Logging(slog.New(slog.DiscardHandler)),
		middleware.Metrics(prometheus.NewRegistry()),
		middleware.Timeout(time.Minute),
	)
	done := make(chan struct{})
	worker.Handle("emails", func(ctx context.Context, job *delayq.Job) error {
		fmt.Printf("sending %s\n", job.Body)
		close(done)
		return nil
	})
	worker.Start(ctx)
	client.Enqueue(ctx, "emails", delayq.Spec{Body: []byte("welcome mail")})
	<-done
	worker.Stop(ctx)
	// Output: sending welcome mail
}
