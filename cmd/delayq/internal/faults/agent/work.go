package main

import (
	"context"
	"errors"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
)

// work runs a delayq.Worker on the topic until ctx ends, then stops it gracefully. Its handler
// logs each delivery, runs for -sleep (cut short if the Worker cancels it), and acks the job
// itself so as to log the outcome of the ack: acked only once Ack returned nil. The late ack
// of a handler whose lease was lost is attempted all the same: the suite checks it is refused.
func work(ctx context.Context, o *options, c *delayq.Client, log *faults.Log) error {
	w, err := delayq.NewWorker(c, delayq.WorkerConfig{Concurrency: o.conc})
	if err != nil {
		return err
	}
	h := func(hctx context.Context, job *delayq.Job) error {
		e := faults.Event{
			Kind: faults.Delivered, ID: job.ID, Attempt: job.Attempts, Lease: job.LeaseToken,
			RunAt: job.RunAt.UnixMilli(), Reserved: job.LeaseDeadline.Add(-job.TTR).UnixMilli(),
		}
		if err := faults.CheckBody(job.ID, job.Body); err != nil {
			e.Bad = err.Error()
		}
		log.Write(e)
		pause(hctx, o.sleep)
		ack(c, job, log)
		return nil
	}
	if err := w.Handle(o.topic, h); err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.Stop(sctx)
}

// ack acks job and logs the outcome.
func ack(c *delayq.Client, job *delayq.Job, log *faults.Log) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e := faults.Event{ID: job.ID, Lease: job.LeaseToken}
	e.Kind = faults.AckSent
	log.Write(e)
	err := c.Ack(ctx, job.Lease())
	switch {
	case err == nil:
		e.Kind = faults.Acked
	case errors.Is(err, delayq.ErrLeaseLost):
		e.Kind = faults.AckRefused
	default:
		e.Kind, e.Err = faults.AckErr, err.Error()
	}
	log.Write(e)
}

// cancelJobs cancels every -every-th job of -first to -first+n-1 at -rate cancels per second.
func cancelJobs(ctx context.Context, o *options, c *delayq.Client, log *faults.Log) error {
	pace := newPacer(o.rate)
	k := 0
	for n := 0; n < o.n && ctx.Err() == nil; n += max(o.every, 1) {
		k++
		if !pace.wait(ctx, k) {
			break
		}
		id := faults.JobID(o.prefix, o.first+n)
		log.Write(faults.Event{Kind: faults.CancelSent, ID: id})
		err := c.Cancel(ctx, o.topic, id)
		switch {
		case err == nil:
			log.Write(faults.Event{Kind: faults.Cancelled, ID: id})
		case errors.Is(err, delayq.ErrNotFound):
			log.Write(faults.Event{Kind: faults.CancelMissing, ID: id})
		default:
			log.Write(faults.Event{Kind: faults.CancelErr, ID: id, Err: err.Error()})
		}
	}
	return nil
}
