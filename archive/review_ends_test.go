package archive

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/clienthooks"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

func clientOn(t *testing.T, rdb redis.UniversalClient, partitions int) *delayq.Client {
	t.Helper()
	c, err := delayq.New(context.Background(), rdb, delayq.Config{Partitions: partitions, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// On a Redis Cluster, every partition's ends are archived, a topic deleted while they wait
// included.
func TestArchiverOnACluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clientOn(t, redistest.NewCluster(t, 3, 0).Client(t), 16)
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{Failed: true})
	ackAll(t, c, "orders", "o", 64)
	ackAll(t, c, "gone", "g", 20)
	if _, err := c.DeleteTopic(ctx, "gone", delayq.DeleteTopicOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := c.Enqueue(ctx, "orders", delayq.Spec{ID: fmt.Sprintf("c-%d", i)}); err != nil {
			t.Fatal(err)
		}
		if err := c.Cancel(ctx, "orders", fmt.Sprintf("c-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitRows(t, pg, "orders", 74)
	waitRows(t, pg, "gone", 20)
}

// Over maxmemory (noeviction), jobs still end while archiving is on: acks, nacks that bury,
// cancels and dead letters' deletions free memory before they record the end.
func TestEndsOverMaxMemoryWhileArchiving(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Standalone(t, redistest.WithArgs("--maxmemory-policy", "noeviction")).Client(t)
	c := clientOn(t, rdb, 4)
	if err := Enable(ctx, c, 1000, true); err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		if _, err := c.Enqueue(ctx, "full", delayq.Spec{ID: fmt.Sprintf("j-%02d", i), Body: []byte(strings.Repeat("x", 200))}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := c.Reserve(ctx, "full", delayq.ReserveOptions{Max: n - 5})
	if err != nil || len(jobs) != n-5 {
		t.Fatalf("Reserve: %d, %v", len(jobs), err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, "full", delayq.Spec{ID: "more"}); err == nil {
		t.Fatal("Enqueue over maxmemory succeeded; the test needs Redis to be full")
	}
	ends := map[string]int{}
	for i, j := range jobs {
		switch {
		case i < 20:
			err = c.Ack(ctx, j.Lease())
			ends[Acked]++
		case i < 30:
			_, err = c.Nack(ctx, j.Lease(), delayq.NackOptions{Error: "no", Dead: true})
			ends[Dead]++
		default:
			err = c.Cancel(ctx, "full", j.ID)
			ends[Cancelled]++
		}
		if err != nil {
			t.Fatalf("ending %s over maxmemory: %v", j.ID, err)
		}
	}
	if d, err := c.DeleteAllDead(ctx, "full"); err != nil || d != 10 {
		t.Fatalf("DeleteAllDead over maxmemory: %d, %v", d, err)
	}
	ends[DeadDeleted] = 10
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{Failed: true})
	rows := waitRows(t, pg, "full", n-5+10)
	got := map[string]int{}
	for _, r := range rows {
		got[r.Outcome]++
	}
	if fmt.Sprint(got) != fmt.Sprint(ends) {
		t.Errorf("rows by outcome %v, want %v", got, ends)
	}
}

// An end whose reply was lost, and which go-redis therefore ran again, is archived once.
func TestEndsWhoseReplyWasLostAreArchivedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Standalone(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { rdb.Close() })
	c := clientOn(t, rdb, 1)
	pg, _ := openStore(t, Options{})
	if err := Enable(ctx, c, 1000, true); err != nil {
		t.Fatal(err)
	}
	// Every script runs once first, so that a dropped reply is that of a script that ran.
	ackAll(t, c, "warm", "w", 1)
	for _, id := range []string{"a", "n", "c", "d"} {
		if _, err := c.Enqueue(ctx, "t", delayq.Spec{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := c.Reserve(ctx, "t", delayq.ReserveOptions{Max: 4})
	if err != nil || len(jobs) != 4 {
		t.Fatalf("Reserve: %d, %v", len(jobs), err)
	}
	lease := map[string]delayq.Lease{}
	for _, j := range jobs {
		lease[j.ID] = j.Lease()
	}
	drop := func(want string) {
		t.Helper()
		fired := proxy.DropReplyOnce(func(args []string) bool {
			return len(args) > 0 && strings.EqualFold(args[0], "evalsha") && slices.Contains(args, want)
		})
		t.Cleanup(func() {
			select {
			case <-fired:
			default:
				t.Errorf("the reply of the call on %s was never dropped", want)
			}
		})
	}
	drop("a")
	if err := c.Ack(ctx, lease["a"]); err != nil {
		t.Fatal(err)
	}
	drop("n")
	if _, err := c.Nack(ctx, lease["n"], delayq.NackOptions{Dead: true}); err != nil {
		t.Fatal(err)
	}
	drop("c")
	if err := c.Cancel(ctx, "t", "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Nack(ctx, lease["d"], delayq.NackOptions{Dead: true}); err != nil {
		t.Fatal(err)
	}
	drop("d")
	if n, err := c.DeleteDead(ctx, "t", []string{"d"}); err != nil || n != 1 {
		t.Fatalf("DeleteDead: %d, %v", n, err)
	}
	runArchiver(t, c, pg, ArchiverConfig{Failed: true})
	waitRows(t, pg, "t", 5)
	time.Sleep(200 * time.Millisecond) // a second row of any end would have come by now
	if rows := history(t, pg, "t"); len(rows) != 5 {
		t.Errorf("rows %v", labels(rows))
	}
}

// Outcomes an archiver has read are trimmed from a full stream while it writes them: they
// are archived all the same, so they are not counted as dropped.
func TestOutcomesTrimmedWhileBeingWrittenAreNotDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Standalone(t).Client(t)
	c := clientOn(t, rdb, 1)
	pg, url := openStore(t, Options{})
	if err := Enable(ctx, c, 5, false); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "t", "a", 5)
	// PostgreSQL holds the archiver's insert until the lock is let go.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE delayq_job_history IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	a := runArchiver(t, c, pg, ArchiverConfig{Keep: 5})
	history := clienthooks.Store(c).Partition("t", 0).History()
	testwait.For(t, 10*time.Second, "the archiver reading the outcomes", func() bool {
		p, err := rdb.XPending(ctx, history, "archivers").Result()
		return err == nil && p.Count == 5
	})
	ackAll(t, c, "t", "b", 3) // trims three of those being written
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	waitRows(t, pg, "t", 8)
	testwait.ForNil(t, 10*time.Second, "an empty backlog", func() error {
		b, err := a.Backlog(ctx)
		if err != nil || b.Waiting != 0 || b.Dropped != 0 {
			return fmt.Errorf("backlog %+v, %v; want nothing waiting or dropped: every outcome was archived", b, err)
		}
		return nil
	})
}

// A job id enqueued again after its job ended names a new job, whose ends get rows of their
// own, however soon after.
func TestReusedIDGetsRowsOfItsOwn(t *testing.T) {
	t.Parallel()
	c := clientOn(t, redistest.Standalone(t).Client(t), 1)
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{})
	for range 5 {
		ackAll(t, c, "t", "same", 1)
	}
	rows := waitRows(t, pg, "t", 5)
	for _, r := range rows {
		if r.ID != "same-0000" || r.Outcome != Acked {
			t.Errorf("row %s", label(r))
		}
	}
}

// Over maxmemory (noeviction) the archiver still drains the history streams, which frees
// memory: Redis refuses commands that may grow memory, and the streams exist already.
func TestArchiverDrainsAFullRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Standalone(t, redistest.WithArgs("--maxmemory-policy", "noeviction")).Client(t)
	c := clientOn(t, rdb, 2)
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{})
	ackAll(t, c, "t", "before", 4)
	waitRows(t, pg, "t", 4) // the streams and their group exist
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ConfigSet(context.Background(), "maxmemory", "0") })
	if _, err := c.Enqueue(ctx, "t", delayq.Spec{ID: "refused"}); err == nil {
		t.Fatal("Enqueue over maxmemory succeeded; the test needs Redis to be full")
	}
	// Jobs enqueued before Redis was full end while it is.
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := c.Enqueue(ctx, "t", delayq.Spec{ID: fmt.Sprintf("full-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := c.Reserve(ctx, "t", delayq.ReserveOptions{Max: 6})
	if err != nil || len(jobs) != 6 {
		t.Fatalf("Reserve: %d, %v", len(jobs), err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := c.Ack(ctx, j.Lease()); err != nil {
			t.Fatalf("Ack over maxmemory: %v", err)
		}
	}
	waitRows(t, pg, "t", 10)
}

// Over maxmemory, the ends of partitions that had none before, whose streams are made while
// Redis is full, are archived too.
func TestArchiverDrainsNewStreamsOfAFullRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Standalone(t, redistest.WithArgs("--maxmemory-policy", "noeviction")).Client(t)
	c := clientOn(t, rdb, 8)
	pg, _ := openStore(t, Options{})
	a := runArchiver(t, c, pg, ArchiverConfig{})
	for i := range 12 {
		if _, err := c.Enqueue(ctx, "t", delayq.Spec{ID: fmt.Sprintf("j-%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := c.Reserve(ctx, "t", delayq.ReserveOptions{Max: 12})
	if err != nil || len(jobs) != 12 {
		t.Fatalf("Reserve: %d, %v", len(jobs), err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ConfigSet(context.Background(), "maxmemory", "0") })
	for _, j := range jobs {
		if err := c.Ack(ctx, j.Lease()); err != nil {
			t.Fatalf("Ack over maxmemory: %v", err)
		}
	}
	waitRows(t, pg, "t", 12)
	if b, err := a.Backlog(ctx); err != nil || b.Waiting != 0 {
		t.Errorf("backlog %+v, %v", b, err)
	}
}

// An archiver started while Redis cannot be reached waits for it, as it does for a Redis
// lost later, instead of giving up for good.
func TestArchiverStartedDuringARedisOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Standalone(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c := clientOn(t, rdb, 1)
	pg, _ := openStore(t, Options{})
	a, err := NewArchiver(c, pg, ArchiverConfig{Interval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	back := proxy.Outage(time.Second)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case err := <-done:
		done <- err
		t.Fatalf("Run gave up during the outage: %v", err)
	case <-back:
	}
	testwait.For(t, 10*time.Second, "archiving on", func() bool { return clienthooks.Store(c).Archive() != 0 })
	ackAll(t, c, "t", "j", 3)
	waitRows(t, pg, "t", 3)
}

// Deleting a topic frees memory, so it works over maxmemory while outcomes wait too.
func TestDeleteTopicOverMaxMemoryWhileOutcomesWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Standalone(t, redistest.WithArgs("--maxmemory-policy", "noeviction")).Client(t)
	c := clientOn(t, rdb, 1)
	if err := Enable(ctx, c, 1000, false); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "t", "j", 3)
	if _, err := c.Enqueue(ctx, "t", delayq.Spec{ID: "left"}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ConfigSet(context.Background(), "maxmemory", "0") })
	if n, err := c.DeleteTopic(ctx, "t", delayq.DeleteTopicOptions{Purge: true}); err != nil || n != 1 {
		t.Fatalf("DeleteTopic over maxmemory: %d, %v", n, err)
	}
}
