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
