package delayq

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateIDDotSegments(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"/", "batch"} {
		if err := ValidateID(id); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalid", id, err)
		}
	}
	for _, id := range []string{".", ".."} {
		err := ValidateID(id)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != "id" || !strings.Contains(inv.Reason, "dot-segment") {
			t.Errorf("ValidateID(%q) = %v, want an InvalidError on id that names the dot-segment", id, err)
		}
	}
	// Dots are fine anywhere else: escaped, these are ordinary path segments.
	for _, id := range []string{"...", ".a", "a.", "a..b", "./", "../a", "a/..", "a/./b", "%2e%2e", "Batch", "batch2"} {
		if err := ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", id, err)
		}
	}
}

func TestEnqueueRefusesDotSegmentIDs(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	for _, id := range []string{".", "..", "/"} {
		if _, err := c.Enqueue(ctx, "t", Spec{ID: id}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Enqueue with id %q: err = %v, want ErrInvalid", id, err)
		}
	}
	res, err := c.EnqueueBatch(ctx, "t", []Spec{{ID: "."}, {ID: ".."}})
	if err != nil || len(res) != 2 {
		t.Fatalf("EnqueueBatch = %v, %v; want 2 results", res, err)
	}
	for i, r := range res {
		if !errors.Is(r.Err, ErrInvalid) {
			t.Errorf("EnqueueBatch result %d: err = %v, want ErrInvalid", i, r.Err)
		}
	}
	if s, err := c.Stats(ctx, "t"); err == nil && s.Delayed+s.Ready != 0 {
		t.Errorf("jobs with dot-segment ids were stored: %+v", s)
	}
}

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
