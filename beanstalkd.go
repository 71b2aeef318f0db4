package delayq

import (
	"context"
	"time"

	"github.com/delayq/delayq/internal/core"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/tracing"
)

// The beanstalkd front end (cmd/delayq/internal/beanstalkd, docs/beanstalkd.md) stores ordinary jobs with
// beanstalkd's semantics, which the public API does not offer: a 32-bit priority that ranks a
// job, most urgent first and then by id, among the due jobs; no retry limit and no backoff (a
// job whose TTR passes is ready again at once); TTRs and delays up to 2^32-1 s, beyond
// Limits; a release with a delay and a new priority; a bury with a new priority; a reserve of
// one job by id. It reaches them through Client.Core, as core.Ranked; they are here.

func (in inside) EnqueueRanked(ctx context.Context, topic string, r core.RankedJob) error {
	c := in.c
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	j, err := c.cfg.Limits.toNewJob(Spec{ID: r.ID, Body: r.Body}, c.newID)
	if err != nil {
		return err
	}
	// beanstalkd's ranges (up to 2^32-1 s each), beyond the limits of other jobs: a client's
	// TTR and delay are kept as it gave them.
	j.DelayMs, j.TTRMs = ceilMs(r.Delay), max(r.TTR, c.cfg.Limits.MinTTR).Milliseconds()
	j.Priority = store.RankBase + int(r.Pri)
	j.MaxRetries, j.BackoffMs = NoRetryLimit, []int64{0}
	ctx, span := c.trace.Start(ctx, tracing.Send, topic)
	_, err = c.enqueueJob(ctx, topic, j, false)
	tracing.End(span, err)
	return err
}

func (inside) ReadyOrder(a, b *Job) int { return readyOrder(a, b) }

func (in inside) ReserveJob(ctx context.Context, topic, id string) (*Job, error) {
	p, err := in.c.existing(ctx, topic, id)
	if err != nil {
		return nil, err
	}
	r, err := in.c.store.ReserveJob(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return jobFromRecord(topic, r), nil
}

func (in inside) ReleaseRanked(ctx context.Context, l core.Lease, pri uint32, delay time.Duration) (bool, error) {
	p, err := in.c.existing(ctx, l.Topic, l.ID)
	if err != nil {
		return false, err
	}
	return in.c.store.ReleaseLater(ctx, p, l.ID, l.Token, ceilMs(delay), store.RankBase+int(pri))
}

func (in inside) BuryRanked(ctx context.Context, l core.Lease, pri uint32) error {
	p, err := in.c.existing(ctx, l.Topic, l.ID)
	if err != nil {
		return err
	}
	return in.c.store.Bury(ctx, p, l.ID, l.Token, store.RankBase+int(pri))
}
