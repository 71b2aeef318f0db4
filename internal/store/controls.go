package store

import (
	"context"
	"errors"

	"github.com/delayq/delayq/internal/keys"
)

// nextPaused is the next moment reserve.lua and peek.lua answer for a paused partition
// (lib_controls.lua's PAUSED).
const nextPaused = -2

// nextOf reads the next moment a reserve or a look answered: the moment, -1 when nothing is
// coming or the partition is paused, and whether it is.
func nextOf(v int64) (nextMs int64, paused bool) {
	if v == nextPaused {
		return -1, true
	}
	return v, false
}

// SetPaused pauses or resumes every partition of parts, one script call each, all in one round
// trip. A resume wakes the consumers waiting on the partitions. It returns the first failure;
// the partitions whose call went through stay changed, and the same call again is safe.
func (s *Store) SetPaused(ctx context.Context, parts []keys.Partition, paused bool) error {
	op := "resume"
	if paused {
		op = "pause"
	}
	return s.setControls(ctx, parts, func(int) []any { return []any{op} })
}

// setControls runs set_controls.lua on each partition of parts with the arguments args(i), as
// one call (one call id) in one round trip.
func (s *Store) setControls(ctx context.Context, parts []keys.Partition, args func(i int) []any) error {
	call := NewCallID()
	_, errs := s.pipelined(ctx, controlsScript, len(parts), func(i int) script {
		return write(parts[i], call, args(i)...)
	})
	return errors.Join(errs...)
}

// Limits are a topic's rate and concurrency limits, 0 for none.
type Limits struct {
	Rate        int   // deliveries that may start within any PeriodMs
	PeriodMs    int64 // the rate limit's window
	Concurrency int   // jobs that may be reserved at once
}

// SetLimits sets the limits of a topic whose partitions are parts: each partition gets a share
// of each limit, the shares summing to the limit (Share), and keeps the whole for display.
// Waiting consumers are woken, to look again under the new limits. It returns the first
// failure, as SetPaused.
func (s *Store) SetLimits(ctx context.Context, parts []keys.Partition, l Limits) error {
	return s.setControls(ctx, parts, func(p int) []any {
		args := []any{"limits", "", "", "", "", ""}
		if l.Rate > 0 {
			args[1], args[2], args[3] = l.Rate, Share(l.Rate, len(parts), p), l.PeriodMs
		}
		if l.Concurrency > 0 {
			args[4], args[5] = l.Concurrency, Share(l.Concurrency, len(parts), p)
		}
		return args
	})
}

// SetUniqueFor sets the default unique_for of a topic whose partitions are parts (ms, 0 for
// none), or clears it when ms is below 0: enqueued jobs with an id that name none take it.
func (s *Store) SetUniqueFor(ctx context.Context, parts []keys.Partition, ms int64) error {
	return s.setControls(ctx, parts, func(int) []any {
		if ms < 0 {
			return []any{"unique", ""}
		}
		return []any{"unique", ms}
	})
}

// Share is partition p's share of a limit split over n partitions: the limit divided by n,
// and one more for the first limit mod n partitions, so that the shares sum to the limit.
func Share(limit, n, p int) int {
	s := limit / n
	if p < limit%n {
		s++
	}
	return s
}

// DropPartitions deletes the partitions of a topic being deleted, one script call each in one
// round trip: with purge, their jobs (in any state) and controls; without, the controls of
// those that hold no job, leaving any other as it is. It returns how many jobs each partition
// held, and the first failure (then the other partitions' outcomes stand, and the same call
// again is safe).
func (s *Store) DropPartitions(ctx context.Context, parts []keys.Partition, purge bool) ([]int64, error) {
	mode := "empty"
	if purge {
		mode = "purge"
	}
	call := NewCallID()
	cmds, errs := s.pipelined(ctx, purgeScript, len(parts), func(i int) script {
		return write(parts[i], call, mode)
	})
	held := make([]int64, len(parts))
	for i, cmd := range cmds {
		if errs[i] == nil {
			held[i], errs[i] = cmd.Int64()
		}
	}
	return held, errors.Join(errs...)
}
