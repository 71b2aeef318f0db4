package delayq

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// conflictStates put job "x" of topic "t", enqueued with body "old" and a delay of an hour, in
// a state, and return it as it is then.
var conflictStates = []struct {
	name string
	put  func(t *testing.T, c *Client) *Job
}{
	{"delayed", func(t *testing.T, c *Client) *Job {
		return mustEnqueue(t, c, "t", Spec{ID: "x", Body: []byte("old"), Delay: time.Hour})
	}},
	{"ready", func(t *testing.T, c *Client) *Job {
		mustEnqueue(t, c, "t", Spec{ID: "x", Body: []byte("old"), Delay: time.Hour})
		advance(c, time.Hour)
		j, err := c.Get(testContext(t), "t", "x")
		if err != nil || j.State != StateReady {
			t.Fatalf("Get = %+v, %v; want a ready job", j, err)
		}
		return j
	}},
	{"reserved", func(t *testing.T, c *Client) *Job {
		mustEnqueue(t, c, "t", Spec{ID: "x", Body: []byte("old"), Delay: time.Hour})
		advance(c, time.Hour)
		j := reserveOne(t, c, "t", 0)
		j.LeasedAt = time.Time{} // as Get shows it
		return j
	}},
	{"dead", func(t *testing.T, c *Client) *Job {
		mustEnqueue(t, c, "t", Spec{ID: "x", Body: []byte("old"), Delay: time.Hour})
		advance(c, time.Hour)
		j := reserveOne(t, c, "t", 0)
		if _, err := c.Nack(testContext(t), j.Lease(), NackOptions{Dead: true, Error: "no"}); err != nil {
			t.Fatal(err)
		}
		j, err := c.Get(testContext(t), "t", "x")
		if err != nil {
			t.Fatal(err)
		}
		return j
	}},
}

func TestConflictKeepAnswersTheJobAsItIs(t *testing.T) {
	t.Parallel()
	for _, st := range conflictStates {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, Config{})
			ctx := testContext(t)
			before := st.put(t, c)
			kept, err := c.Enqueue(ctx, "t", Spec{ID: "x", Body: []byte("new"), OnConflict: ConflictKeep})
			if err != nil {
				t.Fatalf("keep of a %s job = %v", st.name, err)
			}
			if !kept.Existed {
				t.Error("the kept job's Existed is false")
			}
			ignore := cmpopts.IgnoreFields(Job{}, "Existed", "LeaseToken", "LeasedAt")
			if diff := cmp.Diff(before, kept, ignore); diff != "" {
				t.Errorf("keep answered another job (-before +answer):\n%s", diff)
			}
			after, err := c.Get(ctx, "t", "x")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, after, ignore); diff != "" {
				t.Errorf("keep changed the job (-before +after):\n%s", diff)
			}
		})
	}
}

func TestConflictReplaceChangesADelayedOrReadyJobInPlace(t *testing.T) {
	t.Parallel()
	for _, st := range conflictStates {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, Config{})
			ctx := testContext(t)
			before := st.put(t, c)
			spec := Spec{ID: "x", Body: []byte("new"), Format: FormatJSON, Delay: 2 * time.Hour,
				Priority: 3, Headers: map[string]string{"x-v": "2"}, MaxRetries: 9, OnConflict: ConflictReplace}
			got, err := c.Enqueue(ctx, "t", spec)
			if st.name == "reserved" || st.name == "dead" {
				if !errors.Is(err, ErrWrongState) {
					t.Errorf("replace of a %s job = %+v, %v; want ErrWrongState", st.name, got, err)
				}
				after, _ := c.Get(ctx, "t", "x")
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("the refused replace changed the job (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("replace of a %s job = %v", st.name, err)
			}
			now := got.ReplacedAt
			want := *before
			want.Body, want.Format, want.Priority, want.MaxRetries = []byte("new"), FormatJSON, 3, 9
			want.Headers = map[string]string{"x-v": "2"}
			want.State, want.RunAt = StateDelayed, now.Add(2*time.Hour)
			want.Replaces, want.ReplacedAt, want.Existed = 1, now, true
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("the replaced job (-want +got):\n%s", diff)
			}
			after, err := c.Get(ctx, "t", "x")
			want.Existed = false
			if err != nil || !cmp.Equal(&want, after) {
				t.Errorf("Get after the replace (-want +got):\n%s", cmp.Diff(&want, after))
			}
			// The job is due at its new time, and only then.
			if jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Max: 5}); len(jobs) != 0 {
				t.Errorf("reserved %d jobs before the new due time", len(jobs))
			}
			advance(c, 2*time.Hour)
			if j := reserveOne(t, c, "t", 0); string(j.Body) != "new" {
				t.Errorf("delivered %q, want the new body", j.Body)
			}
		})
	}
}

// Debounce: many producers replace one job, each pushing its due time; the job that remains is
// due when the call applied last asked, and exists once.
func TestConflictReplaceDebouncesConcurrentProducers(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	const producers, calls = 16, 10000
	base := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	type answer struct {
		replaces int
		runAt    time.Time
	}
	answers := make(chan answer, calls)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := p; k < calls; k += producers {
				// Due times in no order, so that only the order of application decides.
				at := base.Add(time.Duration((k*7919)%calls) * time.Millisecond)
				j, err := c.Enqueue(ctx, "t", Spec{ID: "session-42", Body: []byte(fmt.Sprint(k)), RunAt: at, OnConflict: ConflictReplace})
				if err != nil {
					t.Error(err)
					return
				}
				if !j.RunAt.Equal(at) {
					t.Errorf("call %d answered due %v, asked %v", k, j.RunAt, at)
				}
				answers <- answer{j.Replaces, at}
			}
		}()
	}
	wg.Wait()
	close(answers)
	last, seen := answer{replaces: -1}, map[int]bool{}
	for a := range answers {
		if seen[a.replaces] {
			t.Fatalf("two calls answered replace number %d", a.replaces)
		}
		seen[a.replaces] = true
		if a.replaces > last.replaces {
			last = a
		}
	}
	if last.replaces != calls-1 {
		t.Fatalf("the last call answered %d replaces, want %d", last.replaces, calls-1)
	}
	j, err := c.Get(ctx, "t", "session-42")
	if err != nil || !j.RunAt.Equal(last.runAt) || j.Replaces != calls-1 {
		t.Fatalf("the job = %+v, %v; want due %v after %d replaces", j, err, last.runAt, calls-1)
	}
	s, err := c.Stats(ctx, "t")
	if err != nil || s.Delayed != 1 || s.Ready+s.Reserved+s.Dead != 0 {
		t.Errorf("stats = %+v, %v; want one delayed job", s, err)
	}
}

func TestConflictReplaceOfAnEndedJobRunsNothingTwice(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	spec := Spec{ID: "x", Body: []byte("a"), OnConflict: ConflictReplace}
	first := mustEnqueue(t, c, "t", spec)
	ends[0].end(t, c) // acked
	again, err := c.Enqueue(ctx, "t", spec)
	if err != nil || !again.CreatedAt.Equal(first.CreatedAt) || again.Existed {
		t.Fatalf("the same replace after the job ran = %+v, %v; want the first job", again, err)
	}
	if jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Max: 5}); len(jobs) != 0 {
		t.Errorf("the job ran again")
	}
	other := spec
	other.Body = []byte("b")
	if j, err := c.Enqueue(ctx, "t", other); err != nil || j.Existed {
		t.Errorf("a different replace after the job ran = %+v, %v; want a new job", j, err)
	}
}
