package archive

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/clienthooks"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/pgtest"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// newClient returns a delayq Client on a redis-server of its own.
func newClient(t *testing.T) *delayq.Client {
	t.Helper()
	rdb := redistest.Standalone(t).Client(t)
	c, err := delayq.New(context.Background(), rdb, delayq.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// runArchiver runs an Archiver of c into pg until the test ends.
func runArchiver(t *testing.T, c *delayq.Client, pg *Store, cfg ArchiverConfig) *Archiver {
	t.Helper()
	if cfg.Interval == 0 {
		cfg.Interval = 20 * time.Millisecond
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	a, err := NewArchiver(c, pg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	// Run turns archiving on; wait until the client's scripts are told, or the first outcomes
	// would not be recorded (the setting is in Redis a moment before the client reads it).
	testwait.For(t, 10*time.Second, "archiving on", func() bool {
		return clienthooks.Store(c).Archive() != 0
	})
	return a
}

// history returns every row of topic, oldest first by job id and outcome.
func history(t *testing.T, pg *Store, topic string) []Outcome {
	t.Helper()
	var all []Outcome
	f := Filter{Topic: topic, Limit: MaxLimit}
	for {
		page, err := pg.Query(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Outcomes...)
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].ID != all[j].ID {
			return all[i].ID < all[j].ID
		}
		return all[i].Attempts < all[j].Attempts
	})
	return all
}

func waitRows(t *testing.T, pg *Store, topic string, n int) []Outcome {
	t.Helper()
	var rows []Outcome
	testwait.ForNil(t, 30*time.Second, fmt.Sprintf("%d rows of %s", n, topic), func() error {
		rows = history(t, pg, topic)
		if len(rows) != n {
			return fmt.Errorf("%d rows", len(rows))
		}
		return nil
	})
	return rows
}

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
		if err := clienthooks.EnqueueRanked(ctx, c, "tube", clienthooks.RankedJob{
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
			err = clienthooks.BuryRanked(ctx, c, clienthooks.Lease{Topic: j.Topic, ID: j.ID, Token: j.LeaseToken}, 3)
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

func keysOf(m map[string]Outcome) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ackAll enqueues n jobs named prefix-i in topic and acks them, a few at a time.
func ackAll(t *testing.T, c *delayq.Client, topic, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if _, err := c.Enqueue(ctx, topic, delayq.Spec{ID: fmt.Sprintf("%s-%04d", prefix, i)}); err != nil {
			t.Fatal(err)
		}
	}
	for acked := 0; acked < n; {
		jobs, err := c.Reserve(ctx, topic, delayq.ReserveOptions{Max: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if err := c.Ack(ctx, j.Lease()); err != nil {
				t.Fatal(err)
			}
		}
		acked += len(jobs)
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
	st := clienthooks.Store(c)
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
	testwait.For(t, 10*time.Second, "archiving on", func() bool { return clienthooks.Store(c).Archive() != 0 })
	time.Sleep(time.Second) // past Hold: Run renewed it meanwhile
	ackAll(t, c, "t", "while", 3)
	waitRows(t, pg, "t", 3)

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // past Hold, with no archiver
	// What every Client does every 5 s.
	if err := clienthooks.ReadArchiveSetting(ctx, c); err != nil {
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
	st := clienthooks.Store(c)
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
