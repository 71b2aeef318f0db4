package delayq

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// Topics reads the partitions of many topics per round trip; each topic must still get its own.
func TestTopicsMatchesStatsOverManyRoundTrips(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 4})
	ctx := testContext(t)
	const topics = statsPipeline/4 + 40 // more partitions than one round trip reads
	for i := range topics {
		specs := make([]Spec, i%7)
		for k := range specs {
			specs[k] = Spec{Delay: time.Duration(k+1) * time.Hour}
		}
		specs = append(specs, Spec{}) // one due job in each
		if _, err := c.EnqueueBatch(ctx, fmt.Sprintf("t%04d", i), specs); err != nil {
			t.Fatal(err)
		}
	}
	all, err := c.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != topics {
		t.Fatalf("%d topics, want %d", len(all), topics)
	}
	for i, got := range all {
		want, err := c.Stats(ctx, fmt.Sprintf("t%04d", i))
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != want.Name || got.Delayed != int64(i%7) || got.Delayed != want.Delayed || got.Ready != 1 || got.NextRunAt != want.NextRunAt {
			t.Fatalf("Topics()[%d] = %+v, Stats = %+v", i, got, *want)
		}
	}
}

// A job's wait counts from when it became ready: its due time, or its enqueue when it was
// enqueued with a due time already past. The stats read it while the job is still in the
// delayed set (nobody has reserved from the topic) and again once a reserve has promoted it.
func TestStatsOldestReady(t *testing.T) {
	t.Parallel()
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		enqueue  func(t *testing.T, c *Client) // enqueues into topic "t"
		min, max time.Duration
	}{
		{"a job due in the past counts from its enqueue", func(t *testing.T, c *Client) {
			mustEnqueue(t, c, "t", Spec{ID: "late", RunAt: past})
		}, 0, 10 * time.Second},
		{"a job due in the past waits from its enqueue on", func(t *testing.T, c *Client) {
			mustEnqueue(t, c, "t", Spec{ID: "late", RunAt: past})
			advance(c, time.Minute)
		}, 59 * time.Second, 2 * time.Minute},
		{"the oldest job is found behind one due earlier but enqueued later", func(t *testing.T, c *Client) {
			mustEnqueue(t, c, "t", Spec{ID: "waiting"})
			advance(c, time.Minute)
			for i := range 3 {
				mustEnqueue(t, c, "t", Spec{ID: fmt.Sprint("late-", i), RunAt: past.Add(time.Duration(i) * time.Hour)})
			}
		}, 59 * time.Second, 2 * time.Minute},
		{"the oldest job has the lowest priority", func(t *testing.T, c *Client) {
			mustEnqueue(t, c, "t", Spec{ID: "old-low", Priority: -9})
			advance(c, time.Minute)
			mustEnqueue(t, c, "t", Spec{ID: "hi", Priority: 9})
			mustEnqueue(t, c, "t", Spec{ID: "hi-late", Priority: 9, RunAt: past})
		}, 59 * time.Second, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, Config{})
			ctx := testContext(t)
			tc.enqueue(t, c)
			check := func(where string) {
				t.Helper()
				s, err := c.Stats(ctx, "t")
				if err != nil {
					t.Fatal(err)
				}
				if s.OldestReady < tc.min || s.OldestReady >= tc.max {
					t.Errorf("%s: oldest ready %v, want within [%v, %v)", where, s.OldestReady, tc.min, tc.max)
				}
			}
			check("due jobs not yet promoted")
			mustEnqueue(t, c, "t", Spec{ID: "taken", Priority: 1000})
			if jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 1}); err != nil || len(jobs) != 1 || jobs[0].ID != "taken" {
				t.Fatalf("Reserve = %v, %v; want the job taken", jobs, err)
			}
			check("due jobs promoted by a reserve")
		})
	}
}

func TestTopicExists(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	exists := func(topic string) bool {
		t.Helper()
		ok, err := c.TopicExists(ctx, topic)
		if err != nil {
			t.Fatalf("TopicExists(%q): %v", topic, err)
		}
		return ok
	}
	if exists("orders") {
		t.Error("a topic nothing was enqueued to exists")
	}
	// A reserve on it waits as on an empty topic, and neither it nor the look creates it.
	if jobs, err := c.Reserve(ctx, "orders", ReserveOptions{Wait: 10 * time.Millisecond}); err != nil || len(jobs) != 0 {
		t.Fatalf("Reserve of a topic that does not exist = %v, %v; want no jobs, no error", jobs, err)
	}
	if exists("orders") {
		t.Error("a reserve created the topic")
	}
	mustEnqueue(t, c, "orders", Spec{ID: "j"})
	if !exists("orders") {
		t.Error("a topic with a job does not exist")
	}
	if _, err := c.DeleteTopic(ctx, "orders", DeleteTopicOptions{Purge: true}); err != nil {
		t.Fatal(err)
	}
	if exists("orders") {
		t.Error("a deleted topic exists")
	}
	if _, err := c.TopicExists(ctx, "no spaces"); !errors.Is(err, ErrInvalid) {
		t.Errorf("TopicExists of a bad name = %v, want ErrInvalid", err)
	}
}
