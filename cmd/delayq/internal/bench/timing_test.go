package bench

import (
	"context"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// TestFloodCountsAChunkCutShort stops the load of precision-load once its first jobs are stored,
// long before a whole chunk of 4,000 is: the load must count what it stored, not 0.
func TestFloodCountsAChunkCutShort(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t).Client(t)
	ctx := context.Background()
	env := &Env{RDB: rdb, Reset: Flusher(rdb), Quick: true}
	stop, err := flood(ctx, env, &Delayq{RDB: rdb, Config: delayq.Config{Namespace: "flood"}})
	if err != nil {
		t.Fatal(err)
	}
	// 100 jobs stored: at most 16 of them (one call in flight per producer) can belong to calls
	// that have not returned yet, whose jobs the stop may leave uncounted.
	testwait.For(t, 10*time.Second, "100 jobs stored", func() bool {
		keys, err := rdb.Keys(ctx, "flood:*:jobs").Result()
		if err != nil || len(keys) == 0 {
			return false
		}
		n, err := rdb.HLen(ctx, keys[0]).Result()
		return err == nil && n >= 100
	})
	jobs, _, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	if jobs == 0 {
		t.Fatal("the load counted 0 jobs after storing some")
	}
}
