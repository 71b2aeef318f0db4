package archive

import (
	"bytes"
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
	"github.com/delayq/delayq/internal/core"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/pgtest"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// Every way a job ends reaches the archive once, with its fields, and a failed attempt when
// asked for.
func TestArchiverRecordsEveryEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	pg, _ := openStore(t, Options{KeepBodies: true})
	runArchiver(t, c, pg, ArchiverConfig{Failed: true})

	for _, id := range []string{"acked", "dead", "cancelled", "buried", "retried"} {
		if _, err := c.Enqueue(ctx, "orders", delayq.Spec{ID: id, Body: []byte("body " + id),
			MaxRetries: 1, Headers: map[string]string{"tenant": "t1"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Cancel(ctx, "orders", "cancelled"); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.Reserve(ctx, "orders", delayq.ReserveOptions{Max: 10})
	if err != nil || len(jobs) != 4 {
		t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		var err error
		switch j.ID {
		case "acked":
			err = c.Ack(ctx, j.Lease())
		case "dead", "buried":
			_, err = c.Nack(ctx, j.Lease(), delayq.NackOptions{Error: "no stock", Dead: true})
		case "retried":
			_, err = c.Nack(ctx, j.Lease(), delayq.NackOptions{Error: "later"})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.DeleteDead(ctx, "orders", []string{"buried"}); err != nil || n != 1 {
		t.Fatalf("DeleteDead: %d, %v", n, err)
	}

	rows := waitRows(t, pg, "orders", 6)
	got := map[string]Outcome{}
	for _, r := range rows {
		got[r.ID+"/"+r.Outcome] = r
	}
	for key, attempts := range map[string]int{"acked/acked": 1, "dead/dead": 1, "cancelled/cancelled": 0,
		"buried/dead": 1, "buried/dead_deleted": 1, "retried/failed": 1} {
		r, ok := got[key]
		if !ok {
			t.Errorf("no row %s in %v", key, keysOf(got))
			continue
		}
		id := r.ID
		if r.Attempts != attempts || string(r.Body) != "body "+id || r.Headers["tenant"] != "t1" || r.MaxRetries != 1 {
			t.Errorf("%s: %+v", key, r)
		}
		if r.FinishedAt.Before(r.CreatedAt) || r.CreatedAt.IsZero() {
			t.Errorf("%s: created %v finished %v", key, r.CreatedAt, r.FinishedAt)
		}
	}
	if got["dead/dead"].LastError != "no stock" {
		t.Errorf("dead job's last error %q", got["dead/dead"].LastError)
	}
}

// The ends of jobs put over the beanstalkd protocol are archived with their beanstalkd
// priority, as the API shows a job's (priority 0, beanstalkd_priority the number), and with
// beanstalkd's other values beyond those of delayq's jobs: a priority of 2^32-1, a TTR and a
// delay of 2^32-1 s, no retry limit, a body that is not UTF-8, an id of 20 digits.
func TestArchiverKeepsBeanstalkdJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	pg, _ := openStore(t, Options{KeepBodies: true})
	runArchiver(t, c, pg, ArchiverConfig{})

	const most = 1<<32 - 1
	long := time.Duration(most) * time.Second
	body := []byte{0xff, 0xfe, 0, 'x'}
	put := func(id string, pri uint32, delay time.Duration) {
		t.Helper()
		if err := c.Core(core.Pass).EnqueueRanked(ctx, "tube", core.RankedJob{
			ID: id, Body: body, Pri: pri, Delay: delay, TTR: long}); err != nil {
			t.Fatal(err)
		}
	}
	put("00000000000000000001", most, 0)
	put("00000000000000000002", 0, 0)
	put("00000000000000000003", 7, 0)
	put("00000000000000000004", 9, long) // delayed for 136 years, then deleted
	jobs, err := c.Reserve(ctx, "tube", delayq.ReserveOptions{Max: 3})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		switch j.ID {
		case "00000000000000000003":
			// Buried with a new priority, then deleted from the dead letters.
			err = c.Core(core.Pass).BuryRanked(ctx, core.Lease{Topic: j.Topic, ID: j.ID, Token: j.LeaseToken}, 3)
		default:
			err = c.Ack(ctx, j.Lease())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.DeleteDead(ctx, "tube", []string{"00000000000000000003"}); err != nil || n != 1 {
		t.Fatalf("DeleteDead: %d, %v", n, err)
	}
	if err := c.Cancel(ctx, "tube", "00000000000000000004"); err != nil {
		t.Fatal(err)
	}

	rows := waitRows(t, pg, "tube", 5)
	got := map[string]Outcome{}
	for _, r := range rows {
		got[r.ID+"/"+r.Outcome] = r
	}
	for key, pri := range map[string]uint32{
		"00000000000000000001/acked": most, "00000000000000000002/acked": 0,
		"00000000000000000003/dead": 3, "00000000000000000003/dead_deleted": 3,
		"00000000000000000004/cancelled": 9,
	} {
		r, ok := got[key]
		if !ok {
			t.Errorf("no row %s in %v", key, keysOf(got))
			continue
		}
		if r.BeanstalkdPriority == nil || *r.BeanstalkdPriority != pri || r.Priority != 0 {
			t.Errorf("%s: priority %d, beanstalkd priority %v; want 0 and %d", key, r.Priority, r.BeanstalkdPriority, pri)
		}
		if r.TTR != long || r.MaxRetries != 1<<31-1 || !bytes.Equal(r.Body, body) {
			t.Errorf("%s: ttr %v, max retries %d, body %q", key, r.TTR, r.MaxRetries, r.Body)
		}
	}
	if r := got["00000000000000000004/cancelled"]; r.RunAt.Sub(r.CreatedAt) < long-time.Second {
		t.Errorf("the delayed job: created %v, run at %v", r.CreatedAt, r.RunAt)
	}
}

// A job's snoozes and their limit are archived with its end: here a death past max_snoozes.
func TestArchiverKeepsSnoozes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{})
	if _, err := c.Enqueue(ctx, "s", delayq.Spec{ID: "s", Body: []byte("x"), MaxSnoozes: 1}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		jobs, err := c.Reserve(ctx, "s", delayq.ReserveOptions{})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
		}
		now := time.Duration(0)
		if _, err := c.Release(ctx, jobs[0].Lease(), delayq.ReleaseOptions{Delay: &now}); err != nil {
			t.Fatal(err)
		}
	}
	rows := waitRows(t, pg, "s", 1)
	if r := rows[0]; r.Outcome != Dead || r.Snoozes != 2 || r.MaxSnoozes != 1 || r.Attempts != 1 || r.LastError != "snoozed more than max_snoozes (1) times" {
		t.Errorf("archived %s with snoozes %d of %d, attempts %d, last error %q; want dead, 2 of 1, 1, and why", r.Outcome, r.Snoozes, r.MaxSnoozes, r.Attempts, r.LastError)
	}
}

// PostgreSQL stopped while jobs are acked: the outcomes wait in Redis and are all archived,
// once each, when it is back.
func TestArchiverWaitsOutAPostgresOutage(t *testing.T) {
	t.Parallel()
	pgsrv := pgtest.Start(t)
	pg, err := Open(context.Background(), pgsrv.NewDatabase(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Close)
	c := newClient(t)
	a := runArchiver(t, c, pg, ArchiverConfig{})
	ackAll(t, c, "t", "before", 100)
	waitRows(t, pg, "t", 100)

	pgsrv.Stop(t)
	ackAll(t, c, "t", "during", 300)
	time.Sleep(200 * time.Millisecond) // a few failed passes
	if b, err := a.Backlog(context.Background()); err != nil || b.Waiting != 300 || b.Dropped != 0 {
		t.Fatalf("backlog while PostgreSQL is down: %+v, %v; want 300 waiting", b, err)
	}
	pgsrv.Start(t)
	rows := waitRows(t, pg, "t", 400)
	for i := 1; i < len(rows); i++ {
		if rows[i].ID == rows[i-1].ID {
			t.Fatalf("%s archived twice", rows[i].ID)
		}
	}
}

// Two archivers on one namespace archive each outcome once; outcomes one of them read and
// never wrote (it died mid-batch) are taken over by the other.
func TestArchiversShareTheWorkAndTakeOverADeadOnesBatch(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	pg, _ := openStore(t, Options{})
	if err := Enable(context.Background(), c, 1000, false); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "t", "early", 50)
	// An archiver that reads a batch and dies before writing it.
	st := c.Core(core.Pass).Store()
	got, err := st.ReadHistory(context.Background(), st.Partition("t", 0), "dies", 20, time.Hour)
	if err != nil || len(got) != 20 {
		t.Fatalf("the dying archiver read %d, %v", len(got), err)
	}
	for range 2 {
		runArchiver(t, c, pg, ArchiverConfig{Batch: 7, ClaimAfter: 300 * time.Millisecond})
	}
	ackAll(t, c, "t", "late", 150)
	rows := waitRows(t, pg, "t", 200)
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.ID] {
			t.Fatalf("%s archived twice", r.ID)
		}
		seen[r.ID] = true
	}
}

// With no archiver running, a partition's stream keeps at most Keep outcomes: the oldest are
// dropped and counted, and the queue goes on.
func TestArchiveBacklogIsBounded(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	pg, _ := openStore(t, Options{})
	if err := Enable(context.Background(), c, 10, false); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "t", "j", 25)
	a, err := NewArchiver(c, pg, ArchiverConfig{Keep: 10})
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.Backlog(context.Background())
	if err != nil || b.Waiting != 10 || b.Dropped != 15 {
		t.Fatalf("backlog %+v, %v; want 10 waiting, 15 dropped", b, err)
	}
	runArchiver(t, c, pg, ArchiverConfig{Keep: 10})
	rows := waitRows(t, pg, "t", 10)
	if rows[0].ID != "j-0015" {
		t.Fatalf("the oldest kept outcome is %s, want j-0015: the oldest are dropped", rows[0].ID)
	}
}

func TestDisableStopsRecording(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	pg, _ := openStore(t, Options{})
	if err := Enable(context.Background(), c, 100, false); err != nil {
		t.Fatal(err)
	}
	if err := Disable(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "t", "j", 5)
	a, _ := NewArchiver(c, pg, ArchiverConfig{})
	if b, err := a.Backlog(context.Background()); err != nil || b.Waiting != 0 {
		t.Fatalf("backlog %+v, %v; want nothing recorded", b, err)
	}
	if _, err := NewArchiver(c, nil, ArchiverConfig{}); err == nil {
		t.Fatal("NewArchiver without a Store accepted")
	}
}

// Archiving stays on while an archiver runs: once none has renewed it for Hold, Clients stop
// appending job ends, so that Redis does not fill with history nobody will move.
func TestArchivingStopsWhenNoArchiverRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	pg, _ := openStore(t, Options{})
	a, err := NewArchiver(c, pg, ArchiverConfig{Hold: 300 * time.Millisecond, Interval: 20 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	testwait.For(t, 10*time.Second, "archiving on", func() bool { return c.Core(core.Pass).Store().Archive() != 0 })
	time.Sleep(time.Second) // past Hold: Run renewed it meanwhile
	ackAll(t, c, "t", "while", 3)
	waitRows(t, pg, "t", 3)

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // past Hold, with no archiver
	// What every Client does every 5 s.
	if err := c.Core(core.Pass).ReadArchiveSetting(ctx); err != nil {
		t.Fatal(err)
	}
	// The stream may still hold the last batch, written but not yet deleted when Run stopped.
	before, err := a.Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "t", "after", 3)
	if b, err := a.Backlog(ctx); err != nil || b.Waiting != before.Waiting {
		t.Fatalf("backlog %+v, %v after the last archiver stopped, %d before these acks; want nothing recorded", b, err, before.Waiting)
	}
}

// A partition whose history Redis cannot serve (here a key of the wrong type in its place) is
// passed over: the topic's other partitions are archived all the same.
func TestArchiverPassesOverAPartitionItCannotRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Standalone(t).Client(t)
	c, err := delayq.New(ctx, rdb, delayq.Config{Partitions: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pg, _ := openStore(t, Options{})
	if err := Enable(ctx, c, 1000, false); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "t", "j", 20)
	st := c.Core(core.Pass).Store()
	key := st.Partition("t", 0).History() // the partition read first
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, key, "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	inSecond := 0
	for i := range 20 {
		if keys.PartitionOf(fmt.Sprintf("j-%04d", i), 2) == 1 {
			inSecond++
		}
	}
	if inSecond == 0 {
		t.Fatal("no job in the second partition")
	}
	runArchiver(t, c, pg, ArchiverConfig{})
	waitRows(t, pg, "t", inSecond)
}

// A dead job that is requeued starts its attempts over: when it dies again, that second death
// is an end of its own and gets a row of its own, as do its failed attempts.
func TestArchiverRecordsADeathAfterRequeue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{Failed: true})

	if _, err := c.Enqueue(ctx, "orders", delayq.Spec{ID: "o-1", MaxRetries: 1}); err != nil {
		t.Fatal(err)
	}
	var zero time.Duration
	die := func() {
		t.Helper()
		for _, dead := range []bool{false, true} {
			jobs, err := c.Reserve(ctx, "orders", delayq.ReserveOptions{Max: 1})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
			}
			if _, err := c.Nack(ctx, jobs[0].Lease(), delayq.NackOptions{Error: "no", Delay: &zero, Dead: dead}); err != nil {
				t.Fatal(err)
			}
		}
	}
	die()
	if n, err := c.RequeueDead(ctx, "orders", []string{"o-1"}); err != nil || n != 1 {
		t.Fatalf("RequeueDead: %d, %v", n, err)
	}
	die()
	rows := waitRows(t, pg, "orders", 4)
	n := map[string]int{}
	for _, r := range rows {
		n[r.Outcome]++
	}
	if n[Dead] != 2 || n[Failed] != 2 {
		t.Errorf("rows by outcome %v, want 2 dead and 2 failed", n)
	}
}

// An entry the archive cannot store (an unknown outcome, written there by anything but
// delayq's scripts) is skipped: the outcomes around it in its partition are archived all the
// same, and the partition is not held up for good.
func TestArchiverSkipsAnUnstorableEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Standalone(t).Client(t)
	c, err := delayq.New(ctx, rdb, delayq.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{})

	st := c.Core(core.Pass).Store()
	if _, err := c.Enqueue(ctx, "orders", delayq.Spec{ID: "model"}); err != nil {
		t.Fatal(err)
	}
	topics, err := st.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rec string
	var p keys.Partition
	for i := range topics["orders"] {
		p = st.Partition("orders", i)
		if r, err := rdb.HGet(ctx, p.Jobs(), "model").Result(); err == nil {
			rec = r
			break
		}
	}
	if rec == "" {
		t.Fatal("no record of the job")
	}
	now := time.Now().UnixMilli()
	for _, e := range []struct {
		o  string
		at int64
	}{{"bogus", now}, {"dead", 9e18}, {"acked", now}} {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: p.History(), Values: []any{
			"o", e.o, "i", e.o + "-job", "r", rec, "a", "1", "t", e.at}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Cancel(ctx, "orders", "model"); err != nil {
		t.Fatal(err)
	}
	rows := waitRows(t, pg, "orders", 2)
	if rows[0].ID != "acked-job" || rows[1].ID != "model" {
		t.Errorf("rows %v", labels(rows))
	}
}

// Ends recorded before their topic is deleted (emptied and deleted, or purged) are archived
// all the same, though the topic is no longer registered.
func TestArchiverArchivesTheEndsOfADeletedTopic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	pg, _ := openStore(t, Options{})
	if err := Enable(ctx, c, 1000, false); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "emptied", "e", 3)
	if _, err := c.DeleteTopic(ctx, "emptied", delayq.DeleteTopicOptions{}); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "purged", "p", 2)
	if _, err := c.Enqueue(ctx, "purged", delayq.Spec{ID: "waiting"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteTopic(ctx, "purged", delayq.DeleteTopicOptions{Purge: true}); err != nil {
		t.Fatal(err)
	}
	a := runArchiver(t, c, pg, ArchiverConfig{})
	waitRows(t, pg, "emptied", 3)
	waitRows(t, pg, "purged", 2)
	testwait.ForNil(t, 10*time.Second, "an empty backlog", func() error {
		b, err := a.Backlog(ctx)
		if err != nil || b.Waiting != 0 {
			return fmt.Errorf("%+v, %v", b, err)
		}
		return nil
	})
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
	history := c.Core(core.Pass).Store().Partition("t", 0).History()
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
// own, however soon after. (Each has another body: the same enqueue again within the replay
// window would be taken for a retry of the first, and answer its job.)
func TestReusedIDGetsRowsOfItsOwn(t *testing.T) {
	t.Parallel()
	c := clientOn(t, redistest.Standalone(t).Client(t), 1)
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{})
	ctx := context.Background()
	for i := range 5 {
		if _, err := c.Enqueue(ctx, "t", delayq.Spec{ID: "same-0000", Body: []byte{byte('0' + i)}}); err != nil {
			t.Fatal(err)
		}
		jobs, err := c.Reserve(ctx, "t", delayq.ReserveOptions{Wait: 5 * time.Second})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("reserve %d: %v, %v", i, jobs, err)
		}
		if err := c.Ack(ctx, jobs[0].Lease()); err != nil {
			t.Fatal(err)
		}
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
	testwait.For(t, 10*time.Second, "archiving on", func() bool { return c.Core(core.Pass).Store().Archive() != 0 })
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
