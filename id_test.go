package delayq

import (
	"testing"
	"time"
)

func TestIDsAreShortOrderedAndUnique(t *testing.T) {
	t.Parallel()
	var g idGen
	seen := map[string]bool{}
	prev := ""
	ms := time.Now().UnixMilli()
	for i := range 100_000 {
		id := g.make(ms + int64(i/1000)) // 1,000 ids per millisecond
		if len(id) != 12 || ValidateID(id) != nil {
			t.Fatalf("id %q: want 12 valid characters", id)
		}
		if id <= prev || seen[id] {
			t.Fatalf("id %q after %q: not increasing", id, prev)
		}
		seen[id], prev = true, id
	}
	// A clock that steps back does not make ids go back.
	if id := g.make(ms - 1000); id <= prev {
		t.Fatalf("id %q after %q when the clock stepped back", id, prev)
	}
}

func TestGeneratedIDCollisionDrawsAgain(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	mustEnqueue(t, c, "t", Spec{ID: "taken-id-001"})
	draws := []string{"taken-id-001", "taken-id-001", "fresh-id-002"}
	c.newID = func() string { id := draws[0]; draws = draws[1:]; return id }
	j, err := c.Enqueue(testContext(t), "t", Spec{Body: []byte("x")})
	if err != nil || j.ID != "fresh-id-002" {
		t.Fatalf("Enqueue with colliding generated ids = %+v, %v; want the third draw", j, err)
	}
}
