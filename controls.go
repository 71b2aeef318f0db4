package delayq

import (
	"context"
	"time"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
)

// PauseTopic pauses topic: from its return on, no consumer, pull or push, receives any of its
// jobs, and consumers waiting on it are not woken by new ones; due jobs stay ready, producers
// go on enqueueing, and jobs reserved before the pause may still be acked. A topic that does
// not exist is created (as by its first enqueue), so that it can be paused before its
// producers start. Pausing a paused topic changes nothing.
func (c *Client) PauseTopic(ctx context.Context, topic string) error {
	n, err := c.partitions(ctx, topic, true)
	if err != nil {
		return err
	}
	return c.store.SetPaused(ctx, c.partitionKeys(topic, n), true)
}

// ResumeTopic ends a pause: consumers waiting on the topic are woken at once and receive its
// due jobs. Resuming a topic that is not paused changes nothing; an unknown topic is
// ErrNotFound.
func (c *Client) ResumeTopic(ctx context.Context, topic string) error {
	n, err := c.partitions(ctx, topic, false)
	if err != nil {
		return err
	}
	return c.store.SetPaused(ctx, c.partitionKeys(topic, n), false)
}

// partitionKeys returns the keys of each of topic's n partitions.
func (c *Client) partitionKeys(topic string, n int) []keys.Partition {
	parts := make([]keys.Partition, n)
	for p := range parts {
		parts[p] = c.store.Partition(topic, p)
	}
	return parts
}

// TopicLimits bound how fast and how many of a topic's jobs are handed out, over every
// consumer, pull and push alike. A zero field is no limit of its kind; the zero TopicLimits is
// none.
//
// Each of the topic's partitions enforces its share of each limit in its own reserve script:
// the limit divided by the partition count, the first limit mod count partitions taking one
// more, so that the shares sum to the limit. The bound is exact — in no span of Period do more
// than Rate deliveries start, and no more than Concurrency jobs are ever reserved at once —
// while the throughput comes close to the limit only when the due jobs are spread over the
// partitions about as the shares are: a partition whose share is used up waits for its own
// window, whatever the others hold. Job ids spread evenly over the partitions, so a steady
// backlog is.
type TopicLimits struct {
	// Rate is how many deliveries may start within any span of Period: a sliding window, so
	// that an idle spell lets no burst of twice the rate through. A job over the limit stays
	// ready, and consumers waiting for it wake when the window lets the next one start. 1 to
	// 100000, and no fewer than the topic's partitions, each of which needs a share.
	Rate int
	// Period is the rate limit's window, in whole milliseconds from 1 ms to 24 h. Required with
	// Rate, and only with it.
	Period time.Duration
	// Concurrency is how many of the topic's jobs may be reserved at once. 1 to 100000, and no
	// fewer than the topic's partitions.
	Concurrency int
}

// Bounds of TopicLimits.
const (
	maxTopicRate        = 100000
	maxTopicPeriod      = 24 * time.Hour
	maxTopicConcurrency = 100000
)

// Validate reports whether a topic of the given partition count takes l, as an *InvalidError
// naming the first wrong field: rate, period or concurrency.
func (l TopicLimits) Validate(partitions int) error {
	switch {
	case l.Rate < 0 || l.Rate > maxTopicRate:
		return invalid("rate", "%d is outside 0 (none) to %d", l.Rate, maxTopicRate)
	case l.Rate > 0 && l.Period == 0:
		return invalid("period", "a rate needs a period")
	case l.Rate == 0 && l.Period != 0:
		return invalid("period", "a period needs a rate")
	case l.Period%time.Millisecond != 0:
		return invalid("period", "%s is not a whole number of milliseconds", l.Period)
	case l.Period != 0 && (l.Period < time.Millisecond || l.Period > maxTopicPeriod):
		return invalid("period", "%s is outside 1 ms to %s", ms(l.Period), ms(maxTopicPeriod))
	case l.Rate > 0 && l.Rate < partitions:
		return invalid("rate", "%d is below the topic's %d partitions, each of which enforces its share of the limit "+
			"and would never deliver with a share of 0; give at least %d per period (%d per %s is the same average rate, "+
			"in bursts of up to %d)", l.Rate, partitions, partitions, partitions, ms(scaledPeriod(l, partitions)), partitions)
	case l.Concurrency < 0 || l.Concurrency > maxTopicConcurrency:
		return invalid("concurrency", "%d is outside 0 (none) to %d", l.Concurrency, maxTopicConcurrency)
	case l.Concurrency > 0 && l.Concurrency < partitions:
		return invalid("concurrency", "%d is below the topic's %d partitions, each of which enforces its share of the limit "+
			"and would never deliver with a share of 0; give at least %d", l.Concurrency, partitions, partitions)
	}
	return nil
}

// scaledPeriod is the period in which n deliveries make the average rate of l, in whole ms.
func scaledPeriod(l TopicLimits, n int) time.Duration {
	return (l.Period * time.Duration(n) / time.Duration(l.Rate)).Round(time.Millisecond)
}

// SetTopicLimits replaces the limits of topic with l (the zero TopicLimits lifts them all).
// Consumers waiting on the topic look again at once under the new limits. Deliveries started
// within the period before the change count against a new rate limit, so changing it lets no
// burst through. A topic that does not exist is created, as by PauseTopic.
func (c *Client) SetTopicLimits(ctx context.Context, topic string, l TopicLimits) error {
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	if err := l.Validate(1); err != nil {
		return err // what no partition count could take, before the topic is created
	}
	n, err := c.partitions(ctx, topic, true)
	if err != nil {
		return err
	}
	if err := l.Validate(n); err != nil {
		return err
	}
	return c.store.SetLimits(ctx, c.partitionKeys(topic, n), store.Limits{
		Rate: l.Rate, PeriodMs: l.Period.Milliseconds(), Concurrency: l.Concurrency,
	})
}

// TopicDefaults are what a topic's jobs take when their Spec leaves a setting to it.
type TopicDefaults struct {
	// UniqueFor is the Spec.UniqueFor of the topic's jobs with an id that set none: 0 leaves
	// it to Config.UniqueFor of the enqueuing Client; NoUniqueFor keeps no id taken, whatever
	// the Client's default.
	UniqueFor time.Duration
}

// SetTopicDefaults replaces the defaults of topic with d (the zero TopicDefaults clears them).
// They apply to jobs enqueued from then on. A topic that does not exist is created, as by
// PauseTopic.
func (c *Client) SetTopicDefaults(ctx context.Context, topic string, d TopicDefaults) error {
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	u, err := uniqueForMs(d.UniqueFor, c.cfg.Limits.MaxDelay)
	if err != nil {
		return err
	}
	// The topic's settings hold 0 for none, and nothing when the Client's default applies.
	switch u {
	case -1:
		u = 0
	case 0:
		u = -1
	}
	n, err := c.partitions(ctx, topic, true)
	if err != nil {
		return err
	}
	return c.store.SetUniqueFor(ctx, c.partitionKeys(topic, n), u)
}
