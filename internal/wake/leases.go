package wake

import (
	"context"
	"sync"
	"time"
)

// Leases is what one process knows about when the partitions it keeps next have a lease to
// expire. Their scripts announce each lease that ends before any other of its partition
// ("<deadline> lease" notices), so one timer per process, set to the earliest deadline it
// knows, expires every lease at its deadline — whether anyone consumes the topic or not, and
// with no leader: every process that keeps a partition expires its leases, and an expiry run
// twice is run once. What no notice covers (a notice lost while the subscription was down)
// a look at each partition's first deadline, once per recheck interval, finds: a look is one
// read, and only a deadline that has come costs a script call.
type Leases struct {
	mu       sync.Mutex
	parts    map[leaseKey]*leasePart
	offsetMs int64    // server clock minus local clock, from the latest reply
	topics   []string // newly registered topics heard of, not taken yet
	missed   bool     // registrations may have gone unheard: read the registry
	changed  chan struct{}
}

type leaseKey struct {
	topic string
	p     int
}

// leasePart is one kept partition.
type leasePart struct {
	next    time.Time // local time of its first lease deadline; never when none is known
	look    bool      // its first deadline is not known: look at it now
	checked time.Time // local time it was last looked at
	notices uint64    // notices seen, to keep a stale reply from hiding one
	heard   time.Time // the earliest deadline noticed since the last look began; never when none
}

// LeasePart names a kept partition to look at: Topic's partition P, with its notice count.
type LeasePart struct {
	Topic string
	P     int
	part  *leasePart
	seen  uint64
}

// NewLeases returns a Leases keeping no partition yet.
func NewLeases() *Leases {
	return &Leases{parts: map[leaseKey]*leasePart{}, changed: make(chan struct{})}
}

// Keep adds the partitions 0 to n-1 of topic, to be looked at now, and returns those it did
// not keep already (for Hub.ListenLeases).
func (l *Leases) Keep(topic string, n int) (added []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range n {
		k := leaseKey{topic, p}
		if l.parts[k] != nil {
			continue
		}
		l.parts[k] = &leasePart{next: never, look: true, heard: never}
		added = append(added, p)
	}
	if len(added) > 0 {
		l.broadcast()
	}
	return added
}

// Forget stops keeping the partitions of every kept topic that registered (topic to partition
// count) does not hold, and returns them by topic (for Hub.UnlistenLeases). A look or expiry
// of one under way learns nothing; Keep adds them anew.
func (l *Leases) Forget(registered map[string]int) (gone map[string][]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.parts {
		if n, ok := registered[k.topic]; !ok || k.p >= n {
			delete(l.parts, k)
			if gone == nil {
				gone = map[string][]int{}
			}
			gone[k.topic] = append(gone[k.topic], k.p)
		}
	}
	return gone
}

// Kept returns how many partitions l keeps.
func (l *Leases) Kept() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parts)
}

// notice records that kept partition k has a lease ending at server time deadlineMs.
func (l *Leases) notice(k leaseKey, deadlineMs int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lp := l.parts[k]
	if lp == nil {
		return
	}
	now := time.Now()
	at := now.Add(time.Duration(deadlineMs-(now.UnixMilli()+l.offsetMs)) * time.Millisecond)
	lp.notices++
	if at.Before(lp.heard) {
		lp.heard = at
	}
	if at.Before(lp.next) {
		lp.next = at
		l.broadcast()
	}
}

// recheck makes kept partition k be looked at now.
func (l *Leases) recheck(k leaseKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lp := l.parts[k]; lp != nil {
		lp.look = true
		lp.notices++
		l.broadcast()
	}
}

// Recheck makes every kept partition be looked at now.
func (l *Leases) Recheck() { l.ShiftClock(0) }

// ShiftClock records that the server's clock, as the scripts see it, moved forward by ms (a
// test moved it), and makes every kept partition be looked at now: its deadlines may have come.
func (l *Leases) ShiftClock(ms int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.offsetMs += ms
	for _, lp := range l.parts {
		lp.look = true
		lp.notices++
	}
	l.broadcast()
}

// registered records that topic was registered: the keeper of every topic takes it on.
func (l *Leases) registered(topic string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.topics = append(l.topics, topic)
	l.broadcast()
}

// missedRegistrations records that registrations may have gone unheard (the subscription to
// them was made again).
func (l *Leases) missedRegistrations() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.missed = true
	l.broadcast()
}

// TakeRegistered returns the topics heard registered since the last call, and whether some
// may have gone unheard since, so that the registry should be read.
func (l *Leases) TakeRegistered() (topics []string, missed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	topics, missed = l.topics, l.missed
	l.topics, l.missed = nil, false
	return topics, missed
}

// Due returns the kept partitions whose first lease deadline has come (expire), and those
// whose first deadline is not known or that nobody looked at within interval (look), and
// counts them as looked at now.
func (l *Leases) Due(now time.Time, interval time.Duration) (expire, look []LeasePart) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, lp := range l.parts {
		part := LeasePart{Topic: k.topic, P: k.p, part: lp, seen: lp.notices}
		switch {
		case !lp.next.After(now):
			expire = append(expire, part)
		case lp.look || !now.Before(lp.checked.Add(interval)):
			look = append(look, part)
		default:
			continue
		}
		lp.look = false
		lp.checked = now
		lp.heard = never
	}
	return expire, look
}

// Learn records what a look at lp found: at local time at, the server's clock read nowMs and
// lp's first lease deadline is nextMs (-1: nothing is leased). A notice that arrived since the
// look began may be newer than the reply, so then the earlier of the reply's deadline and the
// notices' wins; never the deadline known before the look, which an expiry has just dealt with.
func (l *Leases) Learn(lp LeasePart, at time.Time, nowMs, nextMs int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.offsetMs = nowMs - at.UnixMilli()
	next := never
	if nextMs >= 0 {
		next = at.Add(time.Duration(nextMs-nowMs) * time.Millisecond)
	}
	p := l.kept(lp)
	if p == nil {
		return
	}
	if p.notices != lp.seen && p.heard.Before(next) {
		next = p.heard
	}
	p.next = next
}

// Failed records that lp's expiry failed at local time at: it is tried again retry later, or
// at an earlier deadline noticed meanwhile. (A look that fails changes nothing: the deadline
// known stands.)
func (l *Leases) Failed(lp LeasePart, at time.Time, retry time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.kept(lp)
	if p == nil {
		return
	}
	p.next = at.Add(retry)
	if p.notices != lp.seen && p.heard.Before(p.next) {
		p.next = p.heard
	}
}

// Wait sleeps until a kept partition's first lease deadline comes, a recheck falls due, a
// partition or topic is added, or ctx ends. (A wake a little before the deadline, by the
// server's clock, finds nothing expired and learns the deadline again, a millisecond on.)
func (l *Leases) Wait(ctx context.Context, interval time.Duration) {
	l.mu.Lock()
	wake := time.Now().Add(interval)
	for _, p := range l.parts {
		if p.next.Before(wake) {
			wake = p.next
		}
		if at := p.checked.Add(interval); at.Before(wake) {
			wake = at
		}
		if p.look {
			wake = time.Time{}
		}
	}
	if len(l.topics) > 0 || l.missed {
		wake = time.Time{}
	}
	changed := l.changed
	l.mu.Unlock()

	d := time.Until(wake)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-changed:
	case <-timer.C:
	}
}

// kept returns lp's partition while it is still kept, nil once it was forgotten (and perhaps
// kept anew since).
func (l *Leases) kept(lp LeasePart) *leasePart {
	if p := l.parts[leaseKey{lp.Topic, lp.P}]; p == lp.part {
		return p
	}
	return nil
}

func (l *Leases) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}
