package delayq

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/delayq/delayq/internal/store"
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

// Concurrent Enqueue calls to one partition leave in one script call (flushEnqueues): a job and
// a replace of it may meet there. The job is then due when the replace asked, as its record
// and both answers say, and is handed out only then.
func TestConflictReplaceCoalescedWithTheEnqueueThatAddsTheJob(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	req := func(s Spec) enqueueReq {
		j, err := c.cfg.Limits.toNewJob(s, c.newID)
		if err != nil {
			t.Fatal(err)
		}
		j.Print = store.Fingerprint(j)
		return enqueueReq{topic: "t", part: c.store.Partition("t", 0), job: j}
	}
	if _, err := c.partitions(ctx, "t", true); err != nil {
		t.Fatal(err)
	}
	res := c.flushEnqueues(ctx, []enqueueReq{
		req(Spec{ID: "x", Body: []byte("first"), Delay: time.Minute}),
		req(Spec{ID: "x", Body: []byte("second"), Delay: 2 * time.Hour, OnConflict: ConflictReplace}),
	})
	if res[0].err != nil || res[1].err != nil || !res[1].job.Existed {
		t.Fatalf("answers %+v, %+v; want added, then replaced", res[0], res[1])
	}
	got, err := c.Get(ctx, "t", "x")
	if err != nil || !got.RunAt.Equal(res[1].job.RunAt) {
		t.Fatalf("Get = %+v, %v; want due %v as the replace answered", got, err, res[1].job.RunAt)
	}
	advance(c, time.Minute+time.Second)
	if jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Max: 5}); len(jobs) != 0 {
		t.Errorf("reserved %q at the first enqueue's due time; the job is due at %v", jobs[0].Body, got.RunAt)
	}
}

// A replace that is sent again after the job ran answers the job that ran: due when the
// replace made it due, not when the first enqueue had.
func TestConflictReplaceRepeatedAfterTheJobRanAnswersItsDueTime(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "x", Body: []byte("first"), Delay: time.Second})
	advance(c, 10*time.Second)
	replace := Spec{ID: "x", Body: []byte("second"), Delay: 5 * time.Second, OnConflict: ConflictReplace}
	replaced := mustEnqueue(t, c, "t", replace)
	advance(c, 5*time.Second)
	j := reserveOne(t, c, "t", 0)
	if !j.RunAt.Equal(replaced.RunAt) {
		t.Fatalf("delivered due %v, the replace answered %v", j.RunAt, replaced.RunAt)
	}
	if err := c.Ack(ctx, j.Lease()); err != nil {
		t.Fatal(err)
	}
	again, err := c.Enqueue(ctx, "t", replace)
	if err != nil {
		t.Fatal(err)
	}
	if !again.RunAt.Equal(replaced.RunAt) {
		t.Errorf("the replace sent again answered due %v; the job ran due %v", again.RunAt, replaced.RunAt)
	}
}

// A replace that moves a ready job to the other lane (adding or removing its callback URL)
// delivers it once, and only to that lane.
func TestConflictReplaceMovesAReadyJobToItsNewLane(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "pull-to-push", Body: []byte("a")})
	mustEnqueue(t, c, "t", Spec{ID: "push-to-pull", Body: []byte("b"), CallbackURL: "https://example.com/hook"})
	mustEnqueue(t, c, "t", Spec{ID: "pull-to-push", Body: []byte("a2"), CallbackURL: "https://example.com/hook", OnConflict: ConflictReplace})
	mustEnqueue(t, c, "t", Spec{ID: "push-to-pull", Body: []byte("b2"), Priority: 5, OnConflict: ConflictReplace})
	pull, err := c.Reserve(ctx, "t", ReserveOptions{Max: 5})
	if err != nil || len(pull) != 1 || pull[0].ID != "push-to-pull" || string(pull[0].Body) != "b2" {
		t.Errorf("pull lane handed out %v, %v; want push-to-pull with its new body", pull, err)
	}
	push, err := c.Reserve(ctx, "t", ReserveOptions{Max: 5, push: true})
	if err != nil || len(push) != 1 || push[0].ID != "pull-to-push" || string(push[0].Body) != "a2" {
		t.Errorf("push lane handed out %v, %v; want pull-to-push with its new body", push, err)
	}
}

// A replace and a reserve of the same ready job race: either the replace comes first and the
// job is delivered with the new body, or the reserve does and the replace is refused.
func TestConflictReplaceRacingAReserve(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	for round := range 200 {
		id := fmt.Sprint("x-", round)
		mustEnqueue(t, c, "t", Spec{ID: id, Body: []byte("old")})
		var replaced error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, replaced = c.Enqueue(ctx, "t", Spec{ID: id, Body: []byte("new"), OnConflict: ConflictReplace})
		}()
		jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 5})
		wg.Wait()
		if err != nil || len(jobs) != 1 {
			t.Fatalf("round %d: reserved %d jobs, %v", round, len(jobs), err)
		}
		switch {
		case replaced == nil && string(jobs[0].Body) != "new":
			t.Fatalf("round %d: the replace answered success, and the job was delivered with its old body", round)
		case replaced != nil && !errors.Is(replaced, ErrWrongState):
			t.Fatalf("round %d: replace = %v", round, replaced)
		case replaced != nil && string(jobs[0].Body) != "old":
			t.Fatalf("round %d: the replace was refused, and the job was delivered with the new body", round)
		}
		if err := c.Ack(ctx, jobs[0].Lease()); err != nil {
			t.Fatal(err)
		}
		if more, _ := c.Reserve(ctx, "t", ReserveOptions{Max: 5}); len(more) != 0 {
			t.Fatalf("round %d: delivered again: %v", round, more)
		}
	}
}

// A batch that replaces as many jobs as a batch holds replaces every one, once.
func TestConflictReplaceOfAFullBatch(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	const n = 1000
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{ID: fmt.Sprint("job-", i), Body: []byte("old"), Delay: time.Hour}
	}
	if _, err := c.EnqueueBatch(ctx, "t", specs); err != nil {
		t.Fatal(err)
	}
	for i := range specs {
		specs[i].Body, specs[i].Delay, specs[i].OnConflict = []byte("new"), 2*time.Hour, ConflictReplace
	}
	start := time.Now()
	res, err := c.EnqueueBatch(ctx, "t", specs)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil || !r.Job.Existed || r.Job.Replaces != 1 || string(r.Job.Body) != "new" {
			t.Fatalf("job %d: %+v, %v", i, r.Job, r.Err)
		}
	}
	t.Logf("replacing %d jobs in a batch took %v", n, took)
	s, err := c.Stats(ctx, "t")
	if err != nil || s.Delayed != n {
		t.Errorf("stats %+v, %v; want %d delayed", s, err, n)
	}
	advance(c, time.Hour+time.Second)
	if jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Max: 5}); len(jobs) != 0 {
		t.Errorf("reserved %d jobs at their old due time", len(jobs))
	}
}

// A replace that makes a delayed job due now wakes the consumer waiting for it, in the job's
// new lane, as an enqueue does: no recheck interval decides when it runs.
func TestConflictReplaceWakesTheWaitingConsumerOfItsLane(t *testing.T) {
	t.Parallel()
	for _, lane := range []store.Lane{store.LanePull, store.LanePush} {
		t.Run(string(lane), func(t *testing.T) {
			t.Parallel()
			c, rdb := newTestClient(t, Config{RecheckInterval: time.Minute})
			producer := newClientOn(t, rdb, Config{})
			ctx := testContext(t)
			mustEnqueue(t, producer, "t", Spec{ID: "x", Body: []byte("old"), Delay: time.Hour})
			got := make(chan []*Job, 1)
			go func() {
				jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Wait: 20 * time.Second, push: lane == store.LanePush})
				got <- jobs
			}()
			waitSettled(t, c, "t", lane)
			start := time.Now()
			replace := Spec{ID: "x", Body: []byte("new"), OnConflict: ConflictReplace}
			if lane == store.LanePush {
				replace.CallbackURL = "https://example.com/hook"
			}
			mustEnqueue(t, producer, "t", replace)
			select {
			case jobs := <-got:
				if len(jobs) != 1 || string(jobs[0].Body) != "new" {
					t.Fatalf("got %v", jobs)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("woken after %v", d)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the waiting consumer was not woken by the replace")
			}
		})
	}
}

// A replace in a paused topic changes the job and hands out nothing until the topic resumes;
// then the job is delivered once.
func TestConflictReplaceInAPausedTopic(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "x", Body: []byte("old")})
	if err := c.PauseTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, c, "t", Spec{ID: "x", Body: []byte("new"), OnConflict: ConflictReplace})
	if jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Max: 5}); len(jobs) != 0 {
		t.Fatalf("a paused topic handed out %d jobs", len(jobs))
	}
	if err := c.ResumeTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 5})
	if err != nil || len(jobs) != 1 || string(jobs[0].Body) != "new" {
		t.Fatalf("after the resume: %v, %v; want the replaced job once", jobs, err)
	}
}
