package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
)

// Position is where a job stands in the order of its state's list; see list.lua.
type Position struct {
	Segment int
	Score   int64
	ID      string
}

// Less reports whether p comes before q.
func (p Position) Less(q Position) bool {
	if p.Segment != q.Segment {
		return p.Segment < q.Segment
	}
	if p.Score != q.Score {
		return p.Score < q.Score
	}
	return p.ID < q.ID
}

// Listed is a job of a state's list: its position and the partition it is in (an index into
// the partitions given to List).
type Listed struct {
	Position
	Part int
}

// List returns up to limit jobs of partition p in state ("delayed", "ready" or "reserved") that
// come after position after (nil for the first page), in list order.
func (s *Store) List(ctx context.Context, parts []keys.Partition, state string, after *Position, limit int) ([]Listed, error) {
	args := []any{state, "", "", "", limit}
	if after != nil {
		args = []any{state, after.Segment, after.Score, after.ID, limit}
	}
	cmds, errs := s.pipelined(ctx, listScript, len(parts), func(i int) script {
		return read(parts[i], args...)
	})
	var out []Listed
	for i, cmd := range cmds {
		if errs[i] != nil {
			return nil, fmt.Errorf("delayq: list: %w", errs[i])
		}
		vals, err := cmd.Slice()
		if err != nil {
			return nil, fmt.Errorf("delayq: list: %w", err)
		}
		for _, v := range vals {
			pos, err := parsePosition(v)
			if err != nil {
				return nil, err
			}
			out = append(out, Listed{pos, i})
		}
	}
	return out, nil
}

func parsePosition(v any) (Position, error) {
	f, ok := v.([]any)
	if !ok || len(f) != 3 {
		return Position{}, fmt.Errorf("delayq: malformed list entry %T", v)
	}
	score, err := strconv.ParseFloat(toString(f[1]), 64)
	if err != nil {
		return Position{}, fmt.Errorf("delayq: list score %q: %w", toString(f[1]), err)
	}
	return Position{int(toInt(f[0])), int64(score), toString(f[2])}, nil
}

// GetMany reads jobs ids[i] of partitions parts[i], in one round trip. A job that is gone has
// ErrNotFound in its place in errs.
func (s *Store) GetMany(ctx context.Context, parts []keys.Partition, ids []string) ([]Record, []error) {
	cmds, errs := s.pipelined(ctx, getScript, len(ids), func(i int) script { return read(parts[i], ids[i]) })
	recs := make([]Record, len(ids))
	for i, cmd := range cmds {
		if errs[i] != nil {
			continue
		}
		v, err := cmd.Result()
		switch {
		case errors.Is(err, redis.Nil):
			errs[i] = ErrNotFound
		case err != nil:
			errs[i] = fmt.Errorf("delayq: get: %w", err)
		default:
			recs[i], errs[i] = parseRecord(v)
		}
	}
	return recs, errs
}
