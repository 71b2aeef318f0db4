package store

import (
	"context"
	"fmt"
	"strconv"

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

// Listed is a job of a state's list with its position.
type Listed struct {
	Position
	Record
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
			l, err := parseListed(v)
			if err != nil {
				return nil, err
			}
			out = append(out, l)
		}
	}
	return out, nil
}

func parseListed(v any) (Listed, error) {
	f, ok := v.([]any)
	if !ok || len(f) != 3 {
		return Listed{}, fmt.Errorf("delayq: malformed list entry %T", v)
	}
	score, err := strconv.ParseFloat(toString(f[1]), 64)
	if err != nil {
		return Listed{}, fmt.Errorf("delayq: list score %q: %w", toString(f[1]), err)
	}
	r, err := parseRecord(f[2])
	if err != nil {
		return Listed{}, err
	}
	return Listed{Position{int(toInt(f[0])), int64(score), r.ID}, r}, nil
}
