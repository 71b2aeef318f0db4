package delayq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/ids"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
)

func TestEnqueueGet(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	j := mustEnqueue(t, c, "orders", Spec{
		ID: "order-1", Body: []byte(`{"n":1}`), Format: FormatJSON, Delay: time.Hour,
		TTR: 5 * time.Second, MaxRetries: 2, Backoff: []time.Duration{time.Second}, Priority: 7,
	})
	got, err := c.Get(ctx, "orders", "order-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(j, got); diff != "" {
		t.Errorf("Get differs from what Enqueue returned (-enqueue +get):\n%s", diff)
	}
	if got.State != StateDelayed || got.RunAt.Sub(got.CreatedAt) != time.Hour {
		t.Errorf("state %s, run_at - created_at = %v; want delayed, 1h", got.State, got.RunAt.Sub(got.CreatedAt))
	}
	if _, err := c.Get(ctx, "orders", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
	if _, err := c.Get(ctx, "no-such-topic", "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(missing topic) = %v, want ErrNotFound", err)
	}
}

func TestEnqueueDuplicateChangesNothing(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	first := mustEnqueue(t, c, "t", Spec{ID: "a", Body: []byte("one"), Delay: time.Minute})
	if _, err := c.Enqueue(ctx, "t", Spec{ID: "a", Body: []byte("two")}); !errors.Is(err, ErrExists) {
		t.Fatalf("second Enqueue = %v, want ErrExists", err)
	}
	got, _ := c.Get(ctx, "t", "a")
	if diff := cmp.Diff(first, got); diff != "" {
		t.Errorf("the duplicate changed the job (-before +after):\n%s", diff)
	}
}

// An enqueue repeated because its answer was lost must answer what the first one did, never
// ErrExists, and store nothing twice; anything else with the same id stays a duplicate.
func TestEnqueueRepeatedAnswersTheFirst(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	spec := Spec{ID: "a", Body: []byte("one"), Delay: time.Minute, Priority: 3, Backoff: []time.Duration{time.Second}}
	first := mustEnqueue(t, c, "t", spec)
	again, err := c.Enqueue(ctx, "t", spec)
	if err != nil {
		t.Fatalf("the same Enqueue again = %v, want the first job", err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("the repeat answered another job (-first +repeat):\n%s", diff)
	}
	at := Spec{ID: "b", Body: []byte("one"), RunAt: first.RunAt}
	mustEnqueue(t, c, "t", at)
	if _, err := c.Enqueue(ctx, "t", at); err != nil {
		t.Errorf("the same Enqueue with run_at again = %v, want the first job", err)
	}
	if st, _ := c.Stats(ctx, "t"); st.Delayed != 2 {
		t.Errorf("%d jobs delayed, want 2", st.Delayed)
	}

	for name, other := range map[string]Spec{
		"another body":     {ID: "a", Body: []byte("two"), Delay: time.Minute, Priority: 3, Backoff: spec.Backoff},
		"another delay":    {ID: "a", Body: []byte("one"), Delay: 2 * time.Minute, Priority: 3, Backoff: spec.Backoff},
		"another priority": {ID: "a", Body: []byte("one"), Delay: time.Minute, Backoff: spec.Backoff},
		"another backoff":  {ID: "a", Body: []byte("one"), Delay: time.Minute, Priority: 3},
		"another run_at":   {ID: "b", Body: []byte("one"), RunAt: first.RunAt.Add(time.Millisecond)},
	} {
		if _, err := c.Enqueue(ctx, "t", other); !errors.Is(err, ErrExists) {
			t.Errorf("%s: Enqueue = %v, want ErrExists", name, err)
		}
	}

	// A job that failed once is still the one the enqueue made: its retry answers the first
	// call's job, and stores nothing.
	now := mustEnqueue(t, c, "t", Spec{ID: "c", Body: []byte("x")})
	j := reserveOne(t, c, "t", time.Second)
	if j == nil || j.ID != now.ID {
		t.Fatalf("reserved %+v, want c", j)
	}
	hour := time.Hour
	if _, err := c.Nack(ctx, Lease{Topic: "t", ID: j.ID, Token: j.LeaseToken}, NackOptions{Delay: &hour}); err != nil {
		t.Fatal(err)
	}
	retried, err := c.Enqueue(ctx, "t", Spec{ID: "c", Body: []byte("x")})
	if err != nil {
		t.Errorf("after a failure: Enqueue = %v, want the first job", err)
	} else if diff := cmp.Diff(now, retried); diff != "" {
		t.Errorf("after a failure: the retry answered another job (-first +retry):\n%s", diff)
	}
	if got, _ := c.Get(ctx, "t", "c"); got == nil || got.Attempts != 1 || got.State != StateDelayed {
		t.Errorf("after a failure: the retry changed the job: %+v", got)
	}
	if _, err := c.Enqueue(ctx, "t", Spec{ID: "c", Body: []byte("y")}); !errors.Is(err, ErrExists) {
		t.Errorf("after a failure, another body: Enqueue = %v, want ErrExists", err)
	}
	// Nor is one older than the replay window.
	advance(c, 31*time.Second)
	if _, err := c.Enqueue(ctx, "t", spec); !errors.Is(err, ErrExists) {
		t.Errorf("after the replay window: Enqueue = %v, want ErrExists", err)
	}
}

func TestEnqueueGeneratesTimeOrderedIDs(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	var prev string
	for range 50 {
		j := mustEnqueue(t, c, "t", Spec{Body: []byte("x")})
		if j.ID <= prev {
			t.Fatalf("id %q does not sort after %q", j.ID, prev)
		}
		prev = j.ID
	}
}

func TestEnqueueRunAtInThePastIsDueNow(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	past := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	j := mustEnqueue(t, c, "t", Spec{ID: "p", RunAt: past})
	if !j.RunAt.Equal(past) || j.State != StateReady {
		t.Errorf("run_at %v state %s, want %v ready", j.RunAt, j.State, past)
	}
	r := reserveOne(t, c, "t", 0)
	if r.ID != "p" {
		t.Errorf("reserved %q", r.ID)
	}
}

func TestEnqueueValidation(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Limits: Limits{MaxBody: 10}})
	ctx := testContext(t)
	tests := []struct {
		name  string
		topic string
		spec  Spec
		field string
	}{
		{"bad topic", "a b", Spec{}, "topic"},
		{"topic with brace", "a{b}", Spec{}, "topic"},
		{"long topic", string(make([]byte, 129)), Spec{}, "topic"},
		{"id with space", "t", Spec{ID: "a b"}, "id"},
		{"id too long", "t", Spec{ID: string(make([]byte, 257))}, "id"},
		{"id not utf8", "t", Spec{ID: "\xff"}, "id"},
		{"body too big", "t", Spec{Body: make([]byte, 11)}, "body"},
		{"negative delay", "t", Spec{Delay: -time.Second}, "delay"},
		{"delay too long", "t", Spec{Delay: 11 * 365 * 24 * time.Hour}, "delay"},
		{"delay and run_at", "t", Spec{Delay: time.Second, RunAt: time.Now()}, "run_at"},
		{"ttr too short", "t", Spec{TTR: time.Millisecond}, "ttr"},
		{"ttr too long", "t", Spec{TTR: 25 * time.Hour}, "ttr"},
		{"negative retries", "t", Spec{MaxRetries: -1}, "max_retries"},
		{"retries and no retries", "t", Spec{MaxRetries: 2, NoRetries: true}, "max_retries"},
		{"too many retries", "t", Spec{MaxRetries: 1001}, "max_retries"},
		{"negative snoozes", "t", Spec{MaxSnoozes: -1}, "max_snoozes"},
		{"too many snoozes", "t", Spec{MaxSnoozes: 1_000_001}, "max_snoozes"},
		{"empty backoff", "t", Spec{Backoff: []time.Duration{}}, "backoff"},
		{"negative backoff", "t", Spec{Backoff: []time.Duration{time.Second, -1}}, "backoff[1]"},
		{"priority too high", "t", Spec{Priority: 1001}, "priority"},
		{"priority too low", "t", Spec{Priority: -1001}, "priority"},
		{"callback not http", "t", Spec{CallbackURL: "ftp://x/y"}, "callback_url"},
		{"callback relative", "t", Spec{CallbackURL: "/hook"}, "callback_url"},
		{"unknown format", "t", Spec{Format: 7}, "format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Enqueue(ctx, tt.topic, tt.spec)
			var inv *InvalidError
			if !errors.As(err, &inv) || !errors.Is(err, ErrInvalid) || inv.Field != tt.field {
				t.Fatalf("Enqueue = %v, want an InvalidError on %q", err, tt.field)
			}
		})
	}
	if names, _ := c.TopicNames(ctx); len(names) > 1 {
		t.Errorf("invalid jobs registered topics: %v", names)
	}
	if s, err := c.Stats(ctx, "t"); err == nil && s.Delayed+s.Ready != 0 {
		t.Errorf("invalid jobs were stored: %+v", s)
	}
}

func TestEnqueueBatchEachJobAlone(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 4})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "taken", Body: []byte("first")})
	res, err := c.EnqueueBatch(ctx, "t", []Spec{
		{ID: "a"}, {ID: "bad id"}, {ID: "taken"}, {ID: "b", Delay: time.Minute}, {ID: "a"}, {},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantErr := []error{nil, ErrInvalid, ErrExists, nil, ErrExists, nil}
	for i, r := range res {
		if !errors.Is(r.Err, wantErr[i]) || (r.Err == nil) != (r.Job != nil) {
			t.Errorf("result %d = %+v, want error %v", i, r, wantErr[i])
		}
	}
	s, _ := c.Stats(ctx, "t")
	if s.Ready+s.Delayed != 4 {
		t.Errorf("stored %d jobs, want 4 (taken, a, b, generated)", s.Ready+s.Delayed)
	}
	if _, err := c.EnqueueBatch(ctx, "t", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty batch = %v, want ErrInvalid", err)
	}
	if _, err := c.EnqueueBatch(ctx, "t", make([]Spec, 1001)); !errors.Is(err, ErrInvalid) {
		t.Errorf("batch of 1001 = %v, want ErrInvalid", err)
	}
}

func TestRescheduleStates(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "d", Delay: time.Hour})
	j, err := c.Reschedule(ctx, "t", "d", 0)
	if err != nil || j.State != StateReady {
		t.Fatalf("Reschedule(delayed → now) = %+v, %v", j, err)
	}
	at := time.Now().Add(2 * time.Hour).Truncate(time.Millisecond).UTC()
	if j, err = c.RescheduleAt(ctx, "t", "d", at); err != nil || j.State != StateDelayed || !j.RunAt.Equal(at) {
		t.Fatalf("RescheduleAt(ready → later) = %+v, %v", j, err)
	}
	if _, err := c.Reserve(ctx, "t", ReserveOptions{}); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, c, "t", Spec{ID: "r"})
	reserveOne(t, c, "t", 0)
	if _, err := c.Reschedule(ctx, "t", "r", time.Minute); !errors.Is(err, ErrWrongState) {
		t.Errorf("Reschedule(reserved) = %v, want ErrWrongState", err)
	}
	if _, err := c.Reschedule(ctx, "t", "missing", time.Minute); !errors.Is(err, ErrNotFound) {
		t.Errorf("Reschedule(missing) = %v, want ErrNotFound", err)
	}
}

func TestTopicKeepsItsPartitionCount(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{Partitions: 4})
	mustEnqueue(t, c, "t", Spec{ID: "x"})
	other := newClientOn(t, rdb, Config{Partitions: 2})
	j, err := other.Get(testContext(t), "t", "x")
	if err != nil || j.ID != "x" {
		t.Fatalf("a client configured with 2 partitions cannot find a job of a 4-partition topic: %v", err)
	}
}

func TestInvalidBatchCreatesNoTopic(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	res, err := c.EnqueueBatch(ctx, "never", []Spec{{ID: "bad id"}})
	if err != nil || res[0].Err == nil {
		t.Fatalf("EnqueueBatch = %+v, %v", res, err)
	}
	if names, _ := c.TopicNames(ctx); len(names) != 0 {
		t.Errorf("a batch with no valid job created topics %v", names)
	}
}

func TestTruncateUTF8(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{{"héllo", 2, "h"}, {"héllo", 3, "hé"}, {"abc", 5, "abc"}, {"日本", 4, "日"}} {
		if got := truncateUTF8(tt.in, tt.n); got != tt.want {
			t.Errorf("truncateUTF8(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestLargeBatchBeyondTheDefaultLimit(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Limits: Limits{MaxBatch: 5000}})
	specs := make([]Spec, 5000)
	res, err := c.EnqueueBatch(testContext(t), "t", specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if s, _ := c.Stats(testContext(t), "t"); s.Ready != 5000 {
		t.Errorf("stored %d of 5000", s.Ready)
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	l := Limits{MaxBody: 10}
	if err := (Spec{ID: "a", Body: []byte("0123456789"), NoRetries: true}).Validate(l); err != nil {
		t.Errorf("a good spec: %v", err)
	}
	err := Spec{Body: make([]byte, 11)}.Validate(l)
	var inv *InvalidError
	if !errors.As(err, &inv) || inv.Field != "body" || !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrInvalid) {
		t.Errorf("a body over the limit: %v, want an InvalidError on body matching ErrTooLarge and ErrInvalid", err)
	}
	if err := (Spec{TTR: time.Millisecond}).Validate(l); errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrInvalid) {
		t.Errorf("a short TTR: %v, want ErrInvalid alone", err)
	}
}

func TestReserveOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		o     ReserveOptions
		field string
	}{
		{ReserveOptions{}, ""},
		{ReserveOptions{Max: 1000, MaxBytes: 256 << 20, Wait: time.Minute, TTR: time.Hour}, ""},
		{ReserveOptions{Max: 1001}, "max"},
		{ReserveOptions{MaxBytes: 256<<20 + 1}, "max_bytes"},
		{ReserveOptions{Wait: -time.Millisecond}, "wait"},
		{ReserveOptions{TTR: time.Millisecond}, "ttr"},
	} {
		err := tt.o.Validate(Limits{})
		var inv *InvalidError
		if tt.field == "" && err != nil || tt.field != "" && (!errors.As(err, &inv) || inv.Field != tt.field) {
			t.Errorf("%+v: %v, want an error on %q", tt.o, err, tt.field)
		}
	}
}

// Due times are whole milliseconds: a time or delay between two rounds up, so that no job is
// due before the moment asked for (it used to round down, up to a millisecond early).
func TestSubMillisecondDueTimesRoundUp(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond).Add(700 * time.Microsecond)
	j := mustEnqueue(t, c, "t", Spec{ID: "at", RunAt: at})
	if j.RunAt.Before(at) || j.RunAt.Sub(at) >= time.Millisecond {
		t.Errorf("run_at %v for a job asked for %v: want the next whole millisecond", j.RunAt, at)
	}
	j = mustEnqueue(t, c, "t", Spec{ID: "delay", Delay: 1500 * time.Microsecond})
	if d := j.RunAt.Sub(j.CreatedAt); d != 2*time.Millisecond {
		t.Errorf("a 1.5 ms delay made the job due %v after its creation, want 2ms", d)
	}
	j = mustEnqueue(t, c, "t", Spec{ID: "later", Delay: time.Hour})
	r, err := c.Reschedule(ctx, "t", j.ID, time.Hour+100*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get(ctx, "t", j.ID); got.RunAt != r.RunAt {
		t.Fatalf("Get %v, Reschedule %v", got.RunAt, r.RunAt)
	}
	r2, err := c.RescheduleAt(ctx, "t", j.ID, at)
	if err != nil || r2.RunAt.Before(at) {
		t.Errorf("RescheduleAt(%v) = %v, %v; want no earlier", at, r2.RunAt, err)
	}
}

// TestGeneratedID: Enqueue without an id draws a valid id, and draws again when it is taken.
func TestGeneratedID(t *testing.T) {
	t.Run("collision draws again", func(t *testing.T) {
		t.Parallel()
		c, _ := newTestClient(t, Config{})
		mustEnqueue(t, c, "t", Spec{ID: "taken-id-001"})
		draws := []string{"taken-id-001", "taken-id-001", "fresh-id-002"}
		c.newID = func() string { id := draws[0]; draws = draws[1:]; return id }
		j, err := c.Enqueue(testContext(t), "t", Spec{Body: []byte("x")})
		if err != nil || j.ID != "fresh-id-002" {
			t.Fatalf("Enqueue with colliding generated ids = %+v, %v; want the third draw", j, err)
		}
	})

	// Two Enqueue calls without an id are two jobs, however alike. When the second one's generated
	// id collides with the first's (Enqueue draws again on ErrExists for exactly that case), an
	// identical spec must not be taken for a repeat of the first call: no caller repeats a call whose
	// id the Client made, so answering the first job drops the second.
	t.Run("collision with an identical job draws again", func(t *testing.T) {
		t.Parallel()
		c, _ := newTestClient(t, Config{})
		draws := []string{"drawn-id-001", "drawn-id-001", "fresh-id-002"}
		c.newID = func() string { id := draws[0]; draws = draws[1:]; return id }
		s := Spec{Body: []byte("same body")}
		first := mustEnqueue(t, c, "t", s)
		second := mustEnqueue(t, c, "t", s)
		if second.ID == first.ID {
			t.Fatalf("two Enqueue calls without an id both answered job %q (the second's draw collided): one job was dropped", first.ID)
		}
		if st, err := c.Stats(testContext(t), "t"); err != nil || st.Ready != 2 {
			t.Fatalf("Stats = %+v, %v; want 2 ready jobs", st, err)
		}
	})

	t.Run("ids are valid", func(t *testing.T) {
		t.Parallel()
		for range 1000 {
			if id := ids.New(); ValidateID(id) != nil {
				t.Fatalf("generated id %q: %v", id, ValidateID(id))
			}
		}
	})
}

// clusterWithAShardDown returns a Client on a 3-primary Cluster whose first primary has been
// killed, and tells, for a job id of topic, whether its partition lives on the dead shard.
func clusterWithAShardDown(t *testing.T, topic string) (*Client, func(id string) bool) {
	t.Helper()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cluster.Addrs(), DialTimeout: 200 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1, MaxRedirects: 1,
	})
	t.Cleanup(func() { rdb.Close() })
	// The live shards keep serving once the cluster marks the dead one as failed.
	for _, node := range cluster.Nodes {
		if err := node.Client(t).ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c := newClientOn(t, rdb, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, topic, Spec{ID: "before", Delay: time.Hour}) // the topic exists
	n, err := c.partitions(ctx, topic, false)
	if err != nil {
		t.Fatal(err)
	}
	dead := cluster.Nodes[0]
	onDead := map[int]bool{}
	for p := range n {
		node, err := rdb.MasterForKey(ctx, c.store.Partition(topic, p).Jobs())
		if err != nil {
			t.Fatal(err)
		}
		onDead[p] = node.Options().Addr == dead.Addr
	}
	dead.Kill(t)
	return c, func(id string) bool { return onDead[keys.PartitionOf(id, n)] }
}

// A batch whose partitions' calls partly fail reports each job's own outcome: the jobs of the
// live shards are stored, those of the dead one carry its error.
func TestBatchWithAShardDownIsPartial(t *testing.T) {
	t.Parallel()
	c, onDead := clusterWithAShardDown(t, "half")
	ctx := testContext(t)
	specs := make([]Spec, 60)
	for i := range specs {
		specs[i] = Spec{ID: fmt.Sprintf("j%d", i), Delay: time.Hour}
	}
	results, err := c.EnqueueBatch(ctx, "half", specs)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	stored, failed := 0, 0
	for i, r := range results {
		id := specs[i].ID
		switch {
		case onDead(id) && r.Err == nil:
			t.Errorf("%s lives on the dead shard but was reported stored", id)
		case !onDead(id) && r.Err != nil:
			t.Errorf("%s lives on a live shard but was reported failed: %v", id, r.Err)
		case r.Err == nil:
			stored++
			if _, err := c.Get(ctx, "half", id); err != nil {
				t.Errorf("%s reported stored: Get = %v", id, err)
			}
		default:
			failed++
		}
	}
	if stored == 0 || failed == 0 {
		t.Fatalf("%d stored, %d failed: want both", stored, failed)
	}
}

// Concurrent Enqueue calls share round trips, but each sees only its own script's outcome.
func TestCoalescedEnqueuesWithAShardDown(t *testing.T) {
	t.Parallel()
	c, onDead := clusterWithAShardDown(t, "half")
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make([]error, 60)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Enqueue(ctx, "half", Spec{ID: fmt.Sprintf("j%d", i), Delay: time.Hour})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		id := fmt.Sprintf("j%d", i)
		if onDead(id) != (err != nil) {
			t.Errorf("%s: on the dead shard %v, Enqueue error %v", id, onDead(id), err)
		}
	}
}

// An enqueue retried with the same id and spec within the replay window of the job's creation
// answers the first call's job whatever became of the job since: acked, dead, cancelled. It is
// neither stored nor delivered again. Another spec, or the same one after the window, is a new
// job: the id is free once its job has ended.
func TestEnqueueRetriedAfterTheJobEnded(t *testing.T) {
	t.Parallel()
	spec := Spec{ID: "order-1", Body: []byte(`{"n":1}`), Format: FormatJSON, Priority: 2,
		Headers: map[string]string{"x-tenant": "a"}}
	ends := map[string]func(t *testing.T, c *Client){
		"acked": func(t *testing.T, c *Client) {
			j := reserveOne(t, c, "t", 0)
			if err := c.Ack(testContext(t), Lease{Topic: "t", ID: j.ID, Token: j.LeaseToken}); err != nil {
				t.Fatal(err)
			}
		},
		"dead": func(t *testing.T, c *Client) {
			j := reserveOne(t, c, "t", 0)
			if _, err := c.Nack(testContext(t), Lease{Topic: "t", ID: j.ID, Token: j.LeaseToken}, NackOptions{Dead: true}); err != nil {
				t.Fatal(err)
			}
		},
		"dead and deleted": func(t *testing.T, c *Client) {
			j := reserveOne(t, c, "t", 0)
			if _, err := c.Nack(testContext(t), Lease{Topic: "t", ID: j.ID, Token: j.LeaseToken}, NackOptions{Dead: true}); err != nil {
				t.Fatal(err)
			}
			if n, err := c.DeleteDead(testContext(t), "t", []string{j.ID}); err != nil || n != 1 {
				t.Fatalf("DeleteDead: %d, %v", n, err)
			}
		},
		"cancelled": func(t *testing.T, c *Client) {
			if err := c.Cancel(testContext(t), "t", spec.ID); err != nil {
				t.Fatal(err)
			}
		},
		"cancelled while reserved": func(t *testing.T, c *Client) {
			reserveOne(t, c, "t", 0)
			if err := c.Cancel(testContext(t), "t", spec.ID); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, Config{})
			ctx := testContext(t)
			first := mustEnqueue(t, c, "t", spec)
			end(t, c)
			before, _ := c.Get(ctx, "t", spec.ID)
			advance(c, 20*time.Second)
			again, err := c.Enqueue(ctx, "t", spec)
			if err != nil {
				t.Fatalf("the same Enqueue after the job ended = %v, want the first job", err)
			}
			if diff := cmp.Diff(first, again); diff != "" {
				t.Errorf("the retry answered another job (-first +retry):\n%s", diff)
			}
			if batch, err := c.EnqueueBatch(ctx, "t", []Spec{spec}); err != nil || batch[0].Err != nil {
				t.Errorf("the same job in a batch = %v, %v; want the first job", batch, err)
			} else if diff := cmp.Diff(first, batch[0].Job); diff != "" {
				t.Errorf("the batch answered another job (-first +retry):\n%s", diff)
			}
			if jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 10}); err != nil || len(jobs) != 0 {
				t.Errorf("after the retry a reserve got %d jobs (%v), want none: the job ran twice", len(jobs), err)
			}
			if after, _ := c.Get(ctx, "t", spec.ID); !cmp.Equal(before, after) {
				t.Errorf("the retry changed what is stored (-before +after):\n%s", cmp.Diff(before, after))
			}

			other := spec
			other.Body = []byte(`{"n":2}`)
			if before == nil {
				// Once the job is gone another job may take its id.
				j, err := c.Enqueue(ctx, "t", other)
				if err != nil || !j.CreatedAt.After(first.CreatedAt) {
					t.Fatalf("another job with the id after the end = %+v, %v; want a new job", j, err)
				}
				if got := reserveOne(t, c, "t", 0); string(got.Body) != `{"n":2}` {
					t.Errorf("delivered %q, want the new job", got.Body)
				}
			} else if _, err := c.Enqueue(ctx, "t", other); !errors.Is(err, ErrExists) {
				t.Errorf("another job with the id of a dead job = %v, want ErrExists", err)
			}
		})
	}

	t.Run("after the replay window", func(t *testing.T) {
		t.Parallel()
		c, _ := newTestClient(t, Config{})
		ctx := testContext(t)
		first := mustEnqueue(t, c, "t", spec)
		ends["acked"](t, c)
		advance(c, 31*time.Second)
		again, err := c.Enqueue(ctx, "t", spec)
		if err != nil || !again.CreatedAt.After(first.CreatedAt) {
			t.Fatalf("the same Enqueue after the window = %+v, %v; want a new job", again, err)
		}
		if got := reserveOne(t, c, "t", 0); got.ID != spec.ID {
			t.Errorf("delivered %q, want the new job", got.ID)
		}
	})

	t.Run("replays off", func(t *testing.T) {
		t.Parallel()
		c, rdb := newTestClient(t, Config{ReplayWindow: -1})
		ctx := testContext(t)
		first := mustEnqueue(t, c, "t", spec)
		ends["acked"](t, c)
		if n, err := rdb.Keys(ctx, "*ended*").Result(); err != nil || len(n) != 0 {
			t.Errorf("ended markers without a replay window: %v, %v", n, err)
		}
		advance(c, time.Second)
		again, err := c.Enqueue(ctx, "t", spec)
		if err != nil || !again.CreatedAt.After(first.CreatedAt) {
			t.Fatalf("the same Enqueue without a replay window = %+v, %v; want a new job", again, err)
		}
		if got := reserveOne(t, c, "t", 0); got.ID != spec.ID {
			t.Errorf("delivered %q, want the new job", got.ID)
		}
	})

	t.Run("a generated id leaves no marker", func(t *testing.T) {
		t.Parallel()
		c, rdb := newTestClient(t, Config{})
		ctx := testContext(t)
		mustEnqueue(t, c, "t", Spec{Body: spec.Body})
		ends["acked"](t, c)
		if n, err := rdb.Keys(ctx, "*ended*").Result(); err != nil || len(n) != 0 {
			t.Errorf("ended markers of a job whose id the Client made: %v, %v", n, err)
		}
	})
}
