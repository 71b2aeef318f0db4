package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/redistest"
)

// TestPipelinerGroupsConcurrentCalls checks that calls arriving while a pipeline is in flight
// leave together in the next one, one pipeline at a time, and that each call gets its own
// error back.
func TestPipelinerGroupsConcurrentCalls(t *testing.T) {
	t.Parallel()
	var pipelines, running, most atomic.Int64
	failing := errors.New("job 7 failed")
	p := &pipeliner{send: func(_ context.Context, calls []floorCall) []error {
		pipelines.Add(1)
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(2 * time.Millisecond) // a round trip that takes a while, so that calls pile up
		running.Add(-1)
		errs := make([]error, len(calls))
		for i, c := range calls {
			if c.from == 7 {
				errs[i] = failing
			}
		}
		return errs
	}}
	const calls = 200
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			err := p.do(context.Background(), floorCall{from: i, to: i + 1})
			if want := i == 7; (err != nil) != want || (want && !errors.Is(err, failing)) {
				t.Errorf("call %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if n := pipelines.Load(); n >= calls/4 {
		t.Errorf("%d pipelines for %d concurrent calls, want them grouped", n, calls)
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d pipelines in flight at once, want 1", m)
	}
}

// TestFloorJobsOfEveryProduceAreNew enqueues twice through one floor queue: the second batch
// must add jobs, not overwrite the first batch's, or the scaling scenario's backlog would not
// grow under the probe.
func TestFloorJobsOfEveryProduceAreNew(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t).Client(t)
	ctx := context.Background()
	for _, pipelined := range []bool{false, true} {
		q, err := (&Floor{RDB: rdb, Pipelined: pipelined}).Open(ctx, fmt.Sprint("new-", pipelined))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := q.Produce(ctx, Plan{N: 50, Producers: 4, Delay: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		fq := q.(*floorQueue)
		if n, err := rdb.ZCard(ctx, fq.keys[1]).Result(); err != nil || n != 100 {
			t.Errorf("pipelined %v: %d jobs after two batches of 50, %v; want 100", pipelined, n, err)
		}
	}
}
