package archive

import (
	"context"
	"testing"
	"time"

	"github.com/delayq/delayq"
)

// A dead job that is requeued starts its attempts over: when it dies again, that second death
// is an end of its own and gets a row of its own, as do its failed attempts.
func TestArchiverRecordsADeathAfterRequeue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{Failed: true})

	if _, err := c.Enqueue(ctx, "orders", delayq.Spec{ID: "o-1", MaxRetries: 1}); err != nil {
		t.Fatal(err)
	}
	var zero time.Duration
	die := func() {
		t.Helper()
		for _, dead := range []bool{false, true} {
			jobs, err := c.Reserve(ctx, "orders", delayq.ReserveOptions{Max: 1})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
			}
			if _, err := c.Nack(ctx, jobs[0].Lease(), delayq.NackOptions{Error: "no", Delay: &zero, Dead: dead}); err != nil {
				t.Fatal(err)
			}
		}
	}
	die()
	if n, err := c.RequeueDead(ctx, "orders", []string{"o-1"}); err != nil || n != 1 {
		t.Fatalf("RequeueDead: %d, %v", n, err)
	}
	die()
	rows := waitRows(t, pg, "orders", 4)
	n := map[string]int{}
	for _, r := range rows {
		n[r.Outcome]++
	}
	if n[Dead] != 2 || n[Failed] != 2 {
		t.Errorf("rows by outcome %v, want 2 dead and 2 failed", n)
	}
}
