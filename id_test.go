package delayq

import (
	"testing"

	"github.com/delayq/delayq/internal/ids"
)

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

func TestGeneratedIDsAreValidIDs(t *testing.T) {
	t.Parallel()
	for range 1000 {
		if id := ids.New(); ValidateID(id) != nil {
			t.Fatalf("generated id %q: %v", id, ValidateID(id))
		}
	}
}
