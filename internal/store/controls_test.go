package store

import (
	"testing"

	"github.com/delayq/delayq/internal/keys"
)

// A pause whose answer was lost, sent again after a resume, answers as it did and leaves the
// topic resumed.
func TestPauseReplayDoesNotUndoAResume(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	pause := write(p, NewCallID(), "pause")
	if err := s.run(ctx, controlsScript, pause).Err(); err != nil {
		t.Fatal(err)
	}
	if !counts(t, s, p).Paused {
		t.Fatal("not paused after a pause")
	}
	if err := s.SetPaused(ctx, []keys.Partition{p}, false); err != nil {
		t.Fatal(err)
	}
	if v, err := s.run(ctx, controlsScript, pause).Int64(); err != nil || v != 1 {
		t.Fatalf("replayed pause: %v, %v; want 1", v, err)
	}
	if counts(t, s, p).Paused {
		t.Fatal("a replayed pause undid the resume made since")
	}
}
