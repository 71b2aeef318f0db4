package delayq

import (
	"testing"
	"time"
)

// Lateness counts from when a job was due, and a job given a run_at in the past was due when it
// was enqueued: a run_at of 2001 does not make it 25 years late.
func TestLatenessCountsFromEnqueueAtTheEarliest(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	mustEnqueue(t, c, "t", Spec{ID: "old", RunAt: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)})
	jobs, err := c.Reserve(testContext(t), "t", ReserveOptions{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Reserve: %v, %v", jobs, err)
	}
	j := jobs[0]
	if j.LeasedAt.IsZero() || j.LeasedAt.Before(j.CreatedAt) {
		t.Fatalf("LeasedAt %v, created at %v", j.LeasedAt, j.CreatedAt)
	}
	if l := j.Lateness(); l < 0 || l > 10*time.Second {
		t.Fatalf("Lateness %v of a job reserved just after its enqueue", l)
	}
	got, err := c.Get(testContext(t), "t", "old")
	if err != nil || !got.LeasedAt.IsZero() || got.Lateness() != 0 {
		t.Fatalf("Get: LeasedAt %v, Lateness %v; want zero outside a reserve (%v)", got.LeasedAt, got.Lateness(), err)
	}
}
