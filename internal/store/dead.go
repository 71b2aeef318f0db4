package store

import (
	"context"
	"fmt"

	"github.com/delayq/delayq/internal/keys"
)

// DeadList returns up to limit dead jobs of partition p whose ids sort after afterID.
func (s *Store) DeadList(ctx context.Context, p keys.Partition, afterID string, limit int) ([]Record, error) {
	vals, err := s.run(ctx, deadListScript, read(p, afterID, limit)).Slice()
	if err != nil {
		return nil, fmt.Errorf("delayq: dead list: %w", err)
	}
	return parseRecords(vals)
}

// DeadRequeue puts dead jobs back: the given ids, or when ids is nil up to limit of them.
func (s *Store) DeadRequeue(ctx context.Context, p keys.Partition, ids []string, limit int) (int, error) {
	n, err := s.run(ctx, deadRequeueScript, write(p, NewCallID(), deadArgs(ids, limit)...)).Int()
	if err != nil {
		return 0, fmt.Errorf("delayq: requeue: %w", err)
	}
	return n, nil
}

// DeadDelete deletes dead jobs: the given ids, or when ids is nil up to limit of them.
func (s *Store) DeadDelete(ctx context.Context, p keys.Partition, ids []string, limit int) (int, error) {
	c := write(p, NewCallID(), deadArgs(ids, limit)...)
	for _, id := range ids {
		c.extra = append(c.extra, p.Ended(id))
	}
	n, err := s.run(ctx, deadDeleteScript, c).Int()
	if err != nil {
		return 0, fmt.Errorf("delayq: delete dead: %w", err)
	}
	return n, nil
}

func deadArgs(ids []string, limit int) []any {
	if ids == nil {
		return []any{"all", limit}
	}
	args := []any{"ids", 0}
	for _, id := range ids {
		args = append(args, id)
	}
	return args
}
