package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// queryAll returns every outcome of the store, newest first.
func queryAll(t *testing.T, s *Store) []Outcome {
	t.Helper()
	page, err := s.Query(context.Background(), Filter{Limit: MaxLimit})
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	return page.Outcomes
}

// TestInsertRoundTrip stores outcomes that exercise each column's edge (no headers, empty
// headers, no body, an empty body, a large body, non-ASCII text, every outcome) and reads them
// back field for field.
func TestInsertRoundTrip(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{KeepBodies: true})
	large := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<20) // 4 MiB, NUL bytes included
	var batch []Outcome
	add := func(id string, edit func(*Outcome)) {
		o := outcome("tópico-✓", id, len(batch))
		edit(&o)
		batch = append(batch, o)
	}
	add("all", func(o *Outcome) {})
	add("no-headers", func(o *Outcome) { o.Headers = nil })
	add("empty-headers", func(o *Outcome) { o.Headers = map[string]string{} })
	add("no-body", func(o *Outcome) { o.Body = nil })
	add("empty-body", func(o *Outcome) { o.Body = []byte{} })
	add("large-body", func(o *Outcome) { o.Body = large })
	add("unicode", func(o *Outcome) {
		o.LastError = "échec: 処理に失敗 🚫"
		o.Headers = map[string]string{"ключ": "значение", "emoji": "🙂", "quote": `"\`}
	})
	add("dead", func(o *Outcome) { o.Outcome, o.Attempts, o.MaxRetries = Dead, 6, 5 })
	add("cancelled", func(o *Outcome) { o.Outcome, o.Attempts, o.LastError = Cancelled, 0, "" })
	add("dead-deleted", func(o *Outcome) { o.Outcome = DeadDeleted })
	add("failed", func(o *Outcome) { o.Outcome, o.CallbackURL = Failed, "" })
	add("snoozed", func(o *Outcome) { o.Outcome, o.Snoozes, o.MaxSnoozes = Dead, 4, 3 })
	add("zero-run-at", func(o *Outcome) { o.RunAt = time.Time{}; o.Priority, o.Format, o.TTR = 0, 0, 0 })
	for _, pri := range []uint32{0, 1<<32 - 1} {
		add(fmt.Sprintf("beanstalkd-%d", pri), func(o *Outcome) {
			o.Priority, o.BeanstalkdPriority = 0, &pri
			o.MaxRetries, o.TTR = 1<<31-1, (1<<32-1)*time.Second
		})
	}
	insert(t, s, batch)

	got := queryAll(t, s)
	want := make([]Outcome, len(batch))
	for i, o := range batch { // newest first
		want[len(batch)-1-i] = o
	}
	if diff := cmp.Diff(want, got, equalTimes, equalBytes); diff != "" {
		t.Errorf("outcomes read back (-want +got):\n%s", diff)
	}
}

// TestInsertWithoutBodies checks that bodies are left out unless KeepBodies is set.
func TestInsertWithoutBodies(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	insert(t, s, outcomes("t", 2))
	for _, o := range queryAll(t, s) {
		if o.Body != nil {
			t.Errorf("%s: body %q stored without KeepBodies", o.ID, o.Body)
		}
	}
}

// TestInsertResent sends a batch again, then one that overlaps it, then one with a duplicate
// inside: each outcome is stored once, and the counts say how many were new.
func TestInsertResent(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	batch := outcomes("t", 50)
	insert(t, s, batch)
	for _, tc := range []struct {
		name  string
		batch []Outcome
		added int
	}{
		{"the same batch", batch, 0},
		{"overlapping", outcomes("t", 60), 10},
		{"a duplicate within", []Outcome{outcome("t", "x", 1), outcome("t", "x", 1), outcome("t", "y", 1)}, 2},
		// Another attempt, or another outcome, of a stored job is a row of its own.
		{"next attempt", []Outcome{func() Outcome { o := outcome("t", "j0", 70); o.Attempts = 3; return o }()}, 1},
		{"other outcome", []Outcome{func() Outcome { o := outcome("t", "j0", 0); o.Outcome = DeadDeleted; return o }()}, 1},
		// The same id again after the job was deleted and enqueued anew.
		{"re-created job", []Outcome{func() Outcome { o := outcome("t", "j0", 0); o.CreatedAt = base; return o }()}, 1},
	} {
		n, err := s.Insert(ctx, tc.batch)
		if err != nil {
			t.Fatalf("%s: Insert: %v", tc.name, err)
		}
		if n != tc.added {
			t.Errorf("%s: Insert added %d, want %d", tc.name, n, tc.added)
		}
	}
	if got, want := len(queryAll(t, s)), 50+10+2+1+1+1; got != want {
		t.Errorf("%d rows stored, want %d", got, want)
	}
}

// TestInsertInvalid checks that a batch with an outcome that cannot be stored is refused whole,
// naming the outcome.
func TestInsertInvalid(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	for _, tc := range []struct {
		name string
		edit func(*Outcome)
	}{
		{"empty topic", func(o *Outcome) { o.Topic = "" }},
		{"empty id", func(o *Outcome) { o.ID = "" }},
		{"unknown outcome", func(o *Outcome) { o.Outcome = "done" }},
		{"no finish time", func(o *Outcome) { o.FinishedAt = time.Time{} }},
		{"no creation time", func(o *Outcome) { o.CreatedAt = time.Time{} }},
		{"attempts beyond 32 bits", func(o *Outcome) { o.Attempts = 1 << 40 }},
		{"priority beyond 32 bits", func(o *Outcome) { o.Priority = 1<<40 + 5 }},
	} {
		batch := outcomes("t", 3)
		tc.edit(&batch[1])
		n, err := s.Insert(context.Background(), batch)
		var ie *InvalidOutcomeError
		if !errors.As(err, &ie) || ie.Index != 1 {
			t.Errorf("%s: Insert = %d, %v; want an InvalidOutcomeError for index 1", tc.name, n, err)
		}
	}
	if got := queryAll(t, s); len(got) != 0 {
		t.Errorf("%d rows stored from refused batches", len(got))
	}
}

// TestInsertUnstorableText stores text PostgreSQL refuses as is (NUL, invalid UTF-8), as a
// consumer's error message may hold: the batch goes through with U+FFFD in their place.
func TestInsertUnstorableText(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	o := outcome("t", "j", 0)
	o.LastError = "nul\x00 and bad \xff utf-8"
	o.Headers = map[string]string{"k\x00": "v\xfe"}
	insert(t, s, []Outcome{o})
	got := queryAll(t, s)[0]
	if want := "nul\uFFFD and bad \uFFFD utf-8"; got.LastError != want {
		t.Errorf("LastError = %q, want %q", got.LastError, want)
	}
	if diff := cmp.Diff(map[string]string{"k\uFFFD": "v\uFFFD"}, got.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

// Two ends of a job alike in every field but the stream entry they came from (a requeued dead
// job dying again within one millisecond) are two rows; the same entry sent again is one.
func TestInsertTellsEntriesApart(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	a, b := outcome("orders", "o-1", 0), outcome("orders", "o-1", 0)
	a.Entry, b.Entry = "1-0", "1-1"
	insert(t, s, []Outcome{a, b})
	if n, err := s.Insert(context.Background(), []Outcome{a, b}); err != nil || n != 0 {
		t.Errorf("Insert again = %d, %v; want 0 rows added", n, err)
	}
}
