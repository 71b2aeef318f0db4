package delayq

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/testwait"
)

// expiryBound is how long after its deadline a test lets a lease take to expire: far below
// the keeper's recheck (30 s at the default recheck interval), so only the deadline's notice
// can have moved the job on.
const expiryBound = 2 * time.Second

// movedOn waits until job id of topic, read through c, is no longer reserved, and returns it.
func movedOn(t *testing.T, c *Client, topic, id string) *Job {
	t.Helper()
	var j *Job
	testwait.For(t, 10*time.Second, "the expired lease's job to move on", func() bool {
		var err error
		if j, err = c.Get(testContext(t), topic, id); err != nil {
			t.Fatalf("Get: %v", err)
		}
		return j.State != StateReserved
	})
	return j
}

// A lease expires at its deadline although nobody consumes its topic any more: a Client that
// expires every topic's leases moves the job on, retried after its backoff from the deadline.
func TestLeaseExpiresAtItsDeadlineWithNobodyConsuming(t *testing.T) {
	t.Parallel()
	consumer, rdb := newTestClient(t, Config{})
	mustEnqueue(t, consumer, "abandoned", Spec{ID: "a", TTR: 300 * time.Millisecond, Backoff: []time.Duration{time.Hour}})
	keeper := newClientOn(t, rdb, Config{ExpireAllLeases: true})
	observer := newClientOn(t, rdb, Config{})

	leased := reserveOne(t, consumer, "abandoned", 0)
	consumer.Close() // the consumer is gone: nobody reserves or peeks on the topic again
	deadline := leased.LeaseDeadline

	j := movedOn(t, observer, "abandoned", "a")
	if late := time.Since(deadline); late > expiryBound {
		t.Fatalf("the lease expired %v after its deadline; want within %v", late, expiryBound)
	}
	if j.State != StateDelayed || j.Attempts != 1 || j.LastError != "ttr exceeded" {
		t.Fatalf("after its lease expired: state %s, %d attempts, last error %q; want delayed, 1, ttr exceeded", j.State, j.Attempts, j.LastError)
	}
	if want := deadline.Add(time.Hour); !j.RunAt.Equal(want) {
		t.Fatalf("retry due at %v; want the deadline plus the backoff, %v", j.RunAt, want)
	}
	s, err := observer.Stats(testContext(t), "abandoned")
	if err != nil {
		t.Fatal(err)
	}
	if s.Reserved != 0 || s.Delayed != 1 || s.LeasesExpired != 1 {
		t.Fatalf("stats after the expiry: %d reserved, %d delayed, %d leases expired; want 0, 1, 1", s.Reserved, s.Delayed, s.LeasesExpired)
	}
	_ = keeper
}

// A job whose lease expires on its last attempt is dead at its deadline, not at some later
// look.
func TestLeaseExpiryOnTheLastAttemptKillsTheJobAtItsDeadline(t *testing.T) {
	t.Parallel()
	consumer, rdb := newTestClient(t, Config{})
	mustEnqueue(t, consumer, "last", Spec{ID: "a", TTR: 200 * time.Millisecond, NoRetries: true})
	newClientOn(t, rdb, Config{ExpireAllLeases: true})
	leased := reserveOne(t, consumer, "last", 0)
	consumer.Close()

	j := movedOn(t, newClientOn(t, rdb, Config{}), "last", "a")
	if j.State != StateDead || !j.DiedAt.Equal(leased.LeaseDeadline) {
		t.Fatalf("state %s, died at %v; want dead at the lease deadline %v", j.State, j.DiedAt, leased.LeaseDeadline)
	}
}

// The Client that reserved a job expires its lease at the deadline by itself, although it
// never reserves again.
func TestConsumerExpiresItsLeasesWithoutReservingAgain(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{})
	mustEnqueue(t, c, "held", Spec{ID: "a", TTR: 200 * time.Millisecond, Backoff: []time.Duration{time.Millisecond}})
	leased := reserveOne(t, c, "held", 0)

	j := movedOn(t, newClientOn(t, rdb, Config{}), "held", "a")
	if late := time.Since(leased.LeaseDeadline); late > expiryBound {
		t.Fatalf("the lease expired %v after its deadline; want within %v", late, expiryBound)
	}
	// The retry is due 1 ms after the deadline: the job may be seen in that millisecond, still
	// delayed.
	want := leased.LeaseDeadline.Add(time.Millisecond)
	if (j.State != StateReady && j.State != StateDelayed) || !j.RunAt.Equal(want) {
		t.Fatalf("state %s, due at %v after its lease expired with a backoff of 1 ms; want ready at %v", j.State, j.RunAt, want)
	}
}

// A Client that expires every topic's leases takes on a topic made after it started, from
// the topic's registration notice.
func TestExpireAllLeasesTakesOnNewTopics(t *testing.T) {
	t.Parallel()
	keeper, rdb := newTestClient(t, Config{ExpireAllLeases: true})
	producer := newClientOn(t, rdb, Config{})
	// Until the keeper's subscription to registrations is up, a topic made is found only by
	// its next read of the registry; probe topics show when it is up.
	for i := 0; ; i++ {
		topic := fmt.Sprintf("probe-%d", i)
		mustEnqueue(t, producer, topic, Spec{})
		kept := false
		testwait.Until(200*time.Millisecond, func() error {
			if kept = keeper.leases.Kept() > i; !kept {
				return fmt.Errorf("not kept")
			}
			return nil
		})
		if kept {
			break
		}
		if i > 100 {
			t.Fatal("the keeper never took on a new topic")
		}
	}
	consumer := newClientOn(t, rdb, Config{})
	mustEnqueue(t, consumer, "fresh", Spec{ID: "a", TTR: 200 * time.Millisecond, Backoff: []time.Duration{time.Hour}})
	leased := reserveOne(t, consumer, "fresh", 0)
	consumer.Close()

	movedOn(t, producer, "fresh", "a")
	if late := time.Since(leased.LeaseDeadline); late > expiryBound {
		t.Fatalf("the lease expired %v after its deadline; want within %v", late, expiryBound)
	}
}

// On a Redis Cluster, where a topic's partitions spread over the shards, every partition's
// leases expire at their deadlines, each announced on its own shard.
func TestLeasesExpireOnACluster(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewCluster(t, 3, 0).Client(t)
	consumer := newClientOn(t, rdb, Config{Partitions: 16})
	newClientOn(t, rdb, Config{ExpireAllLeases: true})
	observer := newClientOn(t, rdb, Config{})
	specs := make([]Spec, 64)
	for i := range specs {
		specs[i] = Spec{ID: fmt.Sprint("job-", i), TTR: 500 * time.Millisecond, Backoff: []time.Duration{time.Hour}}
	}
	if _, err := consumer.EnqueueBatch(testContext(t), "spread", specs); err != nil {
		t.Fatal(err)
	}
	jobs, err := consumer.Reserve(testContext(t), "spread", ReserveOptions{Max: len(specs)})
	if err != nil || len(jobs) != len(specs) {
		t.Fatalf("Reserve: %d jobs, %v; want %d", len(jobs), err, len(specs))
	}
	consumer.Close()
	last := jobs[0].LeaseDeadline
	for _, j := range jobs {
		if j.LeaseDeadline.After(last) {
			last = j.LeaseDeadline
		}
	}
	testwait.For(t, 10*time.Second, "every lease to expire", func() bool {
		s, err := observer.Stats(testContext(t), "spread")
		if err != nil {
			t.Fatal(err)
		}
		return s.Reserved == 0 && s.LeasesExpired == int64(len(specs))
	})
	if late := time.Since(last); late > expiryBound {
		t.Fatalf("the last lease expired %v after its deadline; want within %v", late, expiryBound)
	}
}

// A Client that expires every topic's leases stops looking at a deleted topic's partitions,
// and looks at them again once the topic is made anew.
func TestExpireAllLeasesForgetsDeletedTopics(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{RecheckInterval: 20 * time.Millisecond})
	mustEnqueue(t, c, "brief", Spec{ID: "a"})
	keeper := newClientOn(t, rdb, Config{ExpireAllLeases: true, RecheckInterval: 20 * time.Millisecond})
	looked := func() int {
		expire, look := keeper.leases.Due(time.Now().Add(time.Hour), 0)
		return len(expire) + len(look)
	}
	testwait.For(t, 5*time.Second, "the keeper to keep the topic", func() bool { return keeper.leases.Kept() == 1 })
	if _, err := c.DeleteTopic(testContext(t), "brief", DeleteTopicOptions{Purge: true}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "the keeper to forget the deleted topic", func() bool { return looked() == 0 })
	mustEnqueue(t, c, "brief", Spec{ID: "b"})
	testwait.For(t, 5*time.Second, "the keeper to look at the topic made anew", func() bool { return looked() == 1 })
}

// A consumer waiting at a topic's concurrency limit takes a due job as soon as a lease that
// holds the limit expires at its deadline, although a touch made that deadline earlier than
// the one its last reserve learnt.
func TestLeaseExpiryAtTheConcurrencyLimitWakesWaitingConsumers(t *testing.T) {
	t.Parallel()
	holder, rdb := newTestClient(t, Config{})
	mustEnqueue(t, holder, "limited", Spec{ID: "held", Backoff: []time.Duration{time.Hour}})
	if err := holder.SetTopicLimits(testContext(t), "limited", TopicLimits{Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	jobs, err := holder.Reserve(testContext(t), "limited", ReserveOptions{TTR: time.Hour})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
	}
	held := jobs[0]
	mustEnqueue(t, holder, "limited", Spec{ID: "waiting"})

	// The waiter rechecks far off: only a notice can wake it in time.
	waiter := newClientOn(t, rdb, Config{RecheckInterval: time.Minute})
	type reserved struct {
		jobs []*Job
		err  error
	}
	got := make(chan reserved, 1)
	ctx := testContext(t)
	go func() {
		jobs, err := waiter.Reserve(ctx, "limited", ReserveOptions{Wait: 20 * time.Second})
		got <- reserved{jobs, err}
	}()
	waitSettled(t, waiter, "limited", store.LanePull)

	deadline, err := holder.Touch(testContext(t), held.Lease(), 200*time.Millisecond)
	if err != nil {
		t.Fatalf("Touch: %v", err)
	}
	select {
	case r := <-got:
		if r.err != nil || len(r.jobs) != 1 || r.jobs[0].ID != "waiting" {
			t.Fatalf("the waiter got %d jobs, %v; want the waiting one", len(r.jobs), r.err)
		}
		if late := time.Since(deadline); late > expiryBound {
			t.Fatalf("the waiting job was handed out %v after the lease that held the limit expired; want within %v", late, expiryBound)
		}
	case <-time.After(time.Until(deadline) + 2*expiryBound):
		t.Fatalf("the waiter still waits %v after the lease that held the concurrency limit expired", 2*expiryBound)
	}
}

// A lease taken while a keeper's connections are down, whose notice it never hears and whose
// deadline passes during the outage, expires as soon as the keeper is connected again.
func TestLeaseAnnouncedDuringAnOutageExpiresOnceConnected(t *testing.T) {
	t.Parallel()
	srv := redistest.Standalone(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { rdb.Close() })
	consumer := newClientOn(t, srv.Client(t), Config{})
	mustEnqueue(t, consumer, "cut", Spec{ID: "a", TTR: 300 * time.Millisecond, Backoff: []time.Duration{time.Hour}})
	keeper := newClientOn(t, rdb, Config{ExpireAllLeases: true})
	testwait.For(t, 10*time.Second, "the keeper to keep the topic", func() bool { return keeper.leases.Kept() == 1 })
	time.Sleep(200 * time.Millisecond) // its subscription is up

	end := proxy.Outage(time.Second)
	reserveOne(t, consumer, "cut", 0)
	consumer.Close()
	<-end
	back := time.Now()
	movedOn(t, newClientOn(t, srv.Client(t), Config{}), "cut", "a")
	if late := time.Since(back); late > expiryBound {
		t.Fatalf("the lease expired %v after the outage ended; want within %v", late, expiryBound)
	}
}

// A look at a partition's first lease deadline that fails keeps the deadline the keeper knew:
// the lease still expires at it, not at the next look.
func TestFailedLookKeepsTheKnownLeaseDeadline(t *testing.T) {
	t.Parallel()
	srv := redistest.Standalone(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	consumer := newClientOn(t, srv.Client(t), Config{})
	mustEnqueue(t, consumer, "looked", Spec{ID: "a", TTR: time.Second, Backoff: []time.Duration{time.Hour}})
	keeper := newClientOn(t, rdb, Config{ExpireAllLeases: true})
	testwait.For(t, 10*time.Second, "the keeper to keep the topic", func() bool { return keeper.leases.Kept() == 1 })
	time.Sleep(200 * time.Millisecond) // its subscription is up

	leased := reserveOne(t, consumer, "looked", 0)
	consumer.Close()
	time.Sleep(100 * time.Millisecond) // the keeper heard the lease's notice
	fired := proxy.DropReplyOnce(func(args []string) bool { return strings.EqualFold(args[0], "time") })
	keeper.leases.Recheck() // a look, whose reply is lost
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("the keeper made no look")
	}

	movedOn(t, newClientOn(t, srv.Client(t), Config{}), "looked", "a")
	if late := time.Since(leased.LeaseDeadline); late > expiryBound {
		t.Fatalf("the lease expired %v after its deadline; want within %v", late, expiryBound)
	}
}

// A Client that expires every topic's leases lets go of deleted topics: with topics made and
// deleted under ever new names, what it keeps — partitions and their subscriptions — does not
// grow without bound.
func TestExpireAllLeasesLetsGoOfDeletedTopics(t *testing.T) {
	t.Parallel()
	c, rdb := newTestClient(t, Config{RecheckInterval: 20 * time.Millisecond})
	keeper := newClientOn(t, rdb, Config{ExpireAllLeases: true, RecheckInterval: 20 * time.Millisecond})
	base := keeper.hub.Targets()
	for i := range 20 {
		topic := fmt.Sprint("churn-", i)
		mustEnqueue(t, c, topic, Spec{})
		testwait.For(t, 5*time.Second, "the keeper to keep "+topic, func() bool { return keeper.leases.Kept() > 0 })
		if _, err := c.DeleteTopic(testContext(t), topic, DeleteTopicOptions{Purge: true}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 5*time.Second, "the keeper to let go of the deleted topics", func() bool {
		return keeper.leases.Kept() == 0 && keeper.hub.Targets() <= base
	})
}
