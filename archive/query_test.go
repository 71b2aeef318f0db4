package archive

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// label names an outcome in the tests' expectations: topic/id outcome.
func label(o Outcome) string { return fmt.Sprintf("%s/%s %s", o.Topic, o.ID, o.Outcome) }

func labels(os []Outcome) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = label(o)
	}
	return out
}

// at returns base plus sec seconds.
func at(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }

// TestQueryFilters runs each filter over one set of outcomes, two of which finished at the same
// instant (the one inserted later comes first).
func TestQueryFilters(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	mk := func(topic, id, what string, sec int) Outcome {
		o := outcome(topic, id, sec)
		o.Outcome = what
		return o
	}
	insert(t, s, []Outcome{
		mk("a", "1", Failed, 1), mk("a", "1", Acked, 5), mk("a", "2", Dead, 10),
		mk("b", "1", Acked, 20), mk("b", "2", Cancelled, 30), mk("a", "3", Acked, 30),
	})
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"all", Filter{}, []string{"a/3 acked", "b/2 cancelled", "b/1 acked", "a/2 dead", "a/1 acked", "a/1 failed"}},
		{"topic", Filter{Topic: "a"}, []string{"a/3 acked", "a/2 dead", "a/1 acked", "a/1 failed"}},
		{"job", Filter{Topic: "a", ID: "1"}, []string{"a/1 acked", "a/1 failed"}},
		{"same id, other topic", Filter{Topic: "b", ID: "1"}, []string{"b/1 acked"}},
		{"outcome", Filter{Outcome: Acked}, []string{"a/3 acked", "b/1 acked", "a/1 acked"}},
		{"topic and outcome", Filter{Topic: "b", Outcome: Acked}, []string{"b/1 acked"}},
		{"since, inclusive", Filter{Since: at(10)}, []string{"a/3 acked", "b/2 cancelled", "b/1 acked", "a/2 dead"}},
		{"until, exclusive", Filter{Until: at(10)}, []string{"a/1 acked", "a/1 failed"}},
		{"since and until", Filter{Since: at(5), Until: at(30)}, []string{"b/1 acked", "a/2 dead", "a/1 acked"}},
		{"limit", Filter{Limit: 2}, []string{"a/3 acked", "b/2 cancelled"}},
		{"no match", Filter{Topic: "c"}, []string{}},
	} {
		page, err := s.Query(context.Background(), tc.f)
		if err != nil {
			t.Fatalf("%s: Query: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, labels(page.Outcomes)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
		if (page.Next != "") != (tc.name == "limit") {
			t.Errorf("%s: Next = %q", tc.name, page.Next)
		}
	}
}

// TestQueryPaging walks pages while outcomes keep arriving: those that finished after the first
// page was read never show up in later pages, one that finished before all others shows up at
// the end, and no outcome is repeated or skipped, ties of finish time included.
func TestQueryPaging(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	ctx := context.Background()
	var batch []Outcome
	for i := range 25 {
		batch = append(batch, outcome("t", fmt.Sprintf("j%02d", i), i/3)) // three per instant
		batch = append(batch, outcome("other", fmt.Sprintf("j%02d", i), i/3))
	}
	insert(t, s, batch)
	var want []string
	for i := len(batch) - 2; i >= 0; i -= 2 {
		want = append(want, label(batch[i]))
	}
	late := outcome("t", "late", -100) // reaches the archive late, having finished first
	want = append(want, label(late))

	var got []string
	f := Filter{Topic: "t", Limit: 4}
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("paging does not end")
		}
		page, err := s.Query(ctx, f)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		got = append(got, labels(page.Outcomes)...)
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
		insert(t, s, []Outcome{outcome("t", fmt.Sprintf("new%d", pages), 1000+pages)})
		if pages == 2 {
			insert(t, s, []Outcome{late})
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

// TestQueryDefaultLimit checks that a zero limit means DefaultLimit.
func TestQueryDefaultLimit(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	insert(t, s, outcomes("t", DefaultLimit+1))
	page, err := s.Query(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Outcomes) != DefaultLimit || page.Next == "" {
		t.Errorf("%d outcomes, Next %q; want %d and a next page", len(page.Outcomes), page.Next, DefaultLimit)
	}
}

// TestQueryInvalidFilter checks that each invalid filter is refused, naming the field, before
// any query runs.
func TestQueryInvalidFilter(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	for _, tc := range []struct {
		f     Filter
		field string
	}{
		{Filter{Limit: -1}, "limit"},
		{Filter{Limit: MaxLimit + 1}, "limit"},
		{Filter{ID: "j"}, "id"},
		{Filter{Outcome: "done"}, "outcome"},
		{Filter{Since: at(5), Until: at(5)}, "until"},
		{Filter{Since: at(5), Until: at(1)}, "until"},
		{Filter{Cursor: "not a cursor!"}, "cursor"},
		{Filter{Cursor: cursor{finishedAt: 1, seq: 1}.String() + "AA"}, "cursor"},
		{Filter{Cursor: cursor{finishedAt: 1, seq: 0}.String()}, "cursor"},
	} {
		_, err := s.Query(context.Background(), tc.f)
		var fe *FilterError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Query(%+v) = %v; want a FilterError for %s", tc.f, err, tc.field)
		}
	}
}

// FuzzParseCursor checks that no input makes parseCursor panic, and that a cursor it accepts
// means what its own form says.
func FuzzParseCursor(f *testing.F) {
	f.Add(cursor{finishedAt: base.UnixMicro(), seq: 42}.String())
	f.Add("")
	f.Add("AAAAAAAAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCursor(s)
		if err != nil {
			return
		}
		again, err := parseCursor(c.String())
		if err != nil || again != c {
			t.Fatalf("cursor %q: %+v, read back from its form as %+v, %v", s, c, again, err)
		}
	})
}

// A cursor decoded well but naming an instant PostgreSQL cannot hold is a bad cursor, not a
// failed query.
func TestQueryCursorOutOfRange(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	insert(t, s, outcomes("t", 3))
	for _, micros := range []int64{math.MaxInt64, math.MinInt64, -1 << 60, 1 << 60} {
		c := cursor{finishedAt: micros, seq: 1}.String()
		_, err := s.Query(context.Background(), Filter{Cursor: c})
		var fe *FilterError
		if !errors.As(err, &fe) || fe.Field != "cursor" {
			t.Errorf("Query with cursor at %d µs = %v, want a cursor FilterError", micros, err)
		}
	}
}
