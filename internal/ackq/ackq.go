// Package ackq carries the acks of a Worker's finished jobs to Redis. An ack waits for the next
// reserve call of an active fetcher, which takes it along (one round trip for a batch of jobs
// and their acks); if no call takes it within Wait, or no fetcher is active, it leaves in a
// round trip of its own. An ack that fails for a passing reason (a broken connection, a
// failover) is tried again until it goes through, its lease is lost, its deadline passes or the
// Worker stops waiting.
package ackq

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
)

// Wait bounds how long a queued ack waits for a reserve call to carry it: a fetcher whose call
// hangs (a Cluster shard that does not answer) must not hold the acks of other jobs.
const Wait = 50 * time.Millisecond

// Ack is a handled job's ack on its way to Redis.
type Ack struct {
	Part     keys.Partition
	Lease    store.Lease
	Topic    string
	Deadline time.Time // the lease's deadline (local clock): after it there is nothing to settle
	tried    bool      // sent before without an answer: it may have gone through
}

// Flush sends acks in one round trip and returns each one's outcome: nil, store.ErrLeaseLost,
// or an error that leaves it undone or unknown.
type Flush func(ctx context.Context, acks []Ack) []error

// Queue holds a Worker's acks until they are sent.
type Queue struct {
	flush Flush
	log   *slog.Logger

	mu           sync.Mutex
	queued       []Ack // waiting for the next reserve call
	retry        []Ack // failed once, waiting for the retry loop
	retrying     bool  // the retry loop runs
	closed       bool  // Stop waits for the retry loop: no new one may start
	active       int   // fetchers that are not waiting for due jobs
	timer        *time.Timer
	timedSends   sync.WaitGroup // the timer's sends in flight
	fetchersDone bool           // no fetcher is left: no timed send starts

	settling sync.WaitGroup // the retry loop
	ctx      context.Context
	cancel   context.CancelFunc // ends every retry when the Worker gives up waiting
}

// New returns a Queue that sends acks with flush.
func New(flush Flush, log *slog.Logger) *Queue {
	q := &Queue{flush: flush, log: log}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	q.timer = time.AfterFunc(time.Hour, q.sendQueued)
	q.timer.Stop()
	return q
}

// Context is the context of every send and retry: it ends when the Worker gives up waiting
// (Cancel). Nacks use it too.
func (q *Queue) Context() context.Context { return q.ctx }

// Add queues a finished job's ack for the next reserve call of an active fetcher; if none takes
// it within Wait, it goes on its own. It reports false when no fetcher is active: the caller
// sends the ack itself (Send).
func (q *Queue) Add(a Ack) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.active == 0 {
		return false
	}
	q.queued = append(q.queued, a)
	if len(q.queued) == 1 {
		q.timer.Reset(Wait)
	}
	return true
}

// Take returns the queued acks, for a reserve call to carry; the caller passes their outcomes
// to Settle.
func (q *Queue) Take() []Ack {
	q.mu.Lock()
	defer q.mu.Unlock()
	a := q.queued
	q.queued = nil
	return a
}

// Resume marks a fetcher as active: it is about to make reserve calls.
func (q *Queue) Resume() {
	q.mu.Lock()
	q.active++
	q.mu.Unlock()
}

// Pause marks a fetcher as waiting for due jobs (or gone); the last active one to pause sends
// what is queued, since no reserve call may come soon.
func (q *Queue) Pause() {
	q.mu.Lock()
	q.active--
	var left []Ack
	if q.active == 0 {
		left, q.queued = q.queued, nil
	}
	q.mu.Unlock()
	if len(left) > 0 {
		q.Send(left)
	}
}

// sendQueued sends the acks no reserve call took within Wait. StopTimed waits for it.
func (q *Queue) sendQueued() {
	q.mu.Lock()
	left := q.queued
	q.queued = nil
	if len(left) == 0 || q.fetchersDone {
		q.mu.Unlock()
		return
	}
	q.timedSends.Add(1)
	q.mu.Unlock()
	defer q.timedSends.Done()
	q.Send(left)
}

// StopTimed ends the timed sends once no fetcher is left to queue acks, and waits for those
// under way.
func (q *Queue) StopTimed() {
	q.mu.Lock()
	q.fetchersDone = true
	q.mu.Unlock()
	q.timer.Stop()
	q.timedSends.Wait()
}

// Send sends acks in one round trip of their own.
func (q *Queue) Send(acks []Ack) {
	ctx, cancel := context.WithTimeout(q.ctx, 10*time.Second)
	defer cancel()
	q.Settle(acks, q.flush(ctx, acks))
}

// Settle takes the outcomes of acks sent. An ack that failed for a passing reason goes to the
// retry loop. A lease reported lost is done if an earlier try of the same ack may have gone
// through (it then took the lease away); else the job was cancelled or its lease expired, and
// the next holder handles it.
func (q *Queue) Settle(acks []Ack, errs []error) {
	var again []Ack
	for i, err := range errs {
		a := acks[i]
		switch {
		case err == nil:
		case errors.Is(err, store.ErrLeaseLost):
			if !a.tried {
				q.log.Info("delayq: ack refused: the job was cancelled or its lease expired before the handler finished", "topic", a.Topic, "id", a.Lease.ID)
			}
		case !time.Now().Before(a.Deadline):
			q.log.Warn("delayq: ack failed until the lease deadline; the job will be delivered again", "topic", a.Topic, "id", a.Lease.ID, "err", err)
		default:
			a.tried = true
			again = append(again, a)
		}
	}
	if len(again) > 0 {
		q.retryLater(again)
	}
}

// retryLater hands acks that failed to the retry loop, starting it if it is not running.
func (q *Queue) retryLater(acks []Ack) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed && !q.retrying {
		for _, a := range acks {
			q.log.Warn("delayq: ack not sent before the Worker stopped; the job will be delivered again", "topic", a.Topic, "id", a.Lease.ID)
		}
		return
	}
	q.retry = append(q.retry, acks...)
	if !q.retrying {
		q.retrying = true
		q.settling.Add(1)
		go q.retryLoop()
	}
}

// retryLoop sends the acks in the retry queue again, with a growing pause between rounds, until
// the queue is empty or the Worker stops waiting for it.
func (q *Queue) retryLoop() {
	defer q.settling.Done()
	for failures := 1; ; failures++ {
		sleep(q.ctx, Delay(failures))
		q.mu.Lock()
		acks := q.retry
		q.retry = nil
		if len(acks) == 0 || q.ctx.Err() != nil {
			q.retrying = false
			q.mu.Unlock()
			for _, a := range acks {
				q.log.Warn("delayq: ack not sent before the Worker stopped; the job will be delivered again", "topic", a.Topic, "id", a.Lease.ID)
			}
			return
		}
		q.mu.Unlock()
		q.Send(acks)
	}
}

// Close makes later failed acks give up instead of starting a retry loop: the Worker is about
// to wait for the loop (Wait).
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// Wait waits for the retry loop until ctx ends, and reports whether it finished.
func (q *Queue) Wait(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { q.settling.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// Cancel ends every retry and waits for the retry loop to stop.
func (q *Queue) Cancel() {
	q.cancel()
	q.settling.Wait()
}

// Delay is the pause before the next try of an ack, nack or renewal that failed failures
// times: short, and never more than half a second, so that a try lands soon after Redis is
// back and well before the lease's deadline.
func Delay(failures int) time.Duration {
	return min(25*time.Millisecond<<min(failures, 5), 500*time.Millisecond)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
