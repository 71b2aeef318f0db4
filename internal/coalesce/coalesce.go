// Package coalesce groups concurrent calls into shared round trips to Redis.
package coalesce

import (
	"context"
	"runtime"
	"sync"
)

// Coalescer groups concurrent calls into shared round trips to Redis, like a database's group
// commit: while a flush is in flight, calls that arrive queue up and leave together in the
// next one. A call made while a flush slot is free leaves at once, so no timer adds latency,
// and a call with nobody to share with flushes on its own goroutine; under load, one script
// call carries many jobs and Redis spends its time on jobs, not on per-call overhead.
type Coalescer[Req, Res any] struct {
	flush       func(ctx context.Context, reqs []Req) []Res // one result per request, in order
	maxBatch    int
	maxInFlight int

	mu       sync.Mutex
	queue    []*waiter[Req, Res]
	inFlight int
}

type waiter[Req, Res any] struct {
	ctx  context.Context
	req  Req
	res  Res
	done chan struct{}
}

// New returns a Coalescer that sends up to maxBatch requests per flush, with at most
// maxInFlight flushes at once. flush returns one result per request, in order.
func New[Req, Res any](maxBatch, maxInFlight int, flush func(context.Context, []Req) []Res) *Coalescer[Req, Res] {
	return &Coalescer[Req, Res]{flush: flush, maxBatch: maxBatch, maxInFlight: maxInFlight}
}

// Do queues req and returns its result once the flush that carried it is done. When ctx ends
// first it returns ok false: the request may still take effect, as with any timed-out call.
func (c *Coalescer[Req, Res]) Do(ctx context.Context, req Req) (res Res, ok bool) {
	c.mu.Lock()
	start := c.inFlight < c.maxInFlight
	if start {
		c.inFlight++
	}
	if start && len(c.queue) == 0 {
		c.mu.Unlock()
		// Alone: no hand-off to another goroutine, nothing to wait on, and the call's own
		// context bounds the round trip.
		res = c.flush(ctx, []Req{req})[0]
		c.handOff()
		return res, ctx.Err() == nil
	}
	w := &waiter[Req, Res]{ctx: ctx, req: req, done: make(chan struct{})}
	c.queue = append(c.queue, w)
	c.mu.Unlock()
	if start {
		go c.run()
	}
	select {
	case <-w.done:
		return w.res, true
	case <-ctx.Done():
		return res, false
	}
}

// handOff gives back a caller's flush slot, or passes it on to a goroutine that flushes the
// calls queued meanwhile: the caller returns with its result however long the queue stays full.
func (c *Coalescer[Req, Res]) handOff() {
	c.mu.Lock()
	idle := len(c.queue) == 0
	if idle {
		c.inFlight--
	}
	c.mu.Unlock()
	if !idle {
		go c.run()
	}
}

// run flushes queued requests until the queue is empty, and then gives back its flush slot.
func (c *Coalescer[Req, Res]) run() {
	for {
		// Yield first: the callers the last flush just woke are about to call again, and the
		// next flush should carry them all rather than the first one or two.
		runtime.Gosched()
		c.mu.Lock()
		n := min(len(c.queue), c.maxBatch)
		if n == 0 {
			c.inFlight--
			c.mu.Unlock()
			return
		}
		batch := c.queue[:n:n]
		c.queue = c.queue[n:]
		c.mu.Unlock()

		reqs := make([]Req, n)
		for i, w := range batch {
			reqs[i] = w.req
		}
		// One caller's cancellation must not fail the others' requests.
		results := c.flush(context.WithoutCancel(batch[0].ctx), reqs)
		for i, w := range batch {
			w.res = results[i]
			close(w.done)
		}
	}
}
