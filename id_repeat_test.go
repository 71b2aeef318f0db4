package delayq

import "testing"

// Two Enqueue calls without an id are two jobs, however alike. When the second one's generated
// id collides with the first's (Enqueue draws again on ErrExists for exactly that case), an
// identical spec must not be taken for a repeat of the first call: no caller repeats a call whose
// id the Client made, so answering the first job drops the second.
func TestGeneratedIDCollisionWithAnIdenticalJobDrawsAgain(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{})
	draws := []string{"drawn-id-001", "drawn-id-001", "fresh-id-002"}
	c.newID = func() string { id := draws[0]; draws = draws[1:]; return id }
	s := Spec{Body: []byte("same body")}
	first := mustEnqueue(t, c, "t", s)
	second := mustEnqueue(t, c, "t", s)
	if second.ID == first.ID {
		t.Fatalf("two Enqueue calls without an id both answered job %q (the second's draw collided): one job was dropped", first.ID)
	}
	if st, err := c.Stats(testContext(t), "t"); err != nil || st.Ready != 2 {
		t.Fatalf("Stats = %+v, %v; want 2 ready jobs", st, err)
	}
}
