// Package wake keeps what one process knows about when each topic next has a job due, and
// wakes the consumers waiting on it: on shard pub/sub notices from the scripts, and on a
// periodic recheck for what no notice covers.
package wake

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delayq/delayq/internal/store"
)

// never stands for "nothing is due in this partition until a notice says otherwise".
var never = time.Now().Add(100 * 365 * 24 * time.Hour)

// Topic is what one process knows about when a topic's partitions next have something
// to hand out, for one lane. Every consumer of the lane in the process — any number of Reserve
// calls and Worker fetchers — sleeps on it until the earliest of those moments or a notice of
// an earlier job, so no polling interval sets the precision; a lease that expires is the lease
// keepers' (Leases), whose expiry announces the job it puts back. What no notice covers (a
// notice lost while the subscription was down) one consumer looks at for all of them, once per
// partition per recheck interval.
type Topic struct {
	Name string
	rr   atomic.Uint32 // where the next scan of the partitions starts

	mu        sync.Mutex
	lane      store.Lane  // the lane whose notices wake it; "" for none
	n         int         // partition count, 0 until known
	next      []time.Time // per partition, local time when it next has something due; zero: look now
	checked   []time.Time // per partition, local time it was last looked at
	notices   []uint64    // per partition, notices seen, to keep a stale reply from hiding one
	paused    []bool      // per partition, paused as last seen: its notices of jobs wake nobody
	heard     []bool      // per partition, its channel's subscription confirmed: notices reach t
	offsetMs  int64       // server clock minus local clock, from the latest reply
	changed   chan struct{}
	listening bool      // notices of its partitions wake it
	awaiting  bool      // notices of new topics wake it
	lookedUp  time.Time // when the registry was last asked for a topic not known yet
}

// NewTopic returns the state of topic name, knowing nothing yet.
func NewTopic(name string) *Topic {
	return &Topic{Name: name, changed: make(chan struct{})}
}

// SetLane sets the lane whose notices wake t.
func (t *Topic) SetLane(l store.Lane) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lane = l
}

// Lane is the lane whose notices wake t.
func (t *Topic) Lane() store.Lane {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lane
}

// PartitionCount is the topic's partition count, 0 until known.
func (t *Topic) PartitionCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// SetPartitionCount records the topic's partition count, once.
func (t *Topic) SetPartitionCount(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.n = n
		t.next = make([]time.Time, n)
		t.checked = make([]time.Time, n)
		t.notices = make([]uint64, n)
		t.paused = make([]bool, n)
		t.heard = make([]bool, n)
		t.broadcast()
	}
}

// LookUp reports whether the registry should be asked about the topic now: it is not known
// yet and nobody asked within interval. It counts as asking.
func (t *Topic) LookUp(now time.Time, interval time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n > 0 || now.Before(t.lookedUp.Add(interval)) {
		return false
	}
	t.lookedUp = now
	return true
}

// Due returns the partitions that may have something to hand out now (all of them when all is
// set), starting at a rotating position so that concurrent consumers spread over the
// partitions, with each one's notice count.
func (t *Topic) Due(now time.Time, all bool) (parts []int, seen []uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	start := int(t.rr.Add(1))
	for k := range t.n {
		p := (start + k) % t.n
		if all || !t.next[p].After(now) {
			parts = append(parts, p)
			seen = append(seen, t.notices[p])
		}
	}
	return parts, seen
}

// Learn records what a look at partition p found: at local time at, the server's clock read
// nowMs and p next has something due at nextMs (-1: nothing), or p is paused (then nothing is
// due until a notice of its controls, or a look, says it resumed). A notice that arrived since
// the look began (seen differs) may be newer than the reply, so then the earlier of the two
// wins.
func (t *Topic) Learn(p int, seen uint64, at time.Time, nowMs, nextMs int64, paused bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.offsetMs = nowMs - at.UnixMilli()
	t.checked[p] = at
	next := never
	if nextMs >= 0 && !paused {
		next = at.Add(time.Duration(nextMs-nowMs) * time.Millisecond)
	}
	if t.notices[p] != seen && t.next[p].Before(next) {
		return
	}
	t.paused[p] = paused
	t.next[p] = next
	if !next.After(at) {
		t.broadcast()
	}
}

// ShiftClock records that the server's clock, as the scripts see it, moved forward by ms (a
// test moved it): what is due at a server time is due that much sooner by the local clock.
func (t *Topic) ShiftClock(ms int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.offsetMs += ms
	d := time.Duration(ms) * time.Millisecond
	for p := range t.next {
		if !t.next[p].IsZero() && !t.next[p].Equal(never) {
			t.next[p] = t.next[p].Add(-d)
		}
	}
	t.broadcast()
}

// ServerNowMs returns the server's clock as last seen, moved on by the local clock.
func (t *Topic) ServerNowMs(now time.Time) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return now.UnixMilli() + t.offsetMs
}

// Notice records that partition p has something of lane due at server time dueMs. A paused
// partition's notices change nothing: its jobs wait for the resume.
func (t *Topic) Notice(p int, lane store.Lane, dueMs int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p < 0 || p >= t.n || lane != t.lane || t.paused[p] {
		return
	}
	now := time.Now()
	at := now.Add(time.Duration(dueMs-(now.UnixMilli()+t.offsetMs)) * time.Millisecond)
	t.notices[p]++
	if at.Before(t.next[p]) {
		t.next[p] = at
		t.broadcast()
	}
}

// Recheck makes the given partitions (all when nil) be looked at on the next scan, paused or
// not, and wakes the waiters (also those of a topic not known yet).
func (t *Topic) Recheck(parts []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if parts == nil {
		for p := range t.n {
			t.recheck(p)
		}
		t.lookedUp = time.Time{}
	}
	for _, p := range parts {
		t.recheck(p)
	}
	t.broadcast()
}

// subscribed records that the subscription to partition p's channel is confirmed, and makes
// p be looked at: what was published before went unheard.
func (t *Topic) subscribed(p int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p < t.n {
		t.heard[p] = true
		t.recheck(p)
	}
	t.broadcast()
}

// unsubscribed records that the subscription to partition p's channel is gone until Redis
// confirms it again.
func (t *Topic) unsubscribed(p int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p < t.n {
		t.heard[p] = false
	}
}

func (t *Topic) recheck(p int) {
	t.next[p] = time.Time{}
	t.notices[p]++
	t.paused[p] = false
}

func (t *Topic) broadcast() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// ClaimRechecks returns the partitions nobody has looked at within interval, each with its
// Notice count, and counts them as looked at now: one waiter checks them for all.
func (t *Topic) ClaimRechecks(now time.Time, interval time.Duration) (parts []int, seen []uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p := range t.n {
		if !now.Before(t.checked[p].Add(interval)) {
			t.checked[p] = now
			parts = append(parts, p)
			seen = append(seen, t.notices[p])
		}
	}
	return parts, seen
}

// Wait sleeps until a partition may have something due, a recheck falls due, the deadline
// passes, or ctx ends. It reports whether it woke for a recheck (or a registry look-up).
func (t *Topic) Wait(ctx context.Context, deadline time.Time, interval time.Duration) (recheck bool) {
	t.mu.Lock()
	wake := deadline
	for p := range t.n {
		if t.next[p].Before(wake) {
			wake = t.next[p]
		}
	}
	checkAt := deadline
	for p := range t.n {
		if at := t.checked[p].Add(interval); at.Before(checkAt) {
			checkAt = at
		}
	}
	if t.n == 0 {
		checkAt = t.lookedUp.Add(interval)
	}
	isRecheck := checkAt.Before(wake)
	if isRecheck {
		wake = checkAt
	}
	changed := t.changed
	t.mu.Unlock()

	timer := time.NewTimer(time.Until(wake))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-changed:
	case <-timer.C:
		return isRecheck
	}
	return false
}

// Snapshot is what a Topic knows at one moment, for tests and diagnostics.
type Snapshot struct {
	Partitions int         // 0 until known
	Next       []time.Time // per partition, when it next has something due
	Notices    []uint64    // per partition, the notices heard
	Paused     []bool      // per partition, paused as last seen
	Listening  bool        // the partitions' notices wake it
	Heard      []bool      // per partition, its channel's subscription confirmed
	Awaiting   bool        // the registration of its topic wakes it
	LookedUp   time.Time   // when the registry was last asked for it, zero after a notice of it
}

// Snapshot returns a copy of what t knows now.
func (t *Topic) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Snapshot{
		Partitions: t.n, Next: slices.Clone(t.next), Notices: slices.Clone(t.notices), Paused: slices.Clone(t.paused),
		Heard: slices.Clone(t.heard), Listening: t.listening, Awaiting: t.awaiting, LookedUp: t.lookedUp,
	}
}
