package delayq

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// bury enqueues n jobs and sends each to the dead letters.
func bury(t *testing.T, c *Client, topic string, n int) []string {
	t.Helper()
	ctx := testContext(t)
	specs := make([]Spec, n)
	ids := make([]string, n)
	for i := range specs {
		ids[i] = fmt.Sprintf("job-%03d", i)
		specs[i] = Spec{ID: ids[i], NoRetries: true}
	}
	if _, err := c.EnqueueBatch(ctx, topic, specs); err != nil {
		t.Fatal(err)
	}
	for buried := 0; buried < n; {
		jobs, err := c.Reserve(ctx, topic, ReserveOptions{Max: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if dead, err := c.Nack(ctx, Lease{Topic: topic, ID: j.ID, Token: j.LeaseToken}, NackOptions{Error: "boom"}); err != nil || !dead {
				t.Fatalf("Nack = %v, %v", dead, err)
			}
			buried++
		}
	}
	return ids
}

func TestDeadJobsPaging(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 4})
	ctx := testContext(t)
	ids := bury(t, c, "t", 25)
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		jobs, next, err := c.DeadJobs(ctx, "t", 7, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.State != StateDead || j.LastError != "boom" {
				t.Errorf("dead letter %+v", j)
			}
			got = append(got, j.ID)
		}
		if next == "" {
			break
		}
		if len(jobs) != 7 {
			t.Errorf("a page that is not the last has %d jobs", len(jobs))
		}
		cursor = next
	}
	slices.Sort(got)
	if !slices.Equal(got, ids) {
		t.Errorf("pages hold %v, want each of %v once", got, ids)
	}
	for _, bad := range []string{"!!", "bm90IGEgY3Vyc29y", "OTk6eA"} {
		if _, _, err := c.DeadJobs(ctx, "t", 10, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("cursor %q: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestRequeueDead(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 2})
	ctx := testContext(t)
	ids := bury(t, c, "t", 10)
	n, err := c.RequeueDead(ctx, "t", []string{ids[0], ids[1], "not-dead"})
	if err != nil || n != 2 {
		t.Fatalf("RequeueDead = %d, %v; want 2", n, err)
	}
	j, _ := c.Get(ctx, "t", ids[0])
	if j.State != StateReady || j.Attempts != 0 {
		t.Errorf("requeued job %+v, want ready with 0 attempts", j)
	}
	// A requeued job is no longer dead: requeueing or deleting it again does nothing.
	if n, _ := c.DeleteDead(ctx, "t", []string{ids[0]}); n != 0 {
		t.Errorf("DeleteDead removed a requeued job")
	}
	n, err = c.RequeueAllDead(ctx, "t")
	if err != nil || n != 8 {
		t.Fatalf("RequeueAllDead = %d, %v; want 8", n, err)
	}
	s, _ := c.Stats(ctx, "t")
	if s.Ready != 10 || s.Dead != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestDeleteDead(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 3, BulkLimit: 4})
	ctx := testContext(t)
	ids := bury(t, c, "t", 13)
	mustEnqueue(t, c, "t", Spec{ID: "alive"})
	if n, err := c.DeleteDead(ctx, "t", []string{ids[0], "alive"}); err != nil || n != 1 {
		t.Fatalf("DeleteDead = %d, %v; want 1 (the live job is not dead)", n, err)
	}
	if _, err := c.Get(ctx, "t", ids[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("a deleted dead job is still there: %v", err)
	}
	// BulkLimit 4: deleting all takes several bounded script calls per partition.
	if n, err := c.DeleteAllDead(ctx, "t"); err != nil || n != 12 {
		t.Fatalf("DeleteAllDead = %d, %v; want 12", n, err)
	}
	if _, err := c.Get(ctx, "t", "alive"); err != nil {
		t.Errorf("DeleteAllDead touched a live job: %v", err)
	}
}
