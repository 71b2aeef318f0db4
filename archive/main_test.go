package archive

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/internal/pgtest"
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
