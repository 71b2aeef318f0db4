package store

import (
	"testing"
	"time"

	"github.com/delayq/delayq/internal/keys"
)

// A call whose only job is a repeat of an earlier enqueue records nothing, so a second run of
// it (go-redis re-sending it after a lost reply) is evaluated afresh: when the job was acked or
// cancelled in between, the second run stores it again. The job must not come back.
func TestEnqueueReplayOfARepeatDoesNotBringBackACancelledJob(t *testing.T) {
	s, p := newTestStore(t)
	ctx := testCtx(t)
	s.SetReplayWindow(30 * time.Second)
	job := NewJob{ID: "once", DelayMs: 0, TTRMs: 30000, MaxRetries: 3, Body: []byte("x")}
	first := s.EnqueueMany(ctx, []keys.Partition{p}, [][]NewJob{{job}})
	if first[0].Err != nil || first[0].Jobs[0].Err != nil {
		t.Fatalf("first enqueue: %+v", first[0])
	}
	// The caller lost the answer and sends the job again: a repeat.
	call := write(p, NewCallID(), enqueueArgs([]NewJob{job})...)
	rep, err := s.run(ctx, enqueueScript, call).Int64Slice()
	if err != nil || rep[1] != 2 {
		t.Fatalf("the repeat: %v, %v; want status 2", rep, err)
	}
	// The job is cancelled (or acked) before go-redis re-sends the repeat's call.
	if err := s.Cancel(ctx, p, "once"); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	again, err := s.run(ctx, enqueueScript, call).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, p, "once"); err == nil {
		t.Fatalf("the second run of the repeat's call (answer %v, first run %v) stored the cancelled job again", again, rep)
	}
	if again[1] != rep[1] || again[2] != rep[2] || again[3] != rep[3] {
		t.Errorf("the second run answered %v, the first %v", again, rep)
	}
}
