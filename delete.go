package delayq

import (
	"context"
	"errors"
)

// DeleteTopicOptions shape a DeleteTopic call.
type DeleteTopicOptions struct {
	// Purge deletes the topic's jobs too, in every state. The consumers of jobs reserved then
	// can no longer settle them: an ack answers ErrLeaseLost, or ErrNotFound from a Client that
	// knows the topic is gone. Without Purge, a topic that holds jobs is not deleted.
	Purge bool
}

// DeleteTopic deletes topic: its registration (it is no longer listed), its pause and limits
// and, with o.Purge, its jobs; it returns how many jobs it deleted. Without o.Purge a topic
// that holds jobs is a *NotEmptyError (matching ErrNotEmpty), naming what it holds, and stays
// as it was. An unknown topic is ErrNotFound.
//
// One script call deletes each partition, however many jobs it holds: its keys are unlinked
// and Redis frees their memory in a background thread, so no call blocks Redis for long.
// A job enqueued while DeleteTopic runs is deleted when it reached its partition before that
// partition's call, and kept otherwise; once the topic is unregistered, DeleteTopic looks at
// the partitions again and registers the topic anew when it finds such jobs, so that they are
// listed like any others. A process that enqueued to the topic before goes on using its
// partition count and registers the topic again within its recheck interval (Config), so a
// job it enqueues later is listed too. Consumers waiting on the topic are woken, find nothing,
// and wait on: the jobs of a topic made again under the name reach them.
func (c *Client) DeleteTopic(ctx context.Context, topic string, o DeleteTopicOptions) (int64, error) {
	n, err := c.partitions(ctx, topic, false)
	if err != nil {
		return 0, err
	}
	var before *TopicStats
	if !o.Purge {
		if before, err = c.stats(ctx, topic, n); err != nil {
			return 0, err
		}
		if jobCount(before) > 0 {
			return 0, notEmpty(before)
		}
	}
	held, err := c.store.DropPartitions(ctx, c.partitionKeys(topic, n), o.Purge)
	if err != nil {
		return 0, err
	}
	var deleted int64
	for _, h := range held {
		deleted += h
	}
	if !o.Purge && deleted > 0 {
		// A job came between the look and the calls: the topic stays, with its controls.
		return 0, c.keepTopic(ctx, topic, n, before)
	}
	// Outcomes of its jobs waiting for the archiver are archived all the same, unless Redis
	// refuses to note the topic for that (over maxmemory, when deleting a topic is how
	// memory is freed): the topic is deleted then, and those outcomes wait unarchived.
	if err := c.store.KeepHistory(ctx, topic, c.partitionKeys(topic, n)); err != nil {
		c.log.Warn("delayq: the ends of a deleted topic's jobs will not be archived", "topic", topic, "err", err)
	}
	if err := c.store.UnregisterTopic(ctx, topic); err != nil {
		return 0, err
	}
	c.forgetTopic(topic)
	return deleted, c.registerLateJobs(ctx, topic, n)
}

// keepTopic gives back to a topic that turned out not to be empty the controls it had before
// (the calls dropped them from its empty partitions), and returns the error that says what it
// holds now.
func (c *Client) keepTopic(ctx context.Context, topic string, n int, before *TopicStats) error {
	parts := c.partitionKeys(topic, n)
	var errs []error
	if before.Paused {
		errs = append(errs, c.store.SetPaused(ctx, parts, true))
	}
	if before.Limits != (TopicLimits{}) {
		errs = append(errs, c.SetTopicLimits(ctx, topic, before.Limits))
	}
	now, err := c.stats(ctx, topic, n)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	return errors.Join(append(errs, notEmpty(now))...)
}

// registerLateJobs registers an unregistered topic again when its partitions hold jobs:
// enqueued while it was being deleted, by processes that knew it.
func (c *Client) registerLateJobs(ctx context.Context, topic string, n int) error {
	s, err := c.stats(ctx, topic, n)
	if err != nil || jobCount(s) == 0 {
		return err
	}
	_, err = c.store.RegisterTopic(ctx, topic, n)
	return err
}

func jobCount(s *TopicStats) int64 { return s.Delayed + s.Ready + s.Reserved + s.Dead }

func notEmpty(s *TopicStats) error {
	return &NotEmptyError{Topic: s.Name, Delayed: s.Delayed, Ready: s.Ready, Reserved: s.Reserved, Dead: s.Dead}
}
