package delayq

import (
	"cmp"
	"fmt"
	"testing"
	"time"
)

// jobRank orders jobs as Reserve hands them out: higher priority first, then earlier due
// time, then id.
func jobRank(a, b *Job) int {
	return cmp.Or(cmp.Compare(b.Priority, a.Priority), a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
}

// drainInBatches reserves max jobs at a time until none is left and acks them; it returns the
// jobs in the order they came.
func drainInBatches(t *testing.T, c *Client, topic string, max int) []*Job {
	t.Helper()
	ctx := testContext(t)
	var out []*Job
	for range 1000 {
		jobs, err := c.Reserve(ctx, topic, ReserveOptions{Max: max})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			return out
		}
		for _, j := range jobs {
			if err := c.Ack(ctx, j.Lease()); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, jobs...)
	}
	t.Fatal("the topic never emptied")
	return nil
}

// checkRanked wants jobs in Reserve's order, and n of them.
func checkRanked(t *testing.T, jobs []*Job, n int) {
	t.Helper()
	if len(jobs) != n {
		t.Errorf("got %d jobs; want %d", len(jobs), n)
	}
	for k := 1; k < len(jobs); k++ {
		a, b := jobs[k-1], jobs[k]
		if jobRank(a, b) > 0 {
			t.Errorf("job %d: %s (priority %d, due %s) came after %s (priority %d, due %s)", k,
				b.ID, b.Priority, b.RunAt.Format(time.StampMilli), a.ID, a.Priority, a.RunAt.Format(time.StampMilli))
		}
	}
}

// TestHostileReserveOverPartitionsKeepsPriorityThenDueOrder: on a topic of eight partitions,
// Reserve with Max > 1 hands out ordinary jobs by priority, then due time, across calls and
// within each, whatever partition each job is in.
func TestHostileReserveOverPartitionsKeepsPriorityThenDueOrder(t *testing.T) {
	for _, max := range []int{1, 3, 7, 50} {
		t.Run(fmt.Sprintf("max=%d", max), func(t *testing.T) {
			c, _ := newTestClient(t, Config{Partitions: 8})
			base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			const n = 60
			for i := range n {
				mustEnqueue(t, c, "order", Spec{
					Body:     []byte("x"),
					RunAt:    base.Add(time.Duration((i*37)%n) * time.Second),
					Priority: []int{0, 3, -2, 3, 1}[i%5],
				})
			}
			checkRanked(t, drainInBatches(t, c, "order", max), n)
		})
	}
}

// TestHostileReserveOverPartitionsAfterPromotion: delayed jobs that come due together are
// promoted by the look at the partitions' heads and handed out by priority, then due time.
func TestHostileReserveOverPartitionsAfterPromotion(t *testing.T) {
	c, _ := newTestClient(t, Config{Partitions: 8})
	const n = 40
	for i := range n {
		mustEnqueue(t, c, "later", Spec{
			Body:     []byte("x"),
			Delay:    time.Duration(10+(i*13)%n) * time.Minute,
			Priority: []int{2, 0, 5}[i%3],
		})
	}
	advance(c, 2*time.Hour)
	checkRanked(t, drainInBatches(t, c, "later", 4), n)
}

// TestHostileReserveOverPartitionsAfterRelease: a job released (at once) keeps its rank
// among the others over partitions.
func TestHostileReserveOverPartitionsAfterRelease(t *testing.T) {
	c, _ := newTestClient(t, Config{Partitions: 8})
	ctx := testContext(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	const n = 30
	for i := range n {
		mustEnqueue(t, c, "rel", Spec{Body: []byte("x"), RunAt: base.Add(time.Duration(i) * time.Second), Priority: i % 2})
	}
	jobs, err := c.Reserve(ctx, "rel", ReserveOptions{Max: 6})
	if err != nil {
		t.Fatal(err)
	}
	checkRanked(t, jobs, 6)
	for _, j := range jobs {
		if err := c.Release(ctx, j.Lease()); err != nil {
			t.Fatal(err)
		}
	}
	checkRanked(t, drainInBatches(t, c, "rel", 5), n)
}
