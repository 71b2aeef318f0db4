package delayq

import (
	"context"
	"time"

	"github.com/delayq/delayq/internal/clienthooks"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/tracing"
)

// The beanstalkd front end (internal/beanstalkd, docs/beanstalkd.md) stores ordinary jobs with
// beanstalkd's semantics, which the public API does not offer: a 32-bit priority that ranks a
// job, most urgent first and then by id, among the due jobs; no retry limit and no backoff (a
// job whose TTR passes is ready again at once); TTRs and delays up to 2^32-1 s, beyond
// Limits; a release with a delay and a new priority; a
// bury with a new priority; a reserve of one job by id. It reaches them through clienthooks, set here.

func init() {
	clienthooks.EnqueueRanked = func(ctx context.Context, client any, topic string, r clienthooks.RankedJob) error {
		c := client.(*Client)
		if err := ValidateTopic(topic); err != nil {
			return err
		}
		j, err := c.cfg.Limits.toNewJob(Spec{ID: r.ID, Body: r.Body}, c.newID)
		if err != nil {
			return err
		}
		// beanstalkd's ranges (up to 2^32-1 s each), beyond the limits of other jobs: a
		// client's TTR and delay are kept as it gave them.
		j.DelayMs, j.TTRMs = ceilMs(r.Delay), max(r.TTR, c.cfg.Limits.MinTTR).Milliseconds()
		j.Priority = store.RankBase + int(r.Pri)
		j.MaxRetries, j.BackoffMs = NoRetryLimit, []int64{0}
		ctx, span := c.trace.Start(ctx, tracing.Send, topic)
		_, err = c.enqueueJob(ctx, topic, j, false)
		tracing.End(span, err)
		return err
	}
	clienthooks.ReadyOrder = func(a, b any) int { return readyOrder(a.(*Job), b.(*Job)) }
	clienthooks.ReserveJob = func(ctx context.Context, client any, topic, id string) (any, error) {
		c := client.(*Client)
		p, err := c.existing(ctx, topic, id)
		if err != nil {
			return nil, err
		}
		r, err := c.store.ReserveJob(ctx, p, id)
		if err != nil {
			return nil, err
		}
		return jobFromRecord(topic, r), nil
	}
	clienthooks.ReleaseRanked = func(ctx context.Context, client any, l clienthooks.Lease, pri uint32, delay time.Duration) error {
		c := client.(*Client)
		p, err := c.existing(ctx, l.Topic, l.ID)
		if err != nil {
			return err
		}
		return c.store.ReleaseLater(ctx, p, l.ID, l.Token, ceilMs(delay), store.RankBase+int(pri))
	}
	clienthooks.BuryRanked = func(ctx context.Context, client any, l clienthooks.Lease, pri uint32) error {
		c := client.(*Client)
		p, err := c.existing(ctx, l.Topic, l.ID)
		if err != nil {
			return err
		}
		return c.store.Bury(ctx, p, l.ID, l.Token, store.RankBase+int(pri))
	}
}
