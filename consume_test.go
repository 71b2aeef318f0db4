package delayq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/testwait"
)

// serverNow reads the Redis server's clock as the scripts of c see it.
func serverNow(t testing.TB, c *Client, rdb redis.UniversalClient) time.Time {
	t.Helper()
	now, err := rdb.Time(testContext(t)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.Add(time.Duration(c.store.ClockOffset()) * time.Millisecond)
}

// reservedAt is when the server leased job: its lease deadline minus the TTR it was given.
func reservedAt(j *Job, ttr time.Duration) time.Time { return j.LeaseDeadline.Add(-ttr) }

func TestNeverEarlyAndOnTime(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{RecheckInterval: time.Minute})
	ctx := testContext(t)
	const n = 200
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{ID: fmt.Sprint(i), Delay: time.Duration(200+i*5) * time.Millisecond}
	}
	if _, err := c.EnqueueBatch(ctx, "t", specs); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var late []time.Duration
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := len(late) == n
				mu.Unlock()
				if done {
					return
				}
				jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 10, Wait: 200 * time.Millisecond})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, j := range jobs {
					at := reservedAt(j, DefaultTTR)
					if at.Before(j.RunAt) {
						t.Errorf("job %s handed out at %v, %v before its due time", j.ID, at, j.RunAt.Sub(at))
					}
					late = append(late, at.Sub(j.RunAt))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(late)
	p50, p99, worst := late[n/2], late[n*99/100], late[n-1]
	t.Logf("lateness by the server clock: p50 %v, p99 %v, max %v", p50, p99, worst)
	// Without wake-ups at the due time, a 1 s recheck would make the median about 500 ms.
	if p50 > 50*time.Millisecond || worst > time.Second {
		t.Errorf("lateness p50 %v, max %v: jobs are not handed out on time", p50, worst)
	}
}

func TestNoticeWakesAWaitingConsumer(t *testing.T) {
	t.Parallel()
	// A long recheck interval: only the pub/sub notice can wake the consumer in time.
	c, rdb := newTestClient(t, Config{RecheckInterval: time.Minute})
	producer := newClientOn(t, rdb, Config{})
	ctx := testContext(t)
	mustEnqueue(t, producer, "t", Spec{ID: "later", Delay: time.Hour})
	got := make(chan *Job, 1)
	go func() {
		jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Wait: 20 * time.Second})
		if len(jobs) == 1 {
			got <- jobs[0]
		}
		close(got)
	}()
	// Let the consumer scan the empty topic and fall asleep first.
	waitSettled(t, c, "t", store.LanePull)
	start := time.Now()
	mustEnqueue(t, producer, "t", Spec{ID: "now"})
	select {
	case j := <-got:
		if j == nil || j.ID != "now" {
			t.Fatalf("got %v", j)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("woken after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting consumer was not woken by the enqueue")
	}
}

func TestPollIntervalWithoutPubSub(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{PollInterval: 20 * time.Millisecond})
	producer := newClientOn(t, rdb, Config{})
	before := commandCalls(t, rdb, "hget")
	got := make(chan []*Job, 1)
	go func() {
		jobs, _ := c.Reserve(testContext(t), "t", ReserveOptions{Wait: 5 * time.Second})
		got <- jobs
	}()
	// The consumer must be waiting when the job arrives: it has asked the registry for the
	// topic, which did not exist yet.
	testwait.For(t, 20*time.Second, "the consumer to look the topic up", func() bool { return commandCalls(t, rdb, "hget") > before })
	mustEnqueue(t, producer, "t", Spec{ID: "x", Delay: 100 * time.Millisecond})
	if jobs := <-got; len(jobs) != 1 || jobs[0].ID != "x" {
		t.Fatalf("got %v", jobs)
	}
	if n := rdb.PubSubShardNumSub(testContext(t), c.store.Partition("t", 0).Notify()).Val(); n[c.store.Partition("t", 0).Notify()] != 0 {
		t.Errorf("a polling client subscribed to notices")
	}
}

func TestStaleLeaseIsRefused(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "a", TTR: time.Second})
	first := reserveOne(t, c, "t", 0)
	for _, lease := range []string{"", "made-up", first.LeaseToken + "x"} {
		if err := c.Ack(ctx, Lease{Topic: "t", ID: "a", Token: lease}); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Ack(%q) = %v, want ErrLeaseLost", lease, err)
		}
	}
	advance(c, 2*time.Second) // the lease expires
	if err := c.Ack(ctx, Lease{Topic: "t", ID: "a", Token: first.LeaseToken}); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Ack after the deadline = %v, want ErrLeaseLost", err)
	}
	if _, err := c.Touch(ctx, Lease{Topic: "t", ID: "a", Token: first.LeaseToken}, 0); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Touch after the deadline = %v, want ErrLeaseLost", err)
	}
	advance(c, 15*time.Second) // the first retry's backoff step
	second := reserveOne(t, c, "t", 0)
	if second.Attempts != 2 || second.LastError != "ttr exceeded" || second.LeaseToken == first.LeaseToken {
		t.Fatalf("redelivery = %+v, want attempt 2 with error 'ttr exceeded' and a new lease", second)
	}
	for _, op := range []func(string) error{
		func(l string) error { return c.Ack(ctx, Lease{Topic: "t", ID: "a", Token: l}) },
		func(l string) error {
			_, err := c.Nack(ctx, Lease{Topic: "t", ID: "a", Token: l}, NackOptions{})
			return err
		},
		func(l string) error { _, err := c.Touch(ctx, Lease{Topic: "t", ID: "a", Token: l}, 0); return err },
		func(l string) error {
			_, err := c.Release(ctx, Lease{Topic: "t", ID: "a", Token: l}, ReleaseOptions{})
			return err
		},
	} {
		if err := op(first.LeaseToken); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("the old lease was accepted: %v", err)
		}
	}
	if err := c.Ack(ctx, Lease{Topic: "t", ID: "a", Token: second.LeaseToken}); err != nil {
		t.Fatalf("Ack with the current lease: %v", err)
	}
}

func TestTouchExtendsTheLease(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "a", TTR: time.Second})
	j := reserveOne(t, c, "t", 0)
	advance(c, 800*time.Millisecond)
	deadline, err := c.Touch(ctx, Lease{Topic: "t", ID: "a", Token: j.LeaseToken}, 5*time.Second)
	if err != nil || deadline.Sub(j.LeaseDeadline) < 4*time.Second {
		t.Fatalf("Touch = %v, %v; old deadline %v", deadline, err, j.LeaseDeadline)
	}
	advance(c, 2*time.Second) // past the first deadline, within the touched one
	if jobs, _ := c.Reserve(ctx, "t", ReserveOptions{}); len(jobs) != 0 {
		t.Fatalf("a touched job was redelivered")
	}
	if err := c.Ack(ctx, Lease{Topic: "t", ID: "a", Token: j.LeaseToken}); err != nil {
		t.Fatalf("Ack after Touch: %v", err)
	}
}

func TestRetriesFollowTheBackoffThenDead(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "a", MaxRetries: 3, Backoff: []time.Duration{time.Second, 5 * time.Second}})
	for attempt, step := range []time.Duration{time.Second, 5 * time.Second, 5 * time.Second} {
		j := reserveOne(t, c, "t", 0)
		if j.Attempts != attempt+1 {
			t.Fatalf("attempt %d: Attempts = %d", attempt+1, j.Attempts)
		}
		before := serverNow(t, c, rdb)
		if dead, err := c.Nack(ctx, Lease{Topic: "t", ID: "a", Token: j.LeaseToken}, NackOptions{Error: fmt.Sprint("boom ", attempt)}); err != nil || dead {
			t.Fatalf("Nack = %v, %v", dead, err)
		}
		after := serverNow(t, c, rdb)
		got, _ := c.Get(ctx, "t", "a")
		if got.State != StateDelayed || got.RunAt.Before(before.Add(step).Truncate(time.Millisecond)) || got.RunAt.After(after.Add(step)) {
			t.Fatalf("after attempt %d: %s due %v, want delayed due %v after the nack", attempt+1, got.State, got.RunAt.Sub(before), step)
		}
		if jobs, _ := c.Reserve(ctx, "t", ReserveOptions{}); len(jobs) != 0 {
			t.Fatalf("retry %d handed out before its backoff step", attempt+1)
		}
		advance(c, step)
	}
	j := reserveOne(t, c, "t", 0)
	if dead, err := c.Nack(ctx, Lease{Topic: "t", ID: "a", Token: j.LeaseToken}, NackOptions{Error: "last"}); err != nil || !dead {
		t.Fatalf("the last Nack = %v, %v; want dead", dead, err)
	}
	got, _ := c.Get(ctx, "t", "a")
	if got.State != StateDead || got.LastError != "last" || got.Attempts != 4 || got.DiedAt.IsZero() {
		t.Fatalf("after the last retry: %+v", got)
	}
}

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "a", MaxRetries: 20})
	DefaultBackoff()[0] = time.Hour // a caller changing its copy changes nothing
	steps := DefaultBackoff()
	steps = append(steps, steps[len(steps)-1])
	for i, step := range steps {
		j := reserveOne(t, c, "t", 0)
		before := serverNow(t, c, rdb)
		if _, err := c.Nack(ctx, Lease{Topic: "t", ID: "a", Token: j.LeaseToken}, NackOptions{}); err != nil {
			t.Fatal(err)
		}
		got, _ := c.Get(ctx, "t", "a")
		if d := got.RunAt.Sub(before); d < step-time.Millisecond || d > step+time.Second {
			t.Fatalf("retry %d due after %v, want %v", i+1, d, step)
		}
		advance(c, step)
	}
}

func TestNackDelayAndDead(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "a"})
	j := reserveOne(t, c, "t", 0)
	zero := time.Duration(0)
	if _, err := c.Nack(ctx, Lease{Topic: "t", ID: "a", Token: j.LeaseToken}, NackOptions{Delay: &zero}); err != nil {
		t.Fatal(err)
	}
	j = reserveOne(t, c, "t", 0) // due again at once, not after 15 s
	if dead, err := c.Nack(ctx, Lease{Topic: "t", ID: "a", Token: j.LeaseToken}, NackOptions{Dead: true, Error: "poison"}); err != nil || !dead {
		t.Fatalf("Nack(dead) = %v, %v", dead, err)
	}
	if got, _ := c.Get(ctx, "t", "a"); got.State != StateDead || got.Attempts != 2 {
		t.Fatalf("got %+v", got)
	}
}

func TestCancelIsFinal(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "delayed", Delay: time.Second})
	mustEnqueue(t, c, "t", Spec{ID: "reserved"})
	r := reserveOne(t, c, "t", 0)
	for _, id := range []string{"delayed", "reserved"} {
		if err := c.Cancel(ctx, "t", id); err != nil {
			t.Fatalf("Cancel(%s): %v", id, err)
		}
		// Within the replay window a second cancel is taken for a retry of the first, whose
		// answer may have been lost: it answers as the first did, and deletes nothing.
		if err := c.Cancel(ctx, "t", id); err != nil {
			t.Errorf("second Cancel(%s) within the replay window = %v, want nil", id, err)
		}
	}
	if err := c.Ack(ctx, Lease{Topic: "t", ID: "reserved", Token: r.LeaseToken}); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Ack after Cancel = %v, want ErrLeaseLost", err)
	}
	advance(c, time.Hour)
	for _, id := range []string{"delayed", "reserved"} {
		if err := c.Cancel(ctx, "t", id); !errors.Is(err, ErrNotFound) {
			t.Errorf("second Cancel(%s) = %v, want ErrNotFound", id, err)
		}
	}
	if jobs, _ := c.Reserve(ctx, "t", ReserveOptions{Max: 10}); len(jobs) != 0 {
		t.Errorf("cancelled jobs handed out: %v", jobs)
	}
	if s, _ := c.Stats(ctx, "t"); *s != (TopicStats{Name: "t", Partitions: 1}) {
		t.Errorf("stats after cancelling everything: %+v", s)
	}
}

// A cancel retried within the replay window of the job's creation, its first answer lost,
// answers success again when the job was cancelled, and says what became of it when it ended
// otherwise; an id never seen, or a job gone longer than the window, is ErrNotFound.
func TestCancelRetried(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "cancelled", Delay: time.Minute})
	mustEnqueue(t, c, "t", Spec{ID: "acked"})
	j := reserveOne(t, c, "t", 0)
	if err := c.Ack(ctx, Lease{Topic: "t", ID: j.ID, Token: j.LeaseToken}); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, c, "t", Spec{ID: "dead"})
	j = reserveOne(t, c, "t", 0)
	if _, err := c.Nack(ctx, Lease{Topic: "t", ID: j.ID, Token: j.LeaseToken}, NackOptions{Dead: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteDead(ctx, "t", []string{"dead"}); err != nil {
		t.Fatal(err)
	}
	generated := mustEnqueue(t, c, "t", Spec{Delay: time.Minute}).ID // no fingerprint
	for _, id := range []string{"cancelled", generated} {
		if err := c.Cancel(ctx, "t", id); err != nil {
			t.Fatal(err)
		}
	}
	advance(c, 20*time.Second)
	for range 2 {
		for _, id := range []string{"cancelled", generated} {
			if err := c.Cancel(ctx, "t", id); err != nil {
				t.Errorf("Cancel(%s) retried = %v, want nil", id, err)
			}
		}
	}
	for _, outcome := range []string{"acked", "dead"} {
		err := c.Cancel(ctx, "t", outcome)
		var ended *EndedError
		if !errors.As(err, &ended) || ended.Outcome != outcome || ended.ID != outcome || ended.EndedAt.IsZero() {
			t.Errorf("Cancel of a job %s = %v, want an EndedError saying so", outcome, err)
		}
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("Cancel of a job %s = %v, want it to match ErrNotFound", outcome, err)
		}
	}
	var nf *NotFoundError
	if err := c.Cancel(ctx, "t", "never"); !errors.As(err, &nf) {
		t.Errorf("Cancel of an id never seen = %v, want a NotFoundError", err)
	}
	advance(c, 11*time.Second)
	for _, id := range []string{"cancelled", generated, "acked", "dead"} {
		if err := c.Cancel(ctx, "t", id); !errors.As(err, &nf) {
			t.Errorf("Cancel(%s) after the replay window = %v, want a NotFoundError", id, err)
		}
	}
}

// TestCancelRacingConsumers cancels jobs while consumers take them: a job whose cancel
// succeeded is never handed out by a reserve that started after it, and its lease, if it had
// one, can no longer be acked.
func TestCancelRacingConsumers(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	const n = 1000
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{ID: fmt.Sprint(i)}
	}
	if _, err := c.EnqueueBatch(ctx, "t", specs); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	cancelledAt := map[string]time.Time{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := n - 1; i >= 0; i-- {
			if err := c.Cancel(ctx, "t", fmt.Sprint(i)); err == nil {
				mu.Lock()
				cancelledAt[fmt.Sprint(i)] = time.Now()
				mu.Unlock()
			}
		}
	}()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				start := time.Now()
				jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 5})
				if err != nil || len(jobs) == 0 {
					return
				}
				for _, j := range jobs {
					mu.Lock()
					at, cancelled := cancelledAt[j.ID]
					mu.Unlock()
					if cancelled && start.After(at) {
						t.Errorf("job %s handed out by a reserve that began after its cancel", j.ID)
					}
					err := c.Ack(ctx, Lease{Topic: "t", ID: j.ID, Token: j.LeaseToken})
					mu.Lock()
					_, cancelled = cancelledAt[j.ID]
					mu.Unlock()
					if err == nil && cancelled {
						t.Errorf("job %s acked after its cancel succeeded", j.ID)
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestReleaseMakesDueAtOnceWithoutCountingTheAttempt(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "a"})
	j := reserveOne(t, c, "t", 0)
	if _, err := c.Release(ctx, Lease{Topic: "t", ID: "a", Token: j.LeaseToken}, ReleaseOptions{}); err != nil {
		t.Fatal(err)
	}
	again := reserveOne(t, c, "t", 0)
	if again.Attempts != 1 {
		t.Errorf("Attempts after a release = %d, want 1", again.Attempts)
	}
}

// Release with a delay or a run_at is a snooze: the job comes back then with the same attempts
// and one more snooze, in whichever partition it lives; past MaxSnoozes it goes dead instead.
func TestReleaseWithADelaySnoozes(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 4})
	ctx := testContext(t)
	ids := []string{"a", "b", "c", "d", "e", "f"}
	for _, id := range ids {
		if j := mustEnqueue(t, c, "t", Spec{ID: id, MaxSnoozes: 1}); j.MaxSnoozes != 1 || j.Snoozes != 0 {
			t.Fatalf("enqueued %s: max snoozes %d, snoozes %d; want 1 and 0", id, j.MaxSnoozes, j.Snoozes)
		}
	}
	jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: len(ids)})
	if err != nil || len(jobs) != len(ids) {
		t.Fatalf("reserve: %d jobs, %v", len(jobs), err)
	}
	hour := time.Hour
	for i, j := range jobs {
		o := ReleaseOptions{Delay: &hour}
		if i%2 == 1 {
			o = ReleaseOptions{RunAt: j.LeasedAt.Add(hour)}
		}
		if dead, err := c.Release(ctx, j.Lease(), o); err != nil || dead {
			t.Fatalf("release %s: dead %v, %v", j.ID, dead, err)
		}
		g, err := c.Get(ctx, "t", j.ID)
		if err != nil || g.State != StateDelayed || g.Snoozes != 1 || g.Attempts != 0 || g.RunAt.Sub(j.LeasedAt) < hour {
			t.Fatalf("released %s: %+v, %v; want delayed an hour, 1 snooze, no attempt", j.ID, g, err)
		}
	}
	if got, _ := c.Reserve(ctx, "t", ReserveOptions{Max: len(ids)}); len(got) != 0 {
		t.Fatalf("%d snoozed jobs came back before their time", len(got))
	}
	advance(c, hour+time.Second)
	again, err := c.Reserve(ctx, "t", ReserveOptions{Max: len(ids)})
	if err != nil || len(again) != len(ids) {
		t.Fatalf("after the hour: %d jobs, %v; want all %d", len(again), err, len(ids))
	}
	for _, j := range again {
		if j.Attempts != 1 || j.Snoozes != 1 {
			t.Errorf("%s back: attempts %d, snoozes %d; want 1 and 1", j.ID, j.Attempts, j.Snoozes)
		}
		dead, err := c.Release(ctx, j.Lease(), ReleaseOptions{Delay: &hour})
		if err != nil || !dead {
			t.Fatalf("second snooze of %s with MaxSnoozes 1: dead %v, %v; want dead", j.ID, dead, err)
		}
		g, _ := c.Get(ctx, "t", j.ID)
		if g.State != StateDead || g.LastError != "snoozed more than max_snoozes (1) times" {
			t.Errorf("%s: state %s, last error %q; want dead with the reason", j.ID, g.State, g.LastError)
		}
	}
}

func TestReleaseRefusesADelayAndARunAt(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "a"})
	j := reserveOne(t, c, "t", 0)
	d := time.Second
	var inv *InvalidError
	if _, err := c.Release(ctx, j.Lease(), ReleaseOptions{Delay: &d, RunAt: time.Now()}); !errors.As(err, &inv) || inv.Field != "run_at" {
		t.Fatalf("a delay and a run_at: %v; want an InvalidError on run_at", err)
	}
	neg := -time.Second
	if _, err := c.Release(ctx, j.Lease(), ReleaseOptions{Delay: &neg}); !errors.As(err, &inv) || inv.Field != "delay" {
		t.Fatalf("a negative delay: %v; want an InvalidError on delay", err)
	}
}

// TestReserveOrder: Reserve hands out jobs by priority, then due time, then id, across
// partitions and shards, in one call and across calls.
func TestReserveOrder(t *testing.T) {
	t.Run("priority then due time", func(t *testing.T) {
		t.Parallel()
		c, _ := newTestClient(t, Config{Partitions: 1})
		ctx := testContext(t)
		base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
		specs := []Spec{
			{ID: "p0-late", RunAt: base.Add(3 * time.Second)},
			{ID: "p5-late", Priority: 5, RunAt: base.Add(2 * time.Second)},
			{ID: "p0-early", RunAt: base},
			{ID: "p-3", Priority: -3, RunAt: base.Add(-time.Hour)},
			{ID: "p5-early", Priority: 5, RunAt: base.Add(time.Second)},
			{ID: "p1000", Priority: 1000, RunAt: base.Add(time.Minute)},
			{ID: "p-1000", Priority: -1000, RunAt: base.Add(-2 * time.Hour)},
			{ID: "future", Priority: 1000, Delay: time.Hour},
		}
		if _, err := c.EnqueueBatch(ctx, "t", specs); err != nil {
			t.Fatal(err)
		}
		var order []string
		for {
			jobs, err := c.Reserve(ctx, "t", ReserveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) == 0 {
				break
			}
			order = append(order, jobs[0].ID)
		}
		want := []string{"p1000", "p5-early", "p5-late", "p0-early", "p0-late", "p-3", "p-1000"}
		if !slices.Equal(order, want) {
			t.Errorf("order %v, want %v", order, want)
		}
	})

	// One reserve over several partitions hands out the best jobs of all of them, in priority,
	// then due-time order: three due jobs with priorities 0, 5 and 1, each in a partition of its
	// own, come back as 5, 1, 0 — also one at a time — whichever partition a call looks at first.
	t.Run("across partitions", func(t *testing.T) {
		t.Parallel()
		for _, max := range []int{3, 1} {
			t.Run(fmt.Sprintf("max %d", max), func(t *testing.T) {
				t.Parallel()
				c, _ := newTestClient(t, Config{Partitions: 4})
				for round := range 4 {
					ids := idsInPartitions(t, fmt.Sprintf("r%d", round), 4, 0, 1, 2)
					for i, prio := range []int{0, 5, 1} {
						mustEnqueue(t, c, "t", Spec{ID: ids[i], Priority: prio})
					}
					want := ids[1] + " " + ids[2] + " " + ids[0]
					got := ""
					for len(got) < len(want) {
						got = strings.TrimSpace(got + " " + reservedOrder(t, c, "t", max))
					}
					if got != want {
						t.Fatalf("round %d: reserved %q, want %q (priorities 5, 1, 0)", round, got, want)
					}
				}
			})
		}
	})

	// Within a priority, the earliest due job of any partition comes first.
	t.Run("by due time across partitions", func(t *testing.T) {
		t.Parallel()
		c, _ := newTestClient(t, Config{Partitions: 4})
		ids := idsInPartitions(t, "d", 4, 3, 2, 1, 0)
		base := time.Now().Add(-time.Hour)
		// Due 4, 1, 3 and 2 minutes after base, in partitions 3, 2, 1 and 0.
		for i, m := range []int{4, 1, 3, 2} {
			mustEnqueue(t, c, "t", Spec{ID: ids[i], RunAt: base.Add(time.Duration(m) * time.Minute)})
		}
		want := strings.Join([]string{ids[1], ids[3], ids[2], ids[0]}, " ")
		if got := reservedOrder(t, c, "t", 4); got != want {
			t.Fatalf("reserved %q, want %q (earliest due first)", got, want)
		}
	})

	// On a Cluster the partitions live on different shards; the order holds across them.
	t.Run("across cluster shards", func(t *testing.T) {
		t.Parallel()
		cluster := redistest.NewCluster(t, 3, 0)
		c := newClientOn(t, cluster.Client(t), Config{})
		n := 16
		ids := idsInPartitions(t, "s", n, 0, 5, 10, 15)
		for i, prio := range []int{1, 3, 2, 4} {
			mustEnqueue(t, c, "t", Spec{ID: ids[i], Priority: prio})
		}
		want := strings.Join([]string{ids[3], ids[1], ids[2], ids[0]}, " ")
		if got := reservedOrder(t, c, "t", 4); got != want {
			t.Fatalf("reserved %q, want %q (priorities 4, 3, 2, 1)", got, want)
		}
	})

	// On a topic of eight partitions,
	// Reserve with Max > 1 hands out ordinary jobs by priority, then due time, across calls and
	// within each, whatever partition each job is in.
	t.Run("batches over partitions", func(t *testing.T) {
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
	})

	// Delayed jobs that come due together are
	// promoted by the look at the partitions' heads and handed out by priority, then due time.
	t.Run("batches over partitions after promotion", func(t *testing.T) {
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
	})

	// A job released (at once) keeps its rank
	// among the others over partitions.
	t.Run("batches over partitions after release", func(t *testing.T) {
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
			if _, err := c.Release(ctx, j.Lease(), ReleaseOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		checkRanked(t, drainInBatches(t, c, "rel", 5), n)
	})
}

func TestStats(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 3})
	ctx := testContext(t)
	past := time.Now().Add(-10 * time.Second)
	mustEnqueue(t, c, "t", Spec{ID: "ready-old", RunAt: past, Priority: 3})
	mustEnqueue(t, c, "t", Spec{ID: "ready", Priority: -2})
	mustEnqueue(t, c, "t", Spec{ID: "delayed", Delay: time.Hour})
	mustEnqueue(t, c, "t", Spec{ID: "res"})
	mustEnqueue(t, c, "t", Spec{ID: "dead"})
	// Reserve two (the high priority "ready-old" and one more), ack one, bury the other...
	var leased []*Job
	for len(leased) < 2 {
		jobs, _ := c.Reserve(ctx, "t", ReserveOptions{})
		leased = append(leased, jobs...)
	}
	s, err := c.Stats(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if s.Delayed != 1 || s.Ready != 2 || s.Reserved != 2 || s.Dead != 0 {
		t.Errorf("stats %+v", s)
	}
	for _, j := range leased {
		c.Nack(ctx, Lease{Topic: "t", ID: j.ID, Token: j.LeaseToken}, NackOptions{Dead: true})
	}
	s, _ = c.Stats(ctx, "t")
	if s.Ready != 2 || s.Reserved != 0 || s.Dead != 2 || s.OldestReady <= 0 || s.NextRunAt.IsZero() {
		t.Errorf("stats %+v", s)
	}
	if _, err := c.Stats(ctx, "unknown"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stats(unknown) = %v", err)
	}
	all, err := c.Topics(ctx)
	if len(all) == 1 {
		all[0].OldestReady = s.OldestReady // time passes between the two reads
	}
	if err != nil || len(all) != 1 || all[0] != *s {
		t.Errorf("Topics = %+v, %v", all, err)
	}
}

func TestScriptCacheFlushIsInvisible(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{Partitions: 4})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "a"})
	rdb.ScriptFlush(ctx)
	mustEnqueue(t, c, "t", Spec{ID: "b"})
	rdb.ScriptFlush(ctx)
	specs := make([]Spec, 20)
	for i := range specs {
		specs[i].ID = fmt.Sprint("batch-", i)
	}
	res, err := c.EnqueueBatch(ctx, "t", specs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	rdb.ScriptFlush(ctx)
	if s, err := c.Stats(ctx, "t"); err != nil || s.Ready != 22 {
		t.Fatalf("Stats after SCRIPT FLUSH = %+v, %v", s, err)
	}
}

func TestOneSubscriptionForEveryTopicAndLane(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{Partitions: 2, RecheckInterval: time.Minute})
	ctx := testContext(t)
	for _, topic := range []string{"a", "b", "c"} {
		mustEnqueue(t, c, topic, Spec{ID: "later", Delay: time.Hour})
		for _, push := range []bool{false, true} {
			if _, err := c.Reserve(ctx, topic, ReserveOptions{push: push}); err != nil {
				t.Fatal(err)
			}
		}
	}
	testwait.For(t, 20*time.Second, "the subscription to topic c's partition 1", func() bool {
		n := rdb.PubSubShardNumSub(ctx, c.store.Partition("c", 1).Notify()).Val()
		return n[c.store.Partition("c", 1).Notify()] == 1
	})
	clients, err := rdb.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(clients, "flags=P"); n != 1 {
		t.Errorf("%d pub/sub connections for 3 topics × 2 lanes, want 1:\n%s", n, clients)
	}
	// And a notice still reaches both lanes' waiters: a pull job wakes the pull consumer.
	got := make(chan []*Job, 1)
	go func() {
		jobs, _ := c.Reserve(ctx, "b", ReserveOptions{Wait: 5 * time.Second})
		got <- jobs
	}()
	waitSettled(t, c, "b", store.LanePull)
	mustEnqueue(t, newClientOn(t, rdb, Config{}), "b", Spec{ID: "x"})
	if jobs := <-got; len(jobs) != 1 || jobs[0].ID != "x" {
		t.Fatalf("got %v", jobs)
	}
}

// A bulk limit above what one Lua unpack can take (a few thousand values) still moves the whole
// bound in one reserve call.
func TestReserveWithALargeBulkLimit(t *testing.T) {
	c, _ := newTestClient(t, Config{BulkLimit: 20000})
	ctx := testContext(t)
	const due = 9000
	for i := 0; i < due; i += 1000 {
		specs := make([]Spec, 1000)
		for k := range specs {
			specs[k] = Spec{Body: []byte("x")}
		}
		if _, err := c.EnqueueBatch(ctx, "big", specs); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := c.Reserve(ctx, "big", ReserveOptions{Max: 1000})
	if err != nil || len(jobs) != 1000 {
		t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
	}
	s, err := c.Stats(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if s.Delayed != 0 || s.Ready != due-1000 || s.Reserved != 1000 {
		t.Fatalf("stats after one reserve: %+v", s)
	}
	for _, j := range jobs {
		if err := c.Ack(ctx, Lease{Topic: "big", ID: j.ID, Token: j.LeaseToken}); err != nil {
			t.Fatal(err)
		}
	}
}

// Acking one lease twice in the same round trip acks it once, and both answer as an ack does.
func TestAckTwiceInOneCall(t *testing.T) {
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "t", Spec{ID: "j"})
	j := reserveOne(t, c, "t", 0)
	part := c.store.Partition("t", 0)
	res, errs := c.store.AckMany(ctx, []keys.Partition{part}, [][]store.Lease{{{ID: "j", Token: j.LeaseToken}, {ID: "j", Token: j.LeaseToken}}})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if res[0][0] != nil || res[0][1] != nil {
		t.Fatalf("acks: %v", res[0])
	}
	if _, err := c.Get(ctx, "t", "j"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after ack: %v", err)
	}
}

// Asking about topics that do not exist leaves nothing behind in the Client: reserves, long
// polls and reads of made-up names used to keep a state (and a wake-up target) per name.
func TestMadeUpTopicsCostNoMemory(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, "real", Spec{ID: "a", Delay: time.Hour})
	if _, err := c.Reserve(ctx, "real", ReserveOptions{}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	before := len(c.topics)
	c.mu.Unlock()
	targets := c.hub.Targets()
	for i := range 200 {
		name := fmt.Sprint("made-up-", i)
		wait := time.Duration(0)
		if i%20 == 0 {
			wait = 20 * time.Millisecond
		}
		if jobs, err := c.Reserve(ctx, name, ReserveOptions{Wait: wait}); err != nil || len(jobs) != 0 {
			t.Fatalf("Reserve(%s) = %d jobs, %v", name, len(jobs), err)
		}
		if _, err := c.Get(ctx, name, "x"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%s) = %v, want ErrNotFound", name, err)
		}
	}
	c.mu.Lock()
	after := len(c.topics)
	c.mu.Unlock()
	if after != before || c.hub.Targets() != targets {
		t.Errorf("topic states %d → %d, wake-up targets %d → %d; want both unchanged", before, after, targets, c.hub.Targets())
	}
}

// A lease left to expire hands its job out again to a consumer that is waiting, even when the
// consumer's periodic recheck looks at the partition in between: the recheck used to see no
// delayed job and forget the lease deadline, and the job stayed reserved until some other
// event (a new job, a notice) made a consumer ask the partition again.
func TestExpiredLeaseReachesAWaitingConsumerAcrossRechecks(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{RecheckInterval: 50 * time.Millisecond})
	ctx := testContext(t)
	// Two leases: the second is not the earliest, so no notice announces its deadline.
	mustEnqueue(t, c, "t", Spec{ID: "first", TTR: time.Minute})
	mustEnqueue(t, c, "t", Spec{ID: "left", TTR: 600 * time.Millisecond, Backoff: []time.Duration{0}})
	if jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 2}); err != nil || len(jobs) != 2 {
		t.Fatalf("Reserve = %d jobs, %v", len(jobs), err)
	}
	start := time.Now()
	jobs, err := c.Reserve(ctx, "t", ReserveOptions{Wait: 10 * time.Second})
	if err != nil || len(jobs) != 1 || jobs[0].ID != "left" {
		t.Fatalf("waiting Reserve = %v, %v; want the job whose lease expired", jobs, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the expired lease's job came %v after the wait began, want about its 600ms TTR", took)
	}
}

// idsInPartitions returns one id per wanted partition of an n-partition topic.
func idsInPartitions(t *testing.T, prefix string, n int, wanted ...int) []string {
	t.Helper()
	out := make([]string, len(wanted))
	for k, p := range wanted {
		for i := 0; out[k] == ""; i++ {
			id := fmt.Sprintf("%s-%d", prefix, i)
			if keys.PartitionOf(id, n) == p && !containsID(out, id) {
				out[k] = id
			}
		}
	}
	return out
}

func containsID(ids []string, id string) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

// reservedOrder reserves up to max jobs at once and returns their ids in the order given.
func reservedOrder(t *testing.T, c *Client, topic string, max int) string {
	t.Helper()
	jobs, err := c.Reserve(testContext(t), topic, ReserveOptions{Max: max})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return strings.Join(ids, " ")
}

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

// A Reserve whose context ends while its script waits in a paused Redis (SIGSTOP) leases
// nothing to nobody: whether the script runs before or after the Client gives up, the job ends
// up ready again with no attempt counted, and Reserve answers ctx's error.
func TestReserveEndedMidCallPutsJobsBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// honour makes go-redis end the call at ctx's deadline (the reply is then lost);
		// otherwise it reads the reply once Redis runs again, after ctx has ended.
		honour bool
		end    func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"cancelled", false, context.WithCancel},
		{"deadline", true, func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 150*time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Standalone(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: tc.honour})
			t.Cleanup(func() { rdb.Close() })
			c := newClientOn(t, rdb, Config{})
			mustEnqueue(t, c, "t", Spec{ID: "later", Delay: time.Hour})
			if jobs, err := c.Reserve(testContext(t), "t", ReserveOptions{}); err != nil || len(jobs) != 0 {
				t.Fatalf("first reserve: %v, %v", jobs, err)
			}
			mustEnqueue(t, c, "t", Spec{ID: "a", NoRetries: true})

			srv.Stop(t)
			ctx, cancel := tc.end(testContext(t))
			defer cancel()
			type result struct {
				jobs []*Job
				err  error
			}
			done := make(chan result, 1)
			go func() {
				jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 5})
				done <- result{jobs, err}
			}()
			// The call must be in flight when ctx ends: wait until its bytes wait in the
			// paused server's receive queue.
			testwait.For(t, 20*time.Second, "the reserve to reach the paused server", func() bool { return queuedFor(t, srv.Addr) > 0 })
			cancel()
			srv.Cont(t)
			r := <-done
			if len(r.jobs) != 0 || !errors.Is(r.err, ctx.Err()) {
				t.Fatalf("Reserve = %d jobs, %v; want none and %v", len(r.jobs), r.err, ctx.Err())
			}
			testwait.For(t, 20*time.Second, "the abandoned job to be ready again with no attempt counted", func() bool {
				j, err := c.Get(testContext(t), "t", "a")
				return err == nil && j.State == StateReady && j.Attempts == 0
			})
			j := reserveOne(t, c, "t", 0)
			if j.ID != "a" || j.Attempts != 1 {
				t.Fatalf("next reserve: %s attempt %d", j.ID, j.Attempts)
			}
		})
	}
}

// queuedFor returns how many bytes wait, unread, in the receive queues of the loopback TCP
// connections the server at addr ("127.0.0.1:port") accepted, from /proc/net/tcp.
func queuedFor(t testing.TB, addr string) int64 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	local := fmt.Sprintf("0100007F:%04X", p)
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(string(data), "\n")[1:] {
		// sl local_address rem_address st tx_queue:rx_queue ...
		f := strings.Fields(line)
		if len(f) < 5 || f[1] != local {
			continue
		}
		_, rx, _ := strings.Cut(f[4], ":")
		v, err := strconv.ParseInt(rx, 16, 64)
		if err != nil {
			t.Fatalf("/proc/net/tcp: %q", line)
		}
		n += v
	}
	return n
}

// Over maxmemory (noeviction), consumers still drain: a reserve that has to promote due jobs
// must not be refused, or a full Redis could never empty.
func TestReserveOverMaxMemory(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	rdb := redistest.Standalone(t, redistest.WithArgs("--maxmemory-policy", "noeviction")).Client(t)
	c := newClientOn(t, rdb, Config{})
	mustEnqueue(t, c, "full", Spec{ID: "a", Delay: time.Minute})
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, "full", Spec{ID: "b"}); err == nil {
		t.Fatal("Enqueue over maxmemory succeeded; the test needs Redis to be full")
	}
	advance(c, time.Minute)
	// A consumer that starts now must be able to register with the known topic, too.
	c2 := newClientOn(t, rdb, Config{})
	c2.store.SetClockOffset(c.store.ClockOffset())
	j := reserveOne(t, c2, "full", 0)
	if err := c2.Ack(ctx, Lease{Topic: "full", ID: j.ID, Token: j.LeaseToken}); err != nil {
		t.Fatalf("Ack over maxmemory: %v", err)
	}
}

// Over maxmemory, a running job's lease can still be renewed.
func TestTouchOverMaxMemory(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	rdb := redistest.Standalone(t, redistest.WithArgs("--maxmemory-policy", "noeviction")).Client(t)
	c := newClientOn(t, rdb, Config{})
	mustEnqueue(t, c, "full", Spec{ID: "a"})
	j := reserveOne(t, c, "full", 0)
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, "full", Spec{ID: "b"}); err == nil {
		t.Fatal("Enqueue over maxmemory succeeded; the test needs Redis to be full")
	}
	if _, err := c.Touch(ctx, Lease{Topic: "full", ID: "a", Token: j.LeaseToken}, time.Minute); err != nil {
		t.Fatalf("Touch over maxmemory: %v", err)
	}
}
