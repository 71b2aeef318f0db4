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

// A job that takes its unique_for from a default says so in the enqueue's answer, as Get does.
func TestUniqueForDefaultShowsInTheEnqueueAnswer(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{UniqueFor: time.Hour})
	ctx := testContext(t)
	if err := c.SetTopicDefaults(ctx, "topic-default", TopicDefaults{UniqueFor: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]time.Duration{"client-default": time.Hour, "topic-default": time.Minute} {
		j := mustEnqueue(t, c, topic, Spec{ID: "x", Body: []byte("a")})
		got, err := c.Get(ctx, topic, "x")
		if err != nil || got.UniqueFor != want || j.UniqueFor != want {
			t.Errorf("%s: the enqueue answered UniqueFor %v, Get %v (%v); want %v", topic, j.UniqueFor, got.UniqueFor, err, want)
		}
	}
}

// A dead job put back and then acked keeps its id taken for its unique_for from the ack.
func TestUniqueForOfADeadJobRequeuedAndAcked(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "order-1", Body: []byte("a"), UniqueFor: time.Hour})
	ends[2].end(t, c) // dead
	if _, err := c.Enqueue(ctx, "t", Spec{ID: "order-1", Body: []byte("b")}); !errors.Is(err, ErrDone) {
		t.Fatalf("an enqueue of a dead job's id = %v, want ErrDone", err)
	}
	advance(c, 30*time.Minute)
	if n, err := c.RequeueDead(ctx, "t", []string{"order-1"}); err != nil || n != 1 {
		t.Fatalf("RequeueDead = %d, %v", n, err)
	}
	ends[0].end(t, c) // acked
	// An hour and a quarter after it died, three quarters of one after the ack.
	advance(c, 45*time.Minute)
	_, err := c.Enqueue(ctx, "t", Spec{ID: "order-1", Body: []byte("b")})
	var done *DoneError
	if !errors.As(err, &done) || done.Outcome != "acked" {
		t.Errorf("an enqueue 45m after the ack = %v, want a DoneError saying acked", err)
	}
}

// The bounds of unique_for: 1 ms keeps the id taken no longer; the largest, MaxDelay (ten
// years), keeps it that long.
func TestUniqueForBounds(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{})
	ctx := testContext(t)
	const tenYears = 10 * 365 * 24 * time.Hour
	mustEnqueue(t, c, "long", Spec{ID: "x", Body: []byte("a"), UniqueFor: tenYears})
	if _, err := c.Enqueue(ctx, "long", Spec{ID: "y", Body: []byte("a"), UniqueFor: tenYears + time.Millisecond}); err == nil {
		t.Error("a unique_for above MaxDelay was taken")
	}
	j := reserveOne(t, c, "long", 0)
	if err := c.Ack(ctx, j.Lease()); err != nil {
		t.Fatal(err)
	}
	ttl, err := rdb.PTTL(ctx, c.store.Partition("long", 0).Ended("x")).Result()
	if err != nil || ttl < tenYears-time.Minute {
		t.Errorf("the ended marker lives %v (%v), want ten years", ttl, err)
	}
	advance(c, tenYears-time.Hour)
	if _, err := c.Enqueue(ctx, "long", Spec{ID: "x", Body: []byte("b")}); !errors.Is(err, ErrDone) {
		t.Errorf("an enqueue an hour before the ten years pass = %v, want ErrDone", err)
	}

	mustEnqueue(t, c, "short", Spec{ID: "x", Body: []byte("a"), UniqueFor: time.Microsecond})
	j = reserveOne(t, c, "short", 0)
	if err := c.Ack(ctx, j.Lease()); err != nil {
		t.Fatal(err)
	}
	advance(c, time.Millisecond)
	if _, err := c.Enqueue(ctx, "short", Spec{ID: "x", Body: []byte("b")}); err != nil {
		t.Errorf("an enqueue 1 ms after the end, with a unique_for of 1 ms = %v, want a new job", err)
	}
}

// Within its unique_for, an id's job is gone: Get answers how it ended, a cancel says so too,
// and neither brings it back nor moves its end.
func TestUniqueForTombstoneAnswersGetAndCancel(t *testing.T) {
	t.Parallel()
	for _, e := range ends {
		if e.name == "dead" {
			continue
		}
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, Config{})
			ctx := testContext(t)
			mustEnqueue(t, c, "t", Spec{ID: "order-1", Body: []byte("a"), UniqueFor: time.Hour})
			e.end(t, c)
			var done *DoneError
			if _, err := c.Get(ctx, "t", "order-1"); !errors.As(err, &done) {
				t.Fatalf("Get = %v, want a DoneError", err)
			}
			endedAt := done.EndedAt
			advance(c, 10*time.Minute) // past the replay window
			err := c.Cancel(ctx, "t", "order-1")
			var ended *EndedError
			switch {
			case e.outcome == "cancelled" && err != nil:
				t.Errorf("a cancel of a cancelled job within its unique_for = %v, want nil", err)
			case e.outcome != "cancelled" && (!errors.As(err, &ended) || ended.Outcome != e.outcome):
				t.Errorf("a cancel within its unique_for = %v, want an EndedError saying %s", err, e.outcome)
			}
			if _, err := c.Get(ctx, "t", "order-1"); !errors.As(err, &done) || !done.EndedAt.Equal(endedAt) || done.Outcome != e.outcome {
				t.Errorf("Get after the cancel = %v, want the same DoneError as before (%s at %v)", err, e.outcome, endedAt)
			}
		})
	}
}

// A topic's default applies to the jobs enqueued after it is set: a job enqueued before keeps
// what it took then, whatever the default becomes.
func TestUniqueForTopicDefaultAppliesToJobsEnqueuedAfter(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "before", Body: []byte("a")})
	if err := c.SetTopicDefaults(ctx, "t", TopicDefaults{UniqueFor: time.Hour}); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, c, "t", Spec{ID: "after", Body: []byte("a")})
	if err := c.SetTopicDefaults(ctx, "t", TopicDefaults{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		j := reserveOne(t, c, "t", 0)
		if err := c.Ack(ctx, j.Lease()); err != nil {
			t.Fatal(err)
		}
	}
	advance(c, time.Minute)
	if _, err := c.Enqueue(ctx, "t", Spec{ID: "before", Body: []byte("b")}); err != nil {
		t.Errorf("an enqueue of the id of a job enqueued before the default = %v, want a new job", err)
	}
	if _, err := c.Enqueue(ctx, "t", Spec{ID: "after", Body: []byte("b")}); !errors.Is(err, ErrDone) {
		t.Errorf("an enqueue of the id of a job enqueued under the default = %v, want ErrDone", err)
	}
}

// A unique_for shorter than the replay window keeps the id taken only that long, while
// identical retries are still answered for the whole window; a longer one keeps it taken past
// the window, and refuses even an identical retry there.
func TestUniqueForShorterOrLongerThanTheReplayWindow(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{}) // a 30 s window
	ctx := testContext(t)
	short := Spec{ID: "short", Body: []byte("a"), UniqueFor: 10 * time.Second}
	long := Spec{ID: "long", Body: []byte("a"), UniqueFor: time.Minute}
	made := map[string]*Job{"short": mustEnqueue(t, c, "t", short), "long": mustEnqueue(t, c, "t", long)}
	for range 2 {
		j := reserveOne(t, c, "t", 0)
		if err := c.Ack(ctx, j.Lease()); err != nil {
			t.Fatal(err)
		}
	}
	advance(c, 15*time.Second)
	if j, err := c.Enqueue(ctx, "t", short); err != nil || !j.CreatedAt.Equal(made["short"].CreatedAt) {
		t.Errorf("an identical retry within the window, past a short unique_for = %+v, %v; want the first job", j, err)
	}
	if j, err := c.Enqueue(ctx, "t", Spec{ID: "short", Body: []byte("b")}); err != nil || j.Existed {
		t.Errorf("another enqueue past a short unique_for = %+v, %v; want a new job", j, err)
	}
	if _, err := c.Enqueue(ctx, "t", Spec{ID: "long", Body: []byte("b")}); !errors.Is(err, ErrDone) {
		t.Errorf("another enqueue within a long unique_for = %v, want ErrDone", err)
	}
	advance(c, 20*time.Second) // past the window
	if _, err := c.Enqueue(ctx, "t", long); !errors.Is(err, ErrDone) {
		t.Errorf("an identical retry past the window, within the unique_for = %v, want ErrDone", err)
	}
}
