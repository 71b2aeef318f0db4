package delayq

import (
	"context"
	"slices"
	"time"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/wake"
)

// Leases expire at their deadlines, with nobody polling: a Client expires the leases of every
// topic it consumes (by Reserve or a Worker) and, with Config.ExpireAllLeases, of every topic
// of its namespace. The scripts announce each lease that ends before any other of its
// partition; one goroutine per Client sleeps until the first deadline it knows and expires
// the partition's leases then (internal/wake's Leases). Every Client that keeps a partition
// does so, idempotently: an expiry run twice is run once.

// leaseRecheck is how often the Client looks at each partition it keeps without a notice:
// notices, and a look at every partition when a subscription is made again, cover the rest,
// so the looks are rare (at the default recheck interval, a server keeping 10,000 topics
// makes about 330 looks a second, one command each).
func (c *Client) leaseRecheck() time.Duration {
	if c.cfg.PollInterval > 0 {
		return c.cfg.PollInterval
	}
	return 30 * c.cfg.RecheckInterval
}

// expiryTimeout bounds one round of expiry calls, so that a hung Redis does not hold the
// keeper past the next deadlines once it answers again.
const expiryTimeout = 10 * time.Second

// keepLeases makes the Client expire the leases of topic's n partitions at their deadlines.
func (c *Client) keepLeases(topic string, n int) {
	added := c.leases.Keep(topic, n)
	if len(added) == 0 {
		return
	}
	c.startLeaseKeeper()
	if c.cfg.PollInterval > 0 {
		return
	}
	c.hub.ListenLeases(c.leases, topic, added, c.notifyChannels(topic, added))
}

// notifyChannels returns the notify channels of topic's partitions parts.
func (c *Client) notifyChannels(topic string, parts []int) []string {
	channels := make([]string, len(parts))
	for k, p := range parts {
		channels[k] = c.store.Partition(topic, p).Notify()
	}
	return channels
}

// startLeaseKeeper starts the goroutine that expires leases, once.
func (c *Client) startLeaseKeeper() {
	c.keeperOnce.Do(func() {
		c.keeperDone = make(chan struct{})
		go c.runLeaseKeeper()
	})
}

// runLeaseKeeper expires the kept partitions' leases at their deadlines until the Client
// closes. With ExpireAllLeases it takes on every registered topic, reading the registry
// once per recheck and hearing of new topics as they are registered.
func (c *Client) runLeaseKeeper() {
	defer close(c.keeperDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stopLeases:
			cancel()
		case <-ctx.Done():
		}
	}()
	var registryRead time.Time
	for ctx.Err() == nil {
		if c.cfg.ExpireAllLeases {
			if time.Since(registryRead) >= c.leaseRecheck() {
				registryRead = time.Now()
				c.keepEveryTopic(ctx)
			}
			topics, missed := c.leases.TakeRegistered()
			if missed {
				registryRead = time.Time{}
				continue
			}
			c.keepRegistered(ctx, topics)
		}
		expire, look := c.leases.Due(time.Now(), c.leaseRecheck())
		c.lookAtLeases(ctx, look)
		c.expireDue(ctx, expire)
		c.leases.Wait(ctx, c.leaseRecheck())
	}
}

// keepEveryTopic keeps every registered topic's partitions, and lets go of those of topics no
// longer registered.
func (c *Client) keepEveryTopic(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, expiryTimeout)
	defer cancel()
	topics, err := c.store.Topics(ctx)
	if err != nil {
		c.log.Debug("delayq: reading the topics to expire their leases", "err", err)
		return
	}
	for name, n := range topics {
		c.keepLeases(name, n)
	}
	for topic, parts := range c.leases.Forget(topics) {
		if c.cfg.PollInterval == 0 {
			c.hub.UnlistenLeases(c.leases, topic, parts, c.notifyChannels(topic, parts))
		}
	}
}

// keepRegistered keeps the partitions of topics heard registered.
func (c *Client) keepRegistered(ctx context.Context, topics []string) {
	if len(topics) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, expiryTimeout)
	defer cancel()
	for _, name := range topics {
		n, err := c.store.TopicPartitions(ctx, name)
		if err != nil {
			c.log.Debug("delayq: reading a new topic to expire its leases", "topic", name, "err", err)
			continue
		}
		c.keepLeases(name, n)
	}
}

// expireDue expires the leases of the due partitions and learns when each next has a lease to
// expire.
func (c *Client) expireDue(ctx context.Context, due []wake.LeasePart) {
	c.eachRoundTrip(ctx, due, func(cctx context.Context, chunk []wake.LeasePart, parts []keys.Partition, at time.Time) {
		out := c.store.ExpireLeases(cctx, parts, c.cfg.BulkLimit)
		for i, lp := range chunk {
			if out[i].Err != nil {
				c.leases.Failed(lp, at, c.recheckInterval())
				if ctx.Err() == nil {
					c.log.Debug("delayq: expiring leases", "topic", lp.Topic, "partition", lp.P, "err", out[i].Err)
				}
				continue
			}
			c.leases.Learn(lp, at, out[i].NowMs, out[i].NextMs)
		}
	})
}

// lookAtLeases reads the first lease deadline of each partition of look: a deadline that has
// come is expired by the next round.
func (c *Client) lookAtLeases(ctx context.Context, look []wake.LeasePart) {
	c.eachRoundTrip(ctx, look, func(cctx context.Context, chunk []wake.LeasePart, parts []keys.Partition, at time.Time) {
		nowMs, heads, err := c.store.LeaseHeads(cctx, parts)
		if err != nil {
			// What the keeper knew stands (a failed look learns nothing): the partitions are
			// looked at again after the recheck interval, and their notices still count.
			if ctx.Err() == nil {
				c.log.Debug("delayq: looking at leases", "err", err)
			}
			return
		}
		for i, lp := range chunk {
			c.leases.Learn(lp, at, nowMs, heads[i])
		}
	})
}

// eachRoundTrip calls do for lps statsPipeline partitions at a time, each call with their keys,
// a context bounded by expiryTimeout and the local time it began, until ctx ends.
func (c *Client) eachRoundTrip(ctx context.Context, lps []wake.LeasePart, do func(ctx context.Context, chunk []wake.LeasePart, parts []keys.Partition, at time.Time)) {
	for chunk := range slices.Chunk(lps, statsPipeline) {
		if ctx.Err() != nil {
			return
		}
		parts := make([]keys.Partition, len(chunk))
		for i, lp := range chunk {
			parts[i] = c.store.Partition(lp.Topic, lp.P)
		}
		cctx, cancel := context.WithTimeout(ctx, expiryTimeout)
		do(cctx, chunk, parts, time.Now())
		cancel()
	}
}
