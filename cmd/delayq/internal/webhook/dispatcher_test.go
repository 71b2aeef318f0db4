package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"

	"github.com/delayq/delayq/internal/testwait"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := mustSecret(t, testSecret)
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no client", Config{Secret: key}},
		{"no secret", Config{Client: e.c}},
		{"negative concurrency", Config{Client: e.c, Secret: key, Concurrency: -1}},
		{"negative topic scan", Config{Client: e.c, Secret: key, TopicScan: -time.Second}},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
	d, err := New(Config{Client: e.c, Secret: key})
	if err != nil {
		t.Fatalf("New with defaults: %v", err)
	}
	if d.cfg.Concurrency != 16 || d.cfg.TopicScan != time.Second || d.cfg.Guard == nil || d.cfg.Logger == nil {
		t.Errorf("defaults: %+v", d.cfg)
	}
	if err := d.Stop(testContext(t)); err != nil {
		t.Errorf("Stop before Start: %v", err)
	}
}

func TestNewTopics(t *testing.T) {
	t.Parallel()
	ok := func(w http.ResponseWriter, _ *http.Request) {}
	t.Run("found by the topic scan", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		rcv := newReceiver(t, nil, ok)
		e.start(t, Config{TopicScan: 20 * time.Millisecond}) // no topic exists yet
		e.enqueue(t, "late", delayq.Spec{ID: "a", CallbackURL: rcv.url("/")})
		testwait.For(t, 10*time.Second, "the delivery", func() bool { return e.get(t, "late", "a") == nil })
	})
	t.Run("watched at once", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		rcv := newReceiver(t, nil, ok)
		d := e.start(t, Config{TopicScan: time.Hour})
		for range 2 {
			if err := d.Watch(testContext(t), "watched"); err != nil {
				t.Fatalf("Watch: %v", err)
			}
		}
		e.enqueue(t, "watched", delayq.Spec{ID: "a", CallbackURL: rcv.url("/")})
		testwait.For(t, 10*time.Second, "the delivery", func() bool { return e.get(t, "watched", "a") == nil })
		if err := d.Stop(testContext(t)); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if err := d.Watch(testContext(t), "after"); !errors.Is(err, delayq.ErrClosed) {
			t.Errorf("Watch after Stop = %v, want ErrClosed", err)
		}
	})
	t.Run("pull jobs are left to pull consumers", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		rcv := newReceiver(t, nil, ok)
		e.enqueue(t, "mixed", delayq.Spec{ID: "pull"})
		e.enqueue(t, "mixed", delayq.Spec{ID: "push", CallbackURL: rcv.url("/")})
		e.start(t, Config{})
		testwait.For(t, 10*time.Second, "the push delivery", func() bool { return e.get(t, "mixed", "push") == nil })
		jobs, err := e.c.Reserve(testContext(t), "mixed", delayq.ReserveOptions{Max: 10})
		if err != nil || len(jobs) != 1 || jobs[0].ID != "pull" {
			t.Fatalf("Reserve = %v, %v; want the pull job", jobs, err)
		}
		if n := rcv.count(); n != 1 {
			t.Errorf("the receiver got %d requests, want 1", n)
		}
	})
}

// Two servers on one Redis deliver each job once: delivery is lease-based.
func TestTwoDispatchersDeliverOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t, nil, nil) // answers 200

	m1, m2 := newMetrics(), newMetrics()
	e.start(t, Config{Client: e.c, Metrics: m1, Concurrency: 8})
	e.start(t, Config{Client: e.newClient(t), Metrics: m2, Concurrency: 8})

	const n = 200
	specs := make([]delayq.Spec, n)
	for i := range specs {
		specs[i] = delayq.Spec{
			ID: fmt.Sprintf("job-%03d", i), Body: []byte(fmt.Sprint(i)), Format: delayq.FormatJSON,
			Delay: time.Duration(i%4) * 100 * time.Millisecond, CallbackURL: rcv.url("/"),
		}
	}
	res, err := e.c.EnqueueBatch(testContext(t), "fanout", specs)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("job %d: %v", i, r.Err)
		}
	}
	testwait.For(t, 30*time.Second, "every job to be acked", func() bool {
		s, err := e.c.Stats(testContext(t), "fanout")
		return err == nil && s.Delayed+s.Ready+s.Reserved+s.Dead == 0 && rcv.count() >= n
	})
	seen := map[string]int{}
	for _, d := range rcv.deliveries() {
		seen[d.str(t, "id")]++
	}
	for _, s := range specs {
		if seen[s.ID] != 1 {
			t.Errorf("%s delivered %d times", s.ID, seen[s.ID])
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct jobs delivered, want %d", len(seen), n)
	}
	d1, d2 := counter(t, m1.Delivered, "fanout", "push"), counter(t, m2.Delivered, "fanout", "push")
	if d1+d2 != n {
		t.Errorf("the dispatchers count %v + %v deliveries, want %d", d1, d2, n)
	}
	t.Logf("deliveries: %v and %v", d1, d2)
}

func TestStopWaitsForTheDeliveryInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rcv := newReceiver(t, nil, func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	e.enqueue(t, "t", delayq.Spec{ID: "slow", CallbackURL: rcv.url("/")})
	d, err := New(Config{Client: e.c, Secret: mustSecret(t, testSecret), Guard: NewGuard(allowLoopback), Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(release); _ = d.Stop(context.Background()) }) // a no-op once stopped
	waitChan(t, arrived, "the delivery")
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		stopped <- d.Stop(ctx)
	}()
	waitChan(t, d.stopping, "Stop to stop fetching") // it now waits for the delivery
	release <- struct{}{}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not return")
	}
	if j := e.get(t, "t", "slow"); j != nil {
		t.Fatalf("after Stop the job is %s, want acked", j.State)
	}
	if n := rcv.count(); n != 1 {
		t.Errorf("the receiver got %d requests, want 1", n)
	}
}

func TestStopCutsAndReleases(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	arrived := make(chan struct{})
	var once sync.Once
	first := true
	var mu sync.Mutex
	rcv := newReceiver(t, nil, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hang := first
		first = false
		mu.Unlock()
		if hang { // until Stop cuts the request
			once.Do(func() { close(arrived) })
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
		}
	})
	// A long TTR: a redelivery within the test can only come from the release.
	e.enqueue(t, "t", delayq.Spec{ID: "cut", TTR: time.Minute, CallbackURL: rcv.url("/")})
	d1, err := New(Config{Client: e.c, Secret: mustSecret(t, testSecret), Guard: NewGuard(allowLoopback), Logger: e.log})
	if err != nil {
		t.Fatal(err)
	}
	if err := d1.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d1.Stop(context.Background()) }) // a no-op once stopped
	waitChan(t, arrived, "the delivery")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := d1.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want context.DeadlineExceeded", err)
	}
	j := e.get(t, "t", "cut")
	if j == nil || j.State != delayq.StateReady || j.Attempts != 0 {
		t.Fatalf("after a cut Stop the job is %+v, want ready with no attempt counted", j)
	}

	e.start(t, Config{Client: e.newClient(t)}) // the next server
	testwait.For(t, 10*time.Second, "the redelivery", func() bool { return e.get(t, "t", "cut") == nil })
	got := rcv.deliveries()
	if len(got) != 2 {
		t.Fatalf("the receiver got %d requests, want 2", len(got))
	}
	if a := got[1].attempt(t); a != 1 {
		t.Errorf("the redelivery is attempt %d, want 1", a)
	}
	if got[0].header.Get("webhook-id") != got[1].header.Get("webhook-id") {
		t.Error("the redelivery has another webhook-id")
	}
}

// waitChan waits for ch to be closed, failing the test after 10s.
func waitChan(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
