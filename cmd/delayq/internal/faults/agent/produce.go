package main

import (
	"context"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
)

// produce enqueues jobs -first to -first+n-1, -batch per call, -concurrency calls at once, at
// -rate jobs per second. A failed call is logged and not retried: its jobs stay unconfirmed.
func produce(ctx context.Context, o *options, c *delayq.Client, log *faults.Log) error {
	backoff, err := o.backoffSteps()
	if err != nil {
		return err
	}
	spec := func(n int) (delayq.Spec, int64) {
		id := faults.JobID(o.prefix, n)
		s := delayq.Spec{
			ID: id, Body: faults.Body(id, o.pad), Format: delayq.FormatJSON,
			Delay: o.delay + spreadOf(id, o.spread), TTR: o.ttr, Backoff: backoff,
			MaxRetries: max(o.maxRetries, 0), NoRetries: o.maxRetries == 0,
		}
		var want int64
		switch {
		case o.at != 0:
			s.Delay, s.RunAt = 0, time.UnixMilli(o.at)
		case o.runAtLead != 0:
			s.Delay, s.RunAt = 0, o.now().Add(o.runAtLead)
		}
		if !s.RunAt.IsZero() {
			// Due times are whole milliseconds, a time between two rounds up.
			want = s.RunAt.Add(time.Millisecond - 1).UnixMilli()
		}
		return s, want
	}
	inBatches(ctx, o, func(from, k int) {
		specs := make([]delayq.Spec, k)
		wants := make([]int64, k)
		ids := make([]string, k)
		for i := range specs {
			specs[i], wants[i] = spec(o.first + from + i)
			ids[i] = specs[i].ID
		}
		enqueue(ctx, c, o.topic, specs, wants, ids, log)
	})
	return nil
}

// inBatches hands the jobs 0 to -n-1 (relative to -first) out in batches of up to -batch, to
// -concurrency goroutines that each call send for one batch at a time, at -rate jobs per
// second. It returns once every batch has been sent or ctx has ended.
func inBatches(ctx context.Context, o *options, send func(from, k int)) {
	pace := newPacer(o.rate)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(o.conc, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				from := int(next.Add(int64(o.batch))) - o.batch
				if from >= o.n {
					return
				}
				k := min(o.batch, o.n-from)
				if !pace.wait(ctx, from+k) {
					return
				}
				send(from, k)
			}
		}()
	}
	wg.Wait()
}

// enqueue makes one call and logs its outcome for each job.
func enqueue(ctx context.Context, c *delayq.Client, topic string, specs []delayq.Spec, wants []int64, ids []string, log *faults.Log) {
	log.Write(faults.Event{Kind: faults.Send, IDs: ids})
	var res []delayq.BatchResult
	var err error
	if len(specs) == 1 {
		var j *delayq.Job
		j, err = c.Enqueue(ctx, topic, specs[0])
		if err == nil {
			res = []delayq.BatchResult{{Job: j}}
		}
	} else {
		res, err = c.EnqueueBatch(ctx, topic, specs)
	}
	if err != nil {
		log.Write(faults.Event{Kind: faults.EnqueueErr, IDs: ids, Err: err.Error()})
		pause(ctx, 20*time.Millisecond) // no hot loop against a Redis that is down
		return
	}
	for i, r := range res {
		if r.Err != nil {
			log.Write(faults.Event{Kind: faults.EnqueueErr, ID: ids[i], Err: r.Err.Error()})
			continue
		}
		log.Write(faults.Event{Kind: faults.Enqueued, ID: ids[i], RunAt: r.Job.RunAt.UnixMilli(), Want: wants[i]})
	}
}

// spreadOf returns a fixed share of spread chosen by the job's id.
func spreadOf(id string, spread time.Duration) time.Duration {
	if spread <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return time.Duration(h.Sum64() % uint64(spread))
}

// pacer holds a producer to a rate of jobs per second.
type pacer struct {
	start time.Time
	rate  float64
}

func newPacer(rate float64) *pacer { return &pacer{start: time.Now(), rate: rate} }

// wait sleeps until n jobs are due by the rate; false when ctx ended first.
func (p *pacer) wait(ctx context.Context, n int) bool {
	if p.rate <= 0 {
		return ctx.Err() == nil
	}
	at := p.start.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	return pause(ctx, time.Until(at))
}

// pause sleeps for d; false when ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
