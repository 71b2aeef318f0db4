package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
)

// RegisterTopic records topic with partitions n unless it is known already, and returns the
// partition count the topic has.
func (s *Store) RegisterTopic(ctx context.Context, topic string, n int) (int, error) {
	key := keys.Topics(s.ns)
	// A known topic needs no write, which Redis refuses when it is over maxmemory: a consumer
	// must be able to start and drain a full Redis.
	if got, err := s.rdb.HGet(ctx, key, topic).Int(); err == nil {
		return got, nil
	}
	added, err := s.rdb.HSetNX(ctx, key, topic, n).Result()
	if err != nil {
		return 0, fmt.Errorf("delayq: register topic: %w", err)
	}
	if added {
		// Consumers waiting for the topic hear of it now rather than at their next look.
		_ = s.rdb.SPublish(ctx, keys.NewTopics(s.ns), topic).Err()
	}
	got, err := s.rdb.HGet(ctx, key, topic).Int()
	if err != nil {
		return 0, fmt.Errorf("delayq: register topic: %w", err)
	}
	return got, nil
}

// TopicPartitions returns the partition count of a registered topic, or ErrNotFound.
func (s *Store) TopicPartitions(ctx context.Context, topic string) (int, error) {
	n, err := s.rdb.HGet(ctx, keys.Topics(s.ns), topic).Int()
	if errors.Is(err, redis.Nil) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("delayq: topic: %w", err)
	}
	return n, nil
}

// Topics returns every registered topic with its partition count.
func (s *Store) Topics(ctx context.Context) (map[string]int, error) {
	m, err := s.rdb.HGetAll(ctx, keys.Topics(s.ns)).Result()
	if err != nil {
		return nil, fmt.Errorf("delayq: topics: %w", err)
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("delayq: topic %q has partition count %q", k, v)
		}
		out[k] = n
	}
	return out, nil
}

// Head is what a partition has for one lane, as a consumer's recheck sees it.
type Head struct {
	Ready  bool  // due jobs wait in the lane's ready set
	DueMs  int64 // the earliest due time of a delayed job, Unix ms; -1 for none
	Paused bool  // the topic is paused: nothing is handed out, whatever is due
}

// Heads reads, for each partition, whether the lane's ready set holds jobs, when its first
// delayed job falls due, and whether the topic is paused: three commands a partition, in one
// round trip. (A lease deadline is not read: the processes that keep the partition's leases
// expire it, and announce the job it puts back.)
func (s *Store) Heads(ctx context.Context, parts []keys.Partition, lane Lane) ([]Head, error) {
	ready := make([]*redis.ZSliceCmd, len(parts))
	delayed := make([]*redis.ZSliceCmd, len(parts))
	paused := make([]*redis.StringCmd, len(parts))
	cmds, _ := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, p := range parts {
			set := p.Ready()
			if lane == LanePush {
				set = p.ReadyPush()
			}
			ready[i] = pipe.ZRangeWithScores(ctx, set, 0, 0)
			delayed[i] = pipe.ZRangeWithScores(ctx, p.Delayed(), 0, 0)
			paused[i] = pipe.HGet(ctx, p.Settings(), "paused")
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) { // Nil: no settings
			return nil, fmt.Errorf("delayq: looking at partitions: %w", err)
		}
	}
	out := make([]Head, len(parts))
	for i := range parts {
		out[i] = Head{Ready: len(ready[i].Val()) > 0, DueMs: -1, Paused: paused[i].Val() == "1"}
		if d := delayed[i].Val(); len(d) > 0 {
			out[i].DueMs = int64(d[0].Score)
		}
	}
	return out, nil
}

// UnregisterTopic removes topic from the registry: it is no longer listed, and its next
// enqueue registers it anew.
func (s *Store) UnregisterTopic(ctx context.Context, topic string) error {
	if err := s.rdb.HDel(ctx, keys.Topics(s.ns), topic).Err(); err != nil {
		return fmt.Errorf("delayq: unregister topic: %w", err)
	}
	return nil
}

// LeaseHeads reads the server's clock and, for each partition, its first lease deadline (-1:
// nothing is leased), in one round trip: one command a partition, and no script.
func (s *Store) LeaseHeads(ctx context.Context, parts []keys.Partition) (nowMs int64, heads []int64, err error) {
	leased := make([]*redis.ZSliceCmd, len(parts))
	var now *redis.TimeCmd
	cmds, _ := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		now = pipe.Time(ctx)
		for i, p := range parts {
			leased[i] = pipe.ZRangeWithScores(ctx, p.Reserved(), 0, 0)
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return 0, nil, fmt.Errorf("delayq: looking at leases: %w", err)
		}
	}
	heads = make([]int64, len(parts))
	for i := range parts {
		heads[i] = -1
		if l := leased[i].Val(); len(l) > 0 {
			heads[i] = int64(l[0].Score)
		}
	}
	return now.Val().UnixMilli() + s.clockOffset.Load(), heads, nil
}
