package delayq

import (
	"context"
	"errors"
	"time"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/tracing"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Enqueue adds one job to topic. Once it returns nil, the job is stored and will be delivered at
// least once unless cancelled. A duplicate id is ErrExists and changes nothing, except that
// the same call again — the same id and spec (trace headers aside), within Config.ReplayWindow
// of the job's creation — answers the first call's job, whatever became of the job since
// (delivered, failed, acked, dead, cancelled): a caller that lost an answer may simply try
// again, and the job is neither stored nor run a second time. Concurrent calls share round
// trips to Redis.
//
// Inside a span (of ctx), the job's headers get its trace context: see Spec.Headers.
func (c *Client) Enqueue(ctx context.Context, topic string, s Spec) (*Job, error) {
	if err := ValidateTopic(topic); err != nil {
		return nil, err
	}
	ctx, span := c.trace.Start(ctx, tracing.Send, topic)
	job, err := c.enqueue(ctx, topic, s)
	if job != nil {
		tracing.Set(span, semconv.MessagingMessageID(job.ID))
	}
	tracing.End(span, err)
	return job, err
}

func (c *Client) enqueue(ctx context.Context, topic string, s Spec) (*Job, error) {
	s.Headers = withTrace(ctx, s.Headers)
	j, err := c.cfg.Limits.toNewJob(s, c.newID)
	if err != nil {
		return nil, err
	}
	if s.ID != "" {
		j.Print = store.Fingerprint(j)
	}
	return c.enqueueJob(ctx, topic, j, s.ID == "")
}

// enqueueJob adds a validated job; generated says its id was made here.
func (c *Client) enqueueJob(ctx context.Context, topic string, j store.NewJob, generated bool) (*Job, error) {
	n, err := c.partitions(ctx, topic, true)
	if err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		part := c.store.Partition(topic, keys.PartitionOf(j.ID, n))
		res, ok := c.enqueuer.Do(ctx, enqueueReq{topic: topic, part: part, job: j, generated: generated})
		if !ok {
			return nil, ctx.Err()
		}
		// A generated id can collide with one another process drew in the same millisecond.
		if errors.Is(res.err, ErrExists) && generated && try < 3 {
			j.ID = c.newID()
			continue
		}
		return res.job, res.err
	}
}

// BatchResult is the outcome of one job of a batch: the job, or why it was not added.
type BatchResult struct {
	Job *Job
	Err error
}

// EnqueueBatch adds jobs to topic with one script call per partition, all in one round trip.
// Each job succeeds or fails alone, and so does each partition's call: when one of a Cluster's
// shards is down, the jobs for its partitions carry the error and the others are stored.
// Results are in the order of specs. The error is non-nil only when the batch as a whole could
// not be tried (bad topic, too many jobs) or no call reached Redis.
func (c *Client) EnqueueBatch(ctx context.Context, topic string, specs []Spec) ([]BatchResult, error) {
	if len(specs) == 0 || len(specs) > c.cfg.Limits.MaxBatch {
		return nil, invalid("jobs", "a batch holds 1 to %d jobs, got %d", c.cfg.Limits.MaxBatch, len(specs))
	}
	if err := ValidateTopic(topic); err != nil {
		return nil, err
	}
	ctx, span := c.trace.Start(ctx, tracing.Send, topic, semconv.MessagingBatchMessageCount(len(specs)))
	results, err := c.enqueueBatch(ctx, topic, specs)
	tracing.End(span, err)
	return results, err
}

func (c *Client) enqueueBatch(ctx context.Context, topic string, specs []Spec) ([]BatchResult, error) {
	results := make([]BatchResult, len(specs))
	jobs := make([]store.NewJob, 0, len(specs))
	index := make([]int, 0, len(specs)) // jobs[k] came from specs[index[k]]
	seen := make(map[string]bool, len(specs))
	for i, s := range specs {
		s.Headers = withTrace(ctx, s.Headers)
		j, err := c.cfg.Limits.toNewJob(s, c.newID)
		if err == nil && seen[j.ID] {
			err = ErrExists
		}
		if err != nil {
			results[i].Err = err
			continue
		}
		if s.ID != "" {
			j.Print = store.Fingerprint(j)
		}
		seen[j.ID] = true
		jobs = append(jobs, j)
		index = append(index, i)
	}
	if len(jobs) == 0 {
		return results, nil // nothing valid: the topic is not created either
	}
	n, err := c.partitions(ctx, topic, true)
	if err != nil {
		return nil, err
	}
	reached := false // whether any call got an answer
	var failure error
	// A generated id can collide with one another process drew in the same millisecond: such
	// jobs draw a new id and go again.
	for try := 0; len(jobs) > 0; try++ {
		var again []store.NewJob
		var againIndex []int
		for k, a := range c.add(ctx, topic, n, jobs, func(k int) bool { return specs[index[k]].ID == "" }) {
			i := index[k]
			if a.err == nil || !store.OutcomeUnknown(a.err) {
				reached = true
			} else {
				failure = a.err
			}
			if errors.Is(a.err, ErrExists) && specs[i].ID == "" && try < 3 {
				jobs[k].ID = c.newID()
				again = append(again, jobs[k])
				againIndex = append(againIndex, i)
				continue
			}
			results[i] = BatchResult{Job: a.job, Err: a.err}
		}
		jobs, index = again, againIndex
	}
	if !reached {
		return nil, failure
	}
	return results, nil
}

// add stores jobs with one script call per partition, all in one round trip, and returns each
// job's outcome in order; generated(k) says whether jobs[k]'s id was made here.
func (c *Client) add(ctx context.Context, topic string, n int, jobs []store.NewJob, generated func(k int) bool) []enqueueRes {
	reqs := make([]enqueueReq, len(jobs))
	for k, j := range jobs {
		reqs[k] = enqueueReq{topic: topic, part: c.store.Partition(topic, keys.PartitionOf(j.ID, n)), job: j, generated: generated(k)}
	}
	return c.flushEnqueues(ctx, reqs)
}

// newJob describes a job just added, as Get would have returned it then.
func newJob(topic string, j store.NewJob, createdMs, runAtMs int64) *Job {
	r := store.Record{
		ID: j.ID, State: store.StateDelayed, Format: j.Format, Priority: j.Priority,
		CreatedMs: createdMs, RunAtMs: runAtMs, MaxRetries: j.MaxRetries, TTRMs: j.TTRMs,
		Body: j.Body, BackoffMs: j.BackoffMs, Callback: j.Callback, Headers: j.Headers,
		MaxSnoozes: j.MaxSnoozes, UniqueForMs: max(j.UniqueForMs, 0),
	}
	if runAtMs <= createdMs {
		r.State = store.StateReady
	}
	return jobFromRecord(topic, r)
}

// Get returns a job in any state, or ErrNotFound; a *DoneError (ErrDone) when there is none
// but its id is still taken by a job that ended within its Spec.UniqueFor.
func (c *Client) Get(ctx context.Context, topic, id string) (*Job, error) {
	p, err := c.existing(ctx, topic, id)
	if err != nil {
		return nil, jobNotFound(err, topic, id)
	}
	r, err := c.store.Get(ctx, p, id)
	if err != nil {
		return nil, doneError(jobNotFound(err, topic, id), topic, id)
	}
	return jobFromRecord(topic, r), nil
}

// Cancel deletes a job in any state. Once it returns nil the job is never handed out again, and
// a consumer holding its lease gets ErrLeaseLost. A job that does not exist is ErrNotFound,
// except within Config.ReplayWindow of its creation: a job cancelled since answers nil again,
// so that a cancel retried after a lost answer learns that it took effect, and one acked, or
// dead and deleted, since is an *EndedError (which matches ErrNotFound) saying so.
func (c *Client) Cancel(ctx context.Context, topic, id string) error {
	p, err := c.existing(ctx, topic, id)
	if err != nil {
		return jobNotFound(err, topic, id)
	}
	err = c.store.Cancel(ctx, p, id)
	var ended *store.EndedError
	if errors.As(err, &ended) {
		return &EndedError{Topic: topic, ID: id, Outcome: ended.Outcome, EndedAt: time.UnixMilli(ended.EndedMs)}
	}
	return jobNotFound(err, topic, id)
}

// Reschedule makes a delayed or ready job due delay after now (by the Redis server's clock).
// A reserved or dead job is ErrWrongState.
func (c *Client) Reschedule(ctx context.Context, topic, id string, delay time.Duration) (*Job, error) {
	if delay < 0 || delay > c.cfg.Limits.MaxDelay {
		return nil, invalid("delay", "%s is outside 0 to %s", ms(delay), ms(c.cfg.Limits.MaxDelay))
	}
	return c.reschedule(ctx, topic, id, true, ceilMs(delay))
}

// RescheduleAt makes a delayed or ready job due at t; a past t means due now.
// A reserved or dead job is ErrWrongState.
func (c *Client) RescheduleAt(ctx context.Context, topic, id string, t time.Time) (*Job, error) {
	if t.UnixMilli() <= 0 {
		return nil, invalid("run_at", "%s is not after 1970-01-01", t.Format(time.RFC3339Nano))
	}
	if time.Until(t) > c.cfg.Limits.MaxDelay {
		return nil, invalid("run_at", "%s is more than %s ahead", t.Format(time.RFC3339Nano), ms(c.cfg.Limits.MaxDelay))
	}
	return c.reschedule(ctx, topic, id, false, ceilUnixMs(t))
}

func (c *Client) reschedule(ctx context.Context, topic, id string, relative bool, at int64) (*Job, error) {
	p, err := c.existing(ctx, topic, id)
	if err != nil {
		return nil, jobNotFound(err, topic, id)
	}
	r, err := c.store.Reschedule(ctx, p, id, relative, at)
	if err != nil {
		return nil, jobNotFound(err, topic, id)
	}
	return jobFromRecord(topic, r), nil
}

// existing returns the partition of job id in a topic that must exist already.
func (c *Client) existing(ctx context.Context, topic, id string) (keys.Partition, error) {
	if err := ValidateID(id); err != nil {
		return keys.Partition{}, err
	}
	return c.partitionOf(ctx, topic, id, false)
}
