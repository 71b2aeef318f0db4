//go:build !race

package delayq

import (
	"context"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/budget"
)

// TestAllocationsPerCall holds the allocations of the client's hot path to internal/budget: an
// Enqueue of one job, and a Reserve of one job with the Ack of its lease. (Not under the race
// detector, which allocates for itself: make check-cost runs it.)
func TestAllocationsPerCall(t *testing.T) {
	c, _ := newTestClient(t, Config{})
	ctx := context.Background()
	spec := Spec{Body: body100, Delay: time.Hour}
	mustEnqueue(t, c, "allocs", spec) // the topic exists and the script is loaded
	t.Run("enqueue", func(t *testing.T) {
		checkAllocations(t, "enqueue", func() {
			if _, err := c.Enqueue(ctx, "allocs", spec); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("reserve_ack", func(t *testing.T) {
		due := make([]Spec, budget.Allocations["reserve+ack"].Calls+1)
		for i := range due {
			due[i] = Spec{Body: body100}
		}
		if _, err := c.EnqueueBatch(ctx, "allocs-due", due); err != nil {
			t.Fatal(err)
		}
		checkAllocations(t, "reserve+ack", func() {
			jobs, err := c.Reserve(ctx, "allocs-due", ReserveOptions{Max: 1})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
			}
			if err := c.Ack(ctx, jobs[0].Lease()); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// checkAllocations fails t when a call of f allocates more than the budget of name allows.
func checkAllocations(t *testing.T, name string, f func()) {
	t.Helper()
	b, ok := budget.Allocations[name]
	if !ok {
		t.Fatalf("internal/budget has no allocation budget %q", name)
	}
	got := budget.AllocsPerCall(b.Calls, f)
	verdict, ok := b.Judge(got)
	if !ok {
		t.Errorf("%s: %.2f allocations per call: %s", name, got, verdict)
		return
	}
	t.Logf("%s: %.2f allocations per call: %s", name, got, verdict)
}
