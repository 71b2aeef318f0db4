package delayq

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/delayq/delayq/internal/store"
)

// ReserveOptions shape a Reserve call. Zero fields take the defaults.
type ReserveOptions struct {
	// Max is the most jobs to lease. Defaults to 1.
	Max int
	// Wait is how long to wait for a job to become due when none is (a long poll). Defaults to 0.
	Wait time.Duration
	// TTR overrides each job's lease length.
	TTR time.Duration
	// Push reserves jobs that carry a CallbackURL instead of the others; it is for a webhook
	// dispatcher.
	Push bool
}

// Reserve leases up to Max due jobs of topic, highest priority first, then earliest due time,
// waiting up to Wait for one to become due. Each job comes with a Lease to pass to Ack, Nack,
// Touch or Release, and counts one more attempt. It returns no jobs and no error when none came
// due in time.
func (c *Client) Reserve(ctx context.Context, topic string, o ReserveOptions) ([]*Job, error) {
	if o.Max == 0 {
		o.Max = 1
	}
	l := c.cfg.Limits
	switch {
	case o.Max < 1 || o.Max > l.MaxReserve:
		return nil, invalid("max", "%d is outside 1 to %d", o.Max, l.MaxReserve)
	case o.Wait < 0 || o.Wait > l.MaxWait:
		return nil, invalid("wait", "%v is outside 0 to %v", o.Wait, l.MaxWait)
	case o.TTR != 0 && (o.TTR < l.MinTTR || o.TTR > l.MaxTTR):
		return nil, invalid("ttr", "%v is outside %v to %v", o.TTR, l.MinTTR, l.MaxTTR)
	}
	t, lane, err := c.consumerState(ctx, topic, o.Push)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.Wait)
	// The first pass asks every partition: a notice of a job enqueued just before this call may
	// not have arrived yet, and a caller who polls must see every job due by now.
	everyPartition := true
	for {
		jobs, _, err := c.reserveDue(ctx, t, lane, o.Max, o.TTR, everyPartition, nil)
		everyPartition = false
		if err != nil || len(jobs) > 0 || !time.Now().Before(deadline) {
			return jobs, err
		}
		c.waitDue(ctx, t, deadline)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// consumerState returns the wake-up state of a topic's pull or push lane, listening for notices.
func (c *Client) consumerState(ctx context.Context, topic string, push bool) (*topicState, store.Lane, error) {
	n, err := c.partitions(ctx, topic, true)
	if err != nil {
		return nil, "", err
	}
	lane := store.LanePull
	if push {
		lane = store.LanePush
	}
	if c.isClosed() {
		return nil, "", ErrClosed
	}
	t := c.laneState(topic, lane, n)
	c.listen(t, n)
	return t, lane, nil
}

// waitDue sleeps until something may be due in t, deadline passes or ctx ends.
func (c *Client) waitDue(ctx context.Context, t *topicState, deadline time.Time) {
	recheck := c.cfg.RecheckInterval
	if c.cfg.PollInterval > 0 {
		recheck = c.cfg.PollInterval
	}
	t.wait(ctx, deadline, recheck)
}

// laneState returns the wake-up state of one lane of a topic.
func (c *Client) laneState(topic string, lane store.Lane, n int) *topicState {
	t := c.topic(string(lane)+"/"+topic, topic)
	t.setPartitionCount(n)
	return t
}

// reserveDue asks each partition that may have something due (every one when all is set), until
// max jobs are leased. It acks acks along the way: each partition's with its reserve call, and
// those of partitions it did not ask in a round trip of their own. It returns an error per ack.
func (c *Client) reserveDue(ctx context.Context, t *topicState, lane store.Lane, max int, ttr time.Duration, all bool, acks []ackReq) ([]*Job, []error, error) {
	parts, seen := t.due(time.Now(), all)
	riders := newRidingAcks(acks)
	var jobs []*Job
	prefix := newLeasePrefix()
	for i, p := range parts {
		part := c.store.Partition(t.name, p)
		along := riders.take(part)
		r, err := c.store.Reserve(ctx, part, lane, max-len(jobs), prefix, c.cfg.BulkLimit, ttr.Milliseconds(), along)
		if err != nil {
			t.recheck([]int{p})
			riders.settle(part, repeat(err, len(along)))
			riders.settleRest(repeat(err, len(riders.rest())))
			return jobs, riders.errs, err
		}
		riders.settle(part, r.Acked)
		t.learn(p, seen[i], time.Now(), r.NowMs, r.NextMs)
		for _, rec := range r.Jobs {
			jobs = append(jobs, jobFromRecord(t.name, rec))
		}
		if len(jobs) >= max {
			break
		}
	}
	if rest := riders.rest(); len(rest) > 0 {
		riders.settleRest(c.flushAcks(ctx, rest))
	}
	return jobs, riders.errs, nil
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// Ack marks a reserved job done and removes it. A lease that is not the job's current one is
// ErrLeaseLost, and the job is left as it is. Concurrent calls share round trips to Redis.
func (c *Client) Ack(ctx context.Context, topic, id, lease string) error {
	p, err := c.existing(ctx, topic, id)
	if err != nil {
		return err
	}
	err, ok := c.acker.do(ctx, ackReq{part: p, lease: store.Lease{ID: id, Token: lease}})
	if !ok {
		return ctx.Err()
	}
	return err
}

// NackOptions say how a failed attempt is retried.
type NackOptions struct {
	// Error is kept as the job's LastError.
	Error string
	// Delay, when set, is the wait before the retry instead of the job's backoff step.
	Delay *time.Duration
	// Dead sends the job to the dead letters whatever retries it has left.
	Dead bool
}

// Nack ends a reserved job's attempt as failed. The job is due again after its backoff step (or
// o.Delay); when its retries are used up, or o.Dead is set, it goes to the dead letters. It
// reports whether the job went dead. A stale lease is ErrLeaseLost.
func (c *Client) Nack(ctx context.Context, topic, id, lease string, o NackOptions) (dead bool, err error) {
	delayMs := int64(-1)
	if o.Delay != nil {
		if *o.Delay < 0 || *o.Delay > c.cfg.Limits.MaxDelay {
			return false, invalid("delay", "%v is outside 0 to %v", *o.Delay, c.cfg.Limits.MaxDelay)
		}
		delayMs = o.Delay.Milliseconds()
	}
	o.Error = truncateUTF8(o.Error, maxErrorText)
	p, err := c.existing(ctx, topic, id)
	if err != nil {
		return false, err
	}
	return c.store.Nack(ctx, p, id, lease, o.Error, delayMs, o.Dead)
}

// Touch extends a lease by ttr from now (zero: the job's TTR) and returns the new deadline.
func (c *Client) Touch(ctx context.Context, topic, id, lease string, ttr time.Duration) (time.Time, error) {
	l := c.cfg.Limits
	if ttr != 0 && (ttr < l.MinTTR || ttr > l.MaxTTR) {
		return time.Time{}, invalid("ttr", "%v is outside %v to %v", ttr, l.MinTTR, l.MaxTTR)
	}
	p, err := c.existing(ctx, topic, id)
	if err != nil {
		return time.Time{}, err
	}
	ms, err := c.store.Touch(ctx, p, id, lease, ttr.Milliseconds())
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms).UTC(), nil
}

// Release gives a lease back unfinished: the job is due again at once and the attempt does not
// count. Workers use it when they shut down.
func (c *Client) Release(ctx context.Context, topic, id, lease string) error {
	p, err := c.existing(ctx, topic, id)
	if err != nil {
		return err
	}
	return c.store.Release(ctx, p, id, lease)
}

// maxErrorText bounds the error text a job keeps.
const maxErrorText = 4096

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
