package delayq

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
)

// TopicStats counts a topic's jobs by state, with its controls.
type TopicStats struct {
	Name     string
	Delayed  int64
	Ready    int64
	Reserved int64
	Dead     int64
	// NextRunAt is the earliest due time of a delayed or ready job; zero when there is none.
	NextRunAt time.Time
	// OldestReady is how long the oldest ready job has waited; zero when none waits. A job
	// waits from its due time, or from its enqueue when it was enqueued with a due time already
	// past (Spec.RunAt in the past): from max(RunAt, CreatedAt). Behind a topic's first job
	// enqueued with a past due time, the search reads at most 64 more such jobs per priority
	// and partition, so a longer run of them can hide an older job behind it.
	OldestReady time.Duration
	// Paused tells whether the topic is paused (PauseTopic); should a pause or resume have
	// reached only some partitions (a call that failed part-way), whether any of them is.
	Paused bool
	// Partitions is how many partitions the topic is split over.
	Partitions int
	// Limits are the topic's rate and concurrency limits (SetTopicLimits).
	Limits TopicLimits
	// LeasesExpired counts the leases of the topic that reached their deadline unsettled
	// since the topic was made: each such job was retried or sent to the dead letters.
	LeasesExpired int64
	// Defaults are the topic's defaults for its jobs (SetTopicDefaults).
	Defaults TopicDefaults
}

// Stats counts the jobs of one topic, reading all its partitions in one round trip.
// An unknown topic is ErrNotFound.
func (c *Client) Stats(ctx context.Context, topic string) (*TopicStats, error) {
	n, err := c.partitions(ctx, topic, false)
	if err != nil {
		return nil, err
	}
	return c.stats(ctx, topic, n)
}

// TopicExists reports whether topic exists: a job was enqueued to it (a schedule's tick
// included), or PauseTopic or SetTopicLimits made it, and it was not deleted since. It asks Redis every time, in one round trip,
// and creates nothing. Reserve on a topic that does not exist waits as on an empty one.
func (c *Client) TopicExists(ctx context.Context, topic string) (bool, error) {
	if err := ValidateTopic(topic); err != nil {
		return false, err
	}
	_, err := c.store.TopicPartitions(ctx, topic)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (c *Client) stats(ctx context.Context, topic string, n int) (*TopicStats, error) {
	counts, err := c.store.Stats(ctx, c.partitionKeys(topic, n))
	if err != nil {
		return nil, err
	}
	return sumCounts(topic, counts), nil
}

// sumCounts adds up the counts of a topic's partitions, one or more.
func sumCounts(topic string, counts []store.Counts) *TopicStats {
	s := &TopicStats{Name: topic, Partitions: len(counts)}
	// Every partition keeps the topic's limits; a call that failed part-way may have left
	// some with the old ones, and the first one's stand for the topic.
	l := counts[0].Limits
	s.Limits = TopicLimits{Rate: l.Rate, Period: time.Duration(l.PeriodMs) * time.Millisecond, Concurrency: l.Concurrency}
	if u := counts[0].UniqueForMs; u >= 0 {
		s.Defaults.UniqueFor = time.Duration(u) * time.Millisecond
		if u == 0 {
			s.Defaults.UniqueFor = NoUniqueFor
		}
	}
	earliest, oldest, now := int64(-1), int64(-1), int64(0)
	for _, k := range counts {
		s.Delayed += k.Delayed
		s.Ready += k.Ready
		s.Reserved += k.Reserved
		s.Dead += k.Dead
		s.LeasesExpired += k.LeasesExpired
		s.Paused = s.Paused || k.Paused
		earliest = minKnown(earliest, k.EarliestMs)
		oldest = minKnown(oldest, k.OldestReadyMs)
		now = max(now, k.NowMs)
	}
	if earliest >= 0 {
		s.NextRunAt = time.UnixMilli(earliest).UTC()
	}
	if oldest >= 0 && now > oldest {
		s.OldestReady = time.Duration(now-oldest) * time.Millisecond
	}
	return s
}

// minKnown is the smaller of two times where -1 means unknown.
func minKnown(a, b int64) int64 {
	if a < 0 || (b >= 0 && b < a) {
		return b
	}
	return a
}

// statsPipeline bounds the partitions whose counts Topics asks for in one round trip.
const statsPipeline = 1024

// Topics returns the counts of every topic, sorted by name, reading the partitions of many
// topics in each round trip.
func (c *Client) Topics(ctx context.Context) ([]TopicStats, error) {
	registered, err := c.store.Topics(ctx)
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(registered))
	var parts []keys.Partition
	for _, name := range names {
		for p := range registered[name] {
			parts = append(parts, c.store.Partition(name, p))
		}
	}
	counts := make([]store.Counts, 0, len(parts))
	for chunk := range slices.Chunk(parts, statsPipeline) {
		k, err := c.store.Stats(ctx, chunk)
		if err != nil {
			return nil, err
		}
		counts = append(counts, k...)
	}
	out := make([]TopicStats, 0, len(names))
	for _, name := range names {
		n := registered[name]
		out = append(out, *sumCounts(name, counts[:n]))
		counts = counts[n:]
	}
	return out, nil
}

// TopicNames returns the names of every topic, sorted.
func (c *Client) TopicNames(ctx context.Context) ([]string, error) {
	registered, err := c.store.Topics(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(registered)), nil
}
