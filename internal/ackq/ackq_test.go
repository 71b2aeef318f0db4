package ackq

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/testwait"
)

// recorder is a Flush that records what it was sent and answers from fail.
type recorder struct {
	mu   sync.Mutex
	sent [][]string // lease ids of each flush
	fail func(id string, try int) error
	try  map[string]int
}

func (r *recorder) flush(_ context.Context, acks []Ack) []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.try == nil {
		r.try = map[string]int{}
	}
	var ids []string
	errs := make([]error, len(acks))
	for i, a := range acks {
		ids = append(ids, a.Lease.ID)
		r.try[a.Lease.ID]++
		if r.fail != nil {
			errs[i] = r.fail(a.Lease.ID, r.try[a.Lease.ID])
		}
	}
	r.sent = append(r.sent, ids)
	return errs
}

func (r *recorder) flushes() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.sent...)
}

func ack(id string) Ack {
	return Ack{Lease: store.Lease{ID: id, Token: "t"}, Topic: "t", Deadline: time.Now().Add(time.Minute)}
}

func TestQueuedAcksRideOrLeaveAfterWait(t *testing.T) {
	r := &recorder{}
	q := New(r.flush, slog.New(slog.DiscardHandler))
	if q.Add(ack("a")) {
		t.Fatal("Add with no active fetcher queued the ack")
	}
	q.Resume()
	if !q.Add(ack("b")) || !q.Add(ack("c")) {
		t.Fatal("Add with an active fetcher did not queue")
	}
	if got := q.Take(); len(got) != 2 {
		t.Fatalf("Take = %d acks, want 2", len(got))
	}
	// Nobody takes the next one: it leaves on its own after Wait.
	start := time.Now()
	q.Add(ack("d"))
	testwait.For(t, 5*time.Second, "the timed send", func() bool { return len(r.flushes()) == 1 })
	if took := time.Since(start); took < Wait {
		t.Errorf("the ack left after %v, before Wait", took)
	}
	// The last fetcher to pause sends what is queued.
	q.Add(ack("e"))
	q.Pause()
	if f := r.flushes(); len(f) != 2 || f[1][0] != "e" {
		t.Errorf("flushes %v, want [d] then [e]", f)
	}
	q.StopTimed()
}

func TestFailedAcksAreRetriedUntilDone(t *testing.T) {
	passing := errors.New("connection reset")
	r := &recorder{fail: func(id string, try int) error {
		switch {
		case id == "lost":
			return store.ErrLeaseLost
		case try < 3:
			return passing
		}
		return nil
	}}
	q := New(r.flush, slog.New(slog.DiscardHandler))
	q.Send([]Ack{ack("a"), ack("lost")})
	testwait.For(t, 5*time.Second, "the retries", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.try["a"] == 3
	})
	q.Close()
	if !q.Wait(context.Background()) {
		t.Fatal("the retry loop did not end")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.try["lost"] != 1 {
		t.Errorf("a lost lease was sent %d times, want once", r.try["lost"])
	}
}
