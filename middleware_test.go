package delayq

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/testwait"
)

// TestWorkerUseWrapsEveryHandlerInOrder registers middleware before and after a handler: each
// job passes through all of it, the first given outermost; a panic in middleware nacks the job
// with the panic's text; Use after Start is refused.
func TestWorkerUseWrapsEveryHandlerInOrder(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	w, err := NewWorker(c, WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var trail []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		trail = append(trail, s)
	}
	named := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, job *Job) error {
				note(name + " " + job.Topic)
				if string(job.Body) == "panic in "+name {
					panic("boom in " + name)
				}
				return next(ctx, job)
			}
		}
	}
	if err := w.Use(named("outer")); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 4)
	handler := func(_ context.Context, job *Job) error { done <- job.ID; return nil }
	if err := w.Handle("a", handler); err != nil {
		t.Fatal(err)
	}
	if err := w.Use(named("inner")); err != nil { // after Handle: still around it
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	if err := w.Use(named("late")); err == nil {
		t.Error("Use after Start was accepted")
	}
	mustEnqueue(t, c, "a", Spec{ID: "ok"})
	select {
	case id := <-done:
		if id != "ok" {
			t.Fatalf("handled %q", id)
		}
	case <-ctx.Done():
		t.Fatal("the job was not handled")
	}
	mu.Lock()
	got := slices.Clone(trail)
	mu.Unlock()
	if want := []string{"outer a", "inner a"}; !slices.Equal(got, want) {
		t.Errorf("middleware ran as %q, want %q", got, want)
	}
	mustEnqueue(t, c, "a", Spec{ID: "bad", Body: []byte("panic in inner"), NoRetries: true})
	testwait.ForNil(t, 20*time.Second, "the job whose middleware panicked to go dead", func() error {
		j, err := c.Get(ctx, "a", "bad")
		if err != nil {
			return err
		}
		if j.State != StateDead || !strings.Contains(j.LastError, "boom in inner") {
			return errors.New("state " + string(j.State) + ", last error " + j.LastError)
		}
		return nil
	})
}
