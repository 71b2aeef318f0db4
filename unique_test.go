package delayq

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// ends are the ways a job of topic "t" with id "order-1" ends, each leaving the outcome named.
var ends = []struct {
	name, outcome string
	end           func(t *testing.T, c *Client)
}{
	{"acked", "acked", func(t *testing.T, c *Client) {
		j := reserveOne(t, c, "t", 0)
		if err := c.Ack(testContext(t), j.Lease()); err != nil {
			t.Fatal(err)
		}
	}},
	{"cancelled", "cancelled", func(t *testing.T, c *Client) {
		if err := c.Cancel(testContext(t), "t", "order-1"); err != nil {
			t.Fatal(err)
		}
	}},
	{"dead", "dead", func(t *testing.T, c *Client) {
		j := reserveOne(t, c, "t", 0)
		if _, err := c.Nack(testContext(t), j.Lease(), NackOptions{Dead: true}); err != nil {
			t.Fatal(err)
		}
	}},
	{"dead and deleted", "dead", func(t *testing.T, c *Client) {
		j := reserveOne(t, c, "t", 0)
		if _, err := c.Nack(testContext(t), j.Lease(), NackOptions{Dead: true}); err != nil {
			t.Fatal(err)
		}
		if n, err := c.DeleteDead(testContext(t), "t", []string{j.ID}); err != nil || n != 1 {
			t.Fatalf("DeleteDead: %d, %v", n, err)
		}
	}},
}

func TestUniqueForKeepsTheIDTakenAfterTheJobEnds(t *testing.T) {
	t.Parallel()
	for _, e := range ends {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, Config{})
			ctx := testContext(t)
			first := mustEnqueue(t, c, "t", Spec{ID: "order-1", Body: []byte("a"), UniqueFor: time.Minute})
			if got, err := c.Get(ctx, "t", "order-1"); err != nil || first.UniqueFor != time.Minute || got.UniqueFor != time.Minute {
				t.Errorf("the new job's UniqueFor = %v, stored %+v (%v); want 1m", first.UniqueFor, got, err)
			}
			e.end(t, c)
			// Past the replay window: only the unique_for keeps the id now.
			advance(c, 40*time.Second)
			other := Spec{ID: "order-1", Body: []byte("b"), UniqueFor: time.Minute}
			_, err := c.Enqueue(ctx, "t", other)
			var done *DoneError
			if !errors.As(err, &done) || !errors.Is(err, ErrDone) || errors.Is(err, ErrExists) {
				t.Fatalf("an enqueue of the id after the job %s = %v, want a DoneError", e.name, err)
			}
			if done.Outcome != e.outcome || done.ID != "order-1" || done.Topic != "t" || done.EndedAt.IsZero() {
				t.Errorf("DoneError = %+v, want outcome %s with its end time", done, e.outcome)
			}
			if res, err := c.EnqueueBatch(ctx, "t", []Spec{other}); err != nil || !errors.Is(res[0].Err, ErrDone) {
				t.Errorf("the same in a batch = %v, %v; want ErrDone", res, err)
			}
			if e.name != "dead" {
				if _, err := c.Get(ctx, "t", "order-1"); !errors.As(err, &done) || done.Outcome != e.outcome {
					t.Errorf("Get of the ended job = %v, want its DoneError, never a plain not found", err)
				}
			}
			advance(c, 21*time.Second) // a minute and a second after the end
			again, err := c.Enqueue(ctx, "t", other)
			if e.name == "dead" {
				// Still in the dead letters: the id names a job that exists.
				if !errors.Is(err, ErrExists) {
					t.Errorf("an enqueue of a dead job's id once the unique_for passed = %v, want ErrExists", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("an enqueue once the unique_for passed = %v, want a new job", err)
			}
			if again.Existed || string(again.Body) != "b" {
				t.Errorf("the new job = %+v", again)
			}
		})
	}
}

func TestUniqueForStillAnswersAnIdenticalRetryWithTheFirstJob(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	spec := Spec{ID: "order-1", Body: []byte("a"), UniqueFor: time.Hour}
	first := mustEnqueue(t, c, "t", spec)
	ends[0].end(t, c)
	again, err := c.Enqueue(testContext(t), "t", spec)
	if err != nil || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("an identical retry within the replay window = %+v, %v; want the first job", again, err)
	}
}

func TestUniqueForWorksWithoutReplayWindow(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{ReplayWindow: -1})
	spec := Spec{ID: "order-1", Body: []byte("a"), UniqueFor: time.Hour}
	mustEnqueue(t, c, "t", spec)
	ends[0].end(t, c)
	if _, err := c.Enqueue(testContext(t), "t", spec); !errors.Is(err, ErrDone) {
		t.Fatalf("an enqueue of an acked job's id with no replay window = %v, want ErrDone", err)
	}
}

func TestUniqueForDefaults(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{UniqueFor: time.Hour})
	ctx := testContext(t)
	n := 0
	ended := func(t *testing.T, c *Client, topic string, s Spec) error {
		t.Helper()
		n++
		s.ID, s.Body = fmt.Sprint("order-", n), []byte("a")
		mustEnqueue(t, c, topic, s)
		jobs, err := c.Reserve(ctx, topic, ReserveOptions{Max: 10})
		for _, j := range jobs {
			if err == nil {
				err = c.Ack(ctx, j.Lease())
			}
		}
		if err != nil || len(jobs) == 0 {
			t.Fatalf("reserved %d jobs: %v", len(jobs), err)
		}
		s.Body = []byte("b")
		_, err = c.Enqueue(ctx, topic, s)
		return err
	}
	if err := ended(t, c, "client-default", Spec{}); !errors.Is(err, ErrDone) {
		t.Errorf("the Client's default: %v, want ErrDone", err)
	}
	if err := ended(t, c, "job-opts-out", Spec{UniqueFor: NoUniqueFor}); err != nil {
		t.Errorf("a job with NoUniqueFor: %v, want a new job", err)
	}
	if err := c.SetTopicDefaults(ctx, "topic-opts-out", TopicDefaults{UniqueFor: NoUniqueFor}); err != nil {
		t.Fatal(err)
	}
	if err := ended(t, c, "topic-opts-out", Spec{}); err != nil {
		t.Errorf("a topic with NoUniqueFor: %v, want a new job", err)
	}
	if err := ended(t, c, "topic-opts-out", Spec{UniqueFor: time.Minute}); !errors.Is(err, ErrDone) {
		t.Errorf("a job's own UniqueFor in a topic without: %v, want ErrDone", err)
	}

	plain := newClientOn(t, rdb, Config{})
	if err := plain.SetTopicDefaults(ctx, "topic-default", TopicDefaults{UniqueFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := ended(t, plain, "topic-default", Spec{}); !errors.Is(err, ErrDone) {
		t.Errorf("the topic's default: %v, want ErrDone", err)
	}
	if j, err := plain.Get(ctx, "topic-default", fmt.Sprint("order-", n)); !errors.Is(err, ErrDone) || j != nil {
		t.Errorf("Get = %+v, %v; want the DoneError", j, err)
	}
	s, err := plain.Stats(ctx, "topic-default")
	if err != nil || s.Defaults.UniqueFor != time.Minute {
		t.Errorf("Stats().Defaults = %+v, %v; want UniqueFor 1m", s.Defaults, err)
	}
	if err := ended(t, plain, "no-default", Spec{}); err != nil {
		t.Errorf("no default anywhere: %v, want a new job", err)
	}
}

func TestUniqueForNeedsAnID(t *testing.T) {
	t.Parallel()
	for _, s := range []Spec{{UniqueFor: time.Minute}, {OnConflict: ConflictKeep}, {OnConflict: ConflictReplace},
		{ID: "x", UniqueFor: -2}, {ID: "x", OnConflict: 7}} {
		var inv *InvalidError
		if err := s.Validate(Limits{}); !errors.As(err, &inv) {
			t.Errorf("Validate(%+v) = %v, want an InvalidError", s, err)
		}
	}
}
