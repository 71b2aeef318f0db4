package delayq

import (
	"context"
	"errors"
	"time"

	"github.com/delayq/delayq/internal/store"
)

// finished is a handled job's ack (or nack) on its way to Redis.
type finished struct {
	ackReq
	topic    string
	deadline time.Time // the lease's deadline (local clock): after it there is nothing to settle
	tried    bool      // sent before without an answer: it may have gone through
}

func requests(fs []finished) []ackReq {
	out := make([]ackReq, len(fs))
	for i, f := range fs {
		out[i] = f.ackReq
	}
	return out
}

// ackWait bounds how long a queued ack waits for a reserve call to carry it: a fetcher whose
// call hangs (a Cluster shard that does not answer) must not hold the acks of other jobs.
const ackWait = 50 * time.Millisecond

// queueAck queues a finished job's ack for the next reserve call of an active fetcher, which
// the slot its handler frees wakes; if no call takes it within ackWait, it goes on its own. It
// reports false when no fetcher is active: the caller acks the job itself.
func (w *Worker) queueAck(f finished) bool {
	w.ackMu.Lock()
	defer w.ackMu.Unlock()
	if w.active == 0 {
		return false
	}
	w.acks = append(w.acks, f)
	if len(w.acks) == 1 {
		w.ackTimer.Reset(ackWait)
	}
	return true
}

func (w *Worker) takeAcks() []finished {
	w.ackMu.Lock()
	defer w.ackMu.Unlock()
	a := w.acks
	w.acks = nil
	return a
}

// sendQueuedAcks sends the acks no reserve call took within ackWait. Stop waits for it.
func (w *Worker) sendQueuedAcks() {
	w.ackMu.Lock()
	left := w.acks
	w.acks = nil
	if len(left) == 0 || w.fetchersDone {
		w.ackMu.Unlock()
		return
	}
	w.timedSends.Add(1)
	w.ackMu.Unlock()
	defer w.timedSends.Done()
	w.sendAcks(left)
}

// waitTimedSends waits for the sends of sendQueuedAcks once no fetcher is left to queue acks.
func (w *Worker) waitTimedSends() {
	w.ackMu.Lock()
	w.fetchersDone = true
	w.ackMu.Unlock()
	w.ackTimer.Stop()
	w.timedSends.Wait()
}

func (w *Worker) resume() {
	w.ackMu.Lock()
	w.active++
	w.ackMu.Unlock()
}

// pause marks a fetcher as waiting for due jobs (or gone); the last active one to pause acks
// what is queued, since no reserve call may come soon.
func (w *Worker) pause() {
	w.ackMu.Lock()
	w.active--
	var left []finished
	if w.active == 0 {
		left, w.acks = w.acks, nil
	}
	w.ackMu.Unlock()
	if len(left) > 0 {
		w.sendAcks(left)
	}
}

// sendAcks acks fs in one round trip of their own.
func (w *Worker) sendAcks(fs []finished) {
	ctx, cancel := context.WithTimeout(w.settleCtx, 10*time.Second)
	defer cancel()
	w.settleAcks(fs, w.c.flushAcks(ctx, requests(fs)))
}

// settleAcks takes the outcomes of acks sent. An ack that failed for a passing reason (a broken
// connection, a failover) goes to the retry loop. A lease reported lost is done if an earlier
// try of the same ack may have gone through (it then took the lease away); else the job was
// cancelled or its lease expired, and the next holder handles it.
func (w *Worker) settleAcks(fs []finished, errs []error) {
	var again []finished
	for i, err := range errs {
		f := fs[i]
		switch {
		case err == nil:
		case errors.Is(err, ErrLeaseLost):
			// The job was cancelled, or its lease expired (which renew has warned of) and the
			// job is another consumer's now.
			if !f.tried {
				w.log.Info("delayq: ack refused: the job was cancelled or its lease expired before the handler finished", "topic", f.topic, "id", f.lease.ID)
			}
		case !time.Now().Before(f.deadline):
			w.log.Warn("delayq: ack failed until the lease deadline; the job will be delivered again", "topic", f.topic, "id", f.lease.ID, "err", err)
		default:
			f.tried = true
			again = append(again, f)
		}
	}
	if len(again) > 0 {
		w.retryLater(again)
	}
}

// retryLater hands acks that failed to the retry loop, starting it if it is not running.
func (w *Worker) retryLater(fs []finished) {
	w.ackMu.Lock()
	defer w.ackMu.Unlock()
	if w.closed && !w.retrying {
		for _, f := range fs {
			w.log.Warn("delayq: ack not sent before the Worker stopped; the job will be delivered again", "topic", f.topic, "id", f.lease.ID)
		}
		return
	}
	w.retry = append(w.retry, fs...)
	if !w.retrying {
		w.retrying = true
		w.settling.Add(1)
		go w.retryAcks()
	}
}

// retryAcks sends the acks in the retry queue again, with a growing pause between rounds, until
// the queue is empty or the Worker stops waiting for it.
func (w *Worker) retryAcks() {
	defer w.settling.Done()
	for failures := 1; ; failures++ {
		sleep(w.settleCtx, settleDelay(failures))
		w.ackMu.Lock()
		fs := w.retry
		w.retry = nil
		if len(fs) == 0 || w.settleCtx.Err() != nil {
			w.retrying = false
			w.ackMu.Unlock()
			for _, f := range fs {
				w.log.Warn("delayq: ack not sent before the Worker stopped; the job will be delivered again", "topic", f.topic, "id", f.lease.ID)
			}
			return
		}
		w.ackMu.Unlock()
		w.sendAcks(fs)
	}
}

// closeSettling makes later failed acks give up instead of starting a retry loop: Stop is
// about to wait for the loop.
func (w *Worker) closeSettling() {
	w.ackMu.Lock()
	w.closed = true
	w.ackMu.Unlock()
}

// finish acks or nacks a job after its handler returned err, trying again after passing
// failures until it goes through, the lease is lost, its deadline passes or the Worker stops
// waiting.
func (w *Worker) finish(f finished, err error) {
	if err == nil {
		w.sendAcks([]finished{f})
		return
	}
	o := NackOptions{Error: err.Error()}
	var he *handlerError
	if errors.As(err, &he) {
		o.Delay, o.Dead = he.delay, he.dead
	}
	for failures := 0; ; failures++ {
		ctx, cancel := context.WithTimeout(w.settleCtx, 10*time.Second)
		_, nerr := w.c.Nack(ctx, Lease{Topic: f.topic, ID: f.lease.ID, Token: f.lease.Token}, o)
		cancel()
		switch {
		case nerr == nil:
			return
		case errors.Is(nerr, ErrLeaseLost):
			// A nack of the same lease that went through answers as it did (its record), so
			// lost means lost.
			w.log.Info("delayq: nack refused: the job was cancelled or its lease expired before the handler finished", "topic", f.topic, "id", f.lease.ID)
			return
		case !store.OutcomeUnknown(nerr), !time.Now().Before(f.deadline), w.settleCtx.Err() != nil:
			w.log.Warn("delayq: nack failed; the job will be delivered again after its TTR", "topic", f.topic, "id", f.lease.ID, "err", nerr)
			return
		}
		sleep(w.settleCtx, settleDelay(failures+1))
	}
}

// settleDelay is the pause before the next try of an ack, nack or renewal that failed
// failures times: short, and never more than half a second, so that a try lands soon after
// Redis is back and well before the lease's deadline.
func settleDelay(failures int) time.Duration {
	return min(25*time.Millisecond<<min(failures, 5), 500*time.Millisecond)
}
