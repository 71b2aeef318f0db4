package bench

import (
	"context"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// TestFloodCountsAChunkCutShort stops the load of precision-load as soon as its first jobs are
// stored, long before a whole chunk is: the load must count what it stored, not 0.
func TestFloodCountsAChunkCutShort(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t).Client(t)
	ctx := context.Background()
	env := &Env{RDB: rdb, Reset: Flusher(rdb), Quick: true}
	stop, err := flood(ctx, env, &Delayq{RDB: rdb, Config: delayq.Config{Namespace: "flood"}})
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "a job stored", func() bool {
		jobs, err := rdb.Keys(ctx, "flood:*:jobs").Result()
		return err == nil && len(jobs) > 0
	})
	jobs, _, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	if jobs == 0 {
		t.Fatal("the load counted 0 jobs after storing some")
	}
}
