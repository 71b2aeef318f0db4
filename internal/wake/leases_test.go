package wake

import (
	"testing"
	"time"
)

// A notice heard while an expiry call runs must not keep the deadline that call just expired:
// the partition is not expired again at once, but at the earlier of the reply's deadline and
// the notice's.
func TestLeasesNoticeDuringAnExpiryDoesNotRepeatIt(t *testing.T) {
	l := NewLeases()
	l.Keep("t", 1)
	start := time.Now()
	// The first look: the server's clock is the local one, a lease ends 10 ms on.
	_, look := l.Due(start, time.Hour)
	if len(look) != 1 {
		t.Fatalf("Due looks at %d partitions; want 1", len(look))
	}
	l.Learn(look[0], start, start.UnixMilli(), start.UnixMilli()+10)

	at := start.Add(20 * time.Millisecond)
	expire, _ := l.Due(at, time.Hour)
	if len(expire) != 1 {
		t.Fatalf("Due expires %d partitions at the deadline; want 1", len(expire))
	}
	// While the expiry runs, a reserve takes a lease ending 5 s on, the first of the
	// partition once the call has expired the old one.
	l.notice(leaseKey{"t", 0}, at.UnixMilli()+5000)
	l.Learn(expire[0], at, at.UnixMilli(), -1)

	expire, look = l.Due(at.Add(time.Millisecond), time.Hour)
	if len(expire) != 0 || len(look) != 0 {
		t.Fatalf("after the expiry, Due expires %d and looks at %d partitions; want none before the new deadline", len(expire), len(look))
	}
	expire, _ = l.Due(at.Add(5100*time.Millisecond), time.Hour)
	if len(expire) != 1 {
		t.Fatalf("at the noticed deadline Due expires %d partitions; want 1", len(expire))
	}
}
