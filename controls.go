package delayq

import (
	"context"

	"github.com/delayq/delayq/internal/keys"
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
