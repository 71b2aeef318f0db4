package store

import (
	"context"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
)

func newTestStore(t *testing.T) (*Store, keys.Partition) {
	t.Helper()
	s := New(redistest.Standalone(t).Client(t), "test")
	return s, s.Partition("t", 0)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func enqueueOne(t *testing.T, s *Store, p keys.Partition, id string, delayMs int64) {
	t.Helper()
	res := s.EnqueueMany(testCtx(t), []keys.Partition{p}, [][]NewJob{{{ID: id, DelayMs: delayMs, TTRMs: 30000, MaxRetries: 3, Body: []byte("x")}}})
	if res[0].Err != nil || res[0].Jobs[0].Err != nil {
		t.Fatalf("enqueue %s: %+v", id, res[0])
	}
}

func counts(t *testing.T, s *Store, p keys.Partition) Counts {
	t.Helper()
	c, err := s.Stats(testCtx(t), []keys.Partition{p})
	if err != nil {
		t.Fatal(err)
	}
	c[0].NowMs, c[0].EarliestMs, c[0].OldestReadyMs = 0, 0, 0
	return c[0]
}
