package coalesce

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Concurrent calls share flushes, each gets its own result, and no more flushes run at once
// than allowed.
func TestCoalescerGroupsCalls(t *testing.T) {
	var flushes, running, most atomic.Int64
	c := New(100, 2, func(_ context.Context, reqs []int) []int {
		flushes.Add(1)
		now := running.Add(1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // a flush that takes a while, so that calls pile up behind it
		running.Add(-1)
		out := make([]int, len(reqs))
		for i, r := range reqs {
			out[i] = r * 2
		}
		return out
	})
	const calls = 400
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			res, ok := c.Do(context.Background(), i)
			if !ok || res != 2*i {
				t.Errorf("call %d: %d, %v", i, res, ok)
			}
		})
	}
	wg.Wait()
	if n := flushes.Load(); n >= calls/4 {
		t.Errorf("%d flushes for %d concurrent calls", n, calls)
	}
	if m := most.Load(); m > 2 {
		t.Errorf("%d flushes ran at once, limit 2", m)
	}
	// The coalescer is idle again: a lone call flushes at once.
	before := flushes.Load()
	if res, ok := c.Do(context.Background(), 7); !ok || res != 14 || flushes.Load() != before+1 {
		t.Fatalf("lone call: %d, %v, %d flushes", res, ok, flushes.Load()-before)
	}
}

// A call whose context ends while it waits returns at once without its result; the others
// are not affected.
func TestCoalescerCallerGivesUp(t *testing.T) {
	release := make(chan struct{})
	flushing := make(chan struct{}, 1)
	c := New(10, 1, func(_ context.Context, reqs []int) []int {
		select {
		case flushing <- struct{}{}:
		default:
		}
		<-release
		return reqs
	})
	go c.Do(context.Background(), 1) // holds the only flush slot
	<-flushing
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, ok := c.Do(ctx, 2); ok {
		t.Fatal("a call whose context ended reported a result")
	}
	close(release)
	if res, ok := c.Do(context.Background(), 3); !ok || res != 3 {
		t.Fatalf("later call: %d, %v", res, ok)
	}
}
