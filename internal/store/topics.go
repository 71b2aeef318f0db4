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
	if err := s.rdb.HSetNX(ctx, key, topic, n).Err(); err != nil {
		return 0, fmt.Errorf("delayq: register topic: %w", err)
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
