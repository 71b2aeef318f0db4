package delayq

import (
	"testing"
	"time"

	"github.com/delayq/delayq/internal/redistest"
)

// Over maxmemory (noeviction), consumers still drain: a reserve that has to promote due jobs
// must not be refused, or a full Redis could never empty.
func TestReserveOverMaxMemory(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	rdb := redistest.Standalone(t, redistest.WithArgs("--maxmemory-policy", "noeviction")).Client(t)
	c := newClientOn(t, rdb, Config{})
	mustEnqueue(t, c, "full", Spec{ID: "a", Delay: time.Minute})
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, "full", Spec{ID: "b"}); err == nil {
		t.Fatal("Enqueue over maxmemory succeeded; the test needs Redis to be full")
	}
	advance(c, time.Minute)
	// A consumer that starts now must be able to register with the known topic, too.
	c2 := newClientOn(t, rdb, Config{})
	c2.store.SetClockOffset(c.store.ClockOffset())
	j := reserveOne(t, c2, "full", 0)
	if err := c2.Ack(ctx, Lease{Topic: "full", ID: j.ID, Token: j.LeaseToken}); err != nil {
		t.Fatalf("Ack over maxmemory: %v", err)
	}
}

// Over maxmemory, a running job's lease can still be renewed.
func TestTouchOverMaxMemory(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	rdb := redistest.Standalone(t, redistest.WithArgs("--maxmemory-policy", "noeviction")).Client(t)
	c := newClientOn(t, rdb, Config{})
	mustEnqueue(t, c, "full", Spec{ID: "a"})
	j := reserveOne(t, c, "full", 0)
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, "full", Spec{ID: "b"}); err == nil {
		t.Fatal("Enqueue over maxmemory succeeded; the test needs Redis to be full")
	}
	if _, err := c.Touch(ctx, Lease{Topic: "full", ID: "a", Token: j.LeaseToken}, time.Minute); err != nil {
		t.Fatalf("Touch over maxmemory: %v", err)
	}
}
