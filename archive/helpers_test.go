package archive

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/core"
	"github.com/delayq/delayq/internal/pgtest"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// server is the PostgreSQL server the package's tests share, each in a database of its own.
var server *pgtest.Server

func TestMain(m *testing.M) {
	os.Exit(pgtest.RunWithServer(m, &server))
}

// openStore opens a Store on a new database; it is closed when t ends.
func openStore(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	url := server.NewDatabase(t)
	s, err := Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s, url
}

// base is the instant the tests' outcomes are placed around, to the microsecond as stored.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

// outcome returns an acked outcome of job id in topic that finished at base plus the given
// number of seconds, every field set to a value of its own.
func outcome(topic, id string, finishedSec int) Outcome {
	return Outcome{
		Topic: topic, ID: id, Outcome: Acked, Attempts: 2,
		Body: []byte("body of " + id), Format: 1, Priority: -7, MaxRetries: 9,
		TTR:         45 * time.Second,
		CreatedAt:   base.Add(-time.Hour),
		RunAt:       base.Add(-time.Minute),
		FinishedAt:  base.Add(time.Duration(finishedSec) * time.Second),
		LastError:   "timeout",
		CallbackURL: "https://example.com/hook",
		Headers:     map[string]string{"trace": id},
	}
}

// outcomes returns n outcomes of topic, job ids j0..j(n-1), finishing a second apart from
// base.
func outcomes(topic string, n int) []Outcome {
	batch := make([]Outcome, n)
	for i := range batch {
		batch[i] = outcome(topic, fmt.Sprintf("j%d", i), i)
	}
	return batch
}

// insert stores batch and fails t unless all of it was added.
func insert(t testing.TB, s *Store, batch []Outcome) {
	t.Helper()
	n, err := s.Insert(context.Background(), batch)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	if n != len(batch) {
		t.Fatalf("Insert added %d rows, want %d", n, len(batch))
	}
}

// equalTimes compares instants, whatever their locations.
var equalTimes = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })

// equalBytes compares byte slices at once (cmp's default, element by element, takes seconds for
// a large body) and tells nil from empty.
var equalBytes = cmp.Comparer(func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) })

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
		return c.Core(core.Pass).Store().Archive() != 0
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

func clientOn(t *testing.T, rdb redis.UniversalClient, partitions int) *delayq.Client {
	t.Helper()
	c, err := delayq.New(context.Background(), rdb, delayq.Config{Partitions: partitions, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
