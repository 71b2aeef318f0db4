package ids

import (
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

func TestIDsAreOrderedULIDs(t *testing.T) {
	t.Parallel()
	g := NewGenerator()
	seen := map[string]bool{}
	prev := ""
	start := time.Now()
	for i := range 100_000 {
		id := g.Make(start.Add(time.Duration(i/1000) * time.Millisecond)) // 1,000 ids per millisecond
		if len(id) != 26 || strings.HasPrefix(id, "-") {
			t.Fatalf("id %q: want 26 valid characters", id)
		}
		if _, err := ulid.ParseStrict(id); err != nil {
			t.Fatalf("id %q is not a ULID: %v", id, err)
		}
		if id <= prev || seen[id] {
			t.Fatalf("id %q after %q: not increasing", id, prev)
		}
		seen[id], prev = true, id
	}
	// A clock that steps back does not make ids go back.
	if id := g.Make(start.Add(-time.Second)); id <= prev {
		t.Fatalf("id %q after %q when the clock stepped back", id, prev)
	}
	// No wrap: an id made 300 days, or 300 years, later sorts after.
	for _, later := range []time.Time{start.AddDate(0, 0, 300), start.AddDate(300, 0, 0)} {
		if id := g.Make(later); id <= prev {
			t.Fatalf("id %q made at %v sorts before %q", id, later, prev)
		}
	}
}

// Ids made by concurrent callers are unique and none starts with '-'.
func TestIDsOfConcurrentCallers(t *testing.T) {
	t.Parallel()
	const callers, each = 8, 5000
	out := make(chan string, callers*each)
	for range callers {
		go func() {
			for range each {
				out <- New()
			}
		}()
	}
	seen := map[string]bool{}
	for range callers * each {
		id := <-out
		if seen[id] || id[0] == '-' {
			t.Fatalf("id %q repeated or starting with '-'", id)
		}
		seen[id] = true
	}
}
