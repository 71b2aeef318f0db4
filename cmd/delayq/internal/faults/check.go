package faults

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Window is a fault: from Start to End, Unix ms by the clock of the machine the scenario runs
// on (agents and Redis share it on loopback).
type Window struct {
	Name       string
	Start, End int64
}

// Rules say what a scenario expects beyond the invariants that always hold.
type Rules struct {
	// Faults are the moments faults hit. A job may be delivered more than once only when one
	// of its deliveries was in flight during one of them.
	Faults []Window
	// MayRemain reports whether a job may still be pending after the drain (for instance one
	// due an hour later). Nil: none may.
	MayRemain func(id string) bool
}

// Report is what Check found. The counts of violations are Lost, Early, Stuck, StaleAccepted,
// AfterCancel, Phantom, Corrupt, Unexplained and ResendsRefused; the others describe the run.
type Report struct {
	Sent         int // distinct job ids producers tried to enqueue
	Acknowledged int // enqueues that returned success
	Unconfirmed  int // ids sent whose enqueue did not return success: they may or may not exist
	Cancelled    int // successful cancels
	Delivered    int // distinct jobs delivered at least once
	Deliveries   int // deliveries in all
	Finished     int // jobs whose last delivery was acked, or whose ack went out and that are gone
	Dead         int // jobs Redis holds as dead after the drain
	Remaining    int // pending jobs the rules allow to remain
	Resent       int // jobs whose enqueue a producer sent again, the outcome of the first unknown

	Lost          int // acknowledged, not cancelled, and gone without any ack
	Early         int // deliveries leased before their due time (Redis clock)
	Stuck         int // jobs still delayed, ready or reserved after the drain
	StaleAccepted int // acks that succeeded with a lease superseded or cancelled before they were sent
	AfterCancel   int // deliveries leased after a cancel of their job had returned
	Phantom       int // jobs delivered or stored that no producer sent
	Corrupt       int // delivered jobs whose body differs from the one sent
	// ResendsRefused are identical enqueues sent again that met already_exists: within the
	// replay window a repeat answers the first call's job.
	ResendsRefused int

	Duplicates  int // jobs delivered more than once
	InFlight    int // jobs with a delivery in flight while a fault hit: the duplicates allowed
	Unexplained int // duplicated jobs none of whose deliveries was in flight during a fault

	// Lateness of first deliveries: lease time less due time, Redis clock.
	LateP50, LateP99, LateMax time.Duration

	// Examples holds up to five job ids per violation, by its name.
	Examples map[string][]string
}

// Problems lists the violated invariants. allowLoss tolerates lost jobs, for the faults under
// which delayq documents that acknowledged jobs can be lost.
func (r *Report) Problems(allowLoss bool) []string {
	var out []string
	add := func(name string, n int) {
		if n > 0 {
			out = append(out, fmt.Sprintf("%s = %d (e.g. %s)", name, n, strings.Join(r.Examples[name], ", ")))
		}
	}
	if !allowLoss {
		add("lost", r.Lost)
	}
	add("early", r.Early)
	add("stuck", r.Stuck)
	add("stale acks accepted", r.StaleAccepted)
	add("deliveries after cancel", r.AfterCancel)
	add("phantom", r.Phantom)
	add("corrupt", r.Corrupt)
	add("resends refused", r.ResendsRefused)
	add("unexplained duplicates", r.Unexplained)
	return out
}

// String summarises the report on one line.
func (r *Report) String() string {
	return fmt.Sprintf("sent %d (resent %d), acknowledged %d, unconfirmed %d, cancelled %d, delivered %d (%d deliveries), "+
		"finished %d, dead %d, remaining %d; lost %d, early %d, stuck %d, stale acks accepted %d, "+
		"after cancel %d, phantom %d, corrupt %d, resends refused %d; duplicates %d (in flight at a fault %d, unexplained %d); "+
		"lateness p50 %v p99 %v max %v",
		r.Sent, r.Resent, r.Acknowledged, r.Unconfirmed, r.Cancelled, r.Delivered, r.Deliveries,
		r.Finished, r.Dead, r.Remaining, r.Lost, r.Early, r.Stuck, r.StaleAccepted,
		r.AfterCancel, r.Phantom, r.Corrupt, r.ResendsRefused, r.Duplicates, r.InFlight, r.Unexplained,
		r.LateP50, r.LateP99, r.LateMax)
}

func (r *Report) example(name, id string) {
	if r.Examples == nil {
		r.Examples = map[string][]string{}
	}
	if len(r.Examples[name]) < 5 {
		r.Examples[name] = append(r.Examples[name], id)
	}
}

// ackState is what the logs say about the ack of one delivery.
type ackState struct {
	sent, ok int64 // times of AckSent and Acked; 0 when absent
}

// jobFacts gathers the events of one job.
type jobFacts struct {
	sent       bool
	resent     bool
	refused    int // resends that met already_exists
	enqueued   *Event
	cancelled  int64 // when a successful cancel returned; 0 when none did
	deliveries []Event
}

// ackKey names the ack of one delivery: job id and lease.
type ackKey [2]string

// Check applies the invariants to the events of every agent and to the jobs Redis still holds
// after the drain (present: job id to state name, "delayed", "ready", "reserved" or "dead").
func Check(events []Event, present map[string]string, rules Rules) *Report {
	jobs, acks := gather(events)
	for id := range present {
		if jobs[id] == nil {
			jobs[id] = &jobFacts{}
		}
	}
	r := &Report{}
	var late []time.Duration
	for _, id := range slices.Sorted(maps.Keys(jobs)) {
		r.checkJob(id, jobs[id], present, acks, rules, &late)
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	if n := len(late); n > 0 {
		r.LateP50 = late[n/2]
		r.LateP99 = late[min(n-1, n*99/100)]
		r.LateMax = late[n-1]
	}
	return r
}

// gather sorts the events by job, and the acks by delivery.
func gather(events []Event) (map[string]*jobFacts, map[ackKey]*ackState) {
	jobs := map[string]*jobFacts{}
	facts := func(id string) *jobFacts {
		f := jobs[id]
		if f == nil {
			f = &jobFacts{}
			jobs[id] = f
		}
		return f
	}
	acks := map[ackKey]*ackState{}
	ack := func(e Event) *ackState {
		k := ackKey{e.ID, e.Lease}
		a := acks[k]
		if a == nil {
			a = &ackState{}
			acks[k] = a
		}
		return a
	}
	for i := range events {
		e := events[i]
		switch e.Kind {
		case Send:
			for _, id := range e.IDs {
				facts(id).sent = true
			}
		case Resend:
			facts(e.ID).resent = true
		case ResendRefused:
			facts(e.ID).refused++
		case Enqueued:
			facts(e.ID).enqueued = &events[i]
		case Cancelled:
			facts(e.ID).cancelled = e.T
		case Delivered:
			f := facts(e.ID)
			f.deliveries = append(f.deliveries, e)
		case AckSent:
			ack(e).sent = e.T
		case Acked:
			ack(e).ok = e.T
		}
	}
	return jobs, acks
}

// checkJob counts one job in r: how it was sent and enqueued, its deliveries, and how it ended.
func (r *Report) checkJob(id string, f *jobFacts, present map[string]string, acks map[ackKey]*ackState, rules Rules, late *[]time.Duration) {
	if f.sent {
		r.Sent++
	}
	if f.resent {
		r.Resent++
	}
	if f.refused > 0 {
		r.ResendsRefused += f.refused
		r.example("resends refused", id)
	}
	if f.enqueued != nil {
		r.Acknowledged++
	} else if f.sent {
		r.Unconfirmed++
	}
	if f.cancelled != 0 {
		r.Cancelled++
	}
	state, stored := present[id]
	if stored && !f.sent {
		r.Phantom++
		r.example("phantom", id)
	}
	if len(f.deliveries) > 0 {
		r.checkDeliveries(id, f, acks, rules, late)
	}
	acked := false // an ack of some delivery succeeded or went out
	for _, d := range f.deliveries {
		a := acks[ackKey{id, d.Lease}]
		if d.Implicit || (a != nil && (a.ok != 0 || a.sent != 0)) {
			acked = true
		}
	}
	switch {
	case stored && state == "dead":
		r.Dead++
	case stored && rules.MayRemain != nil && rules.MayRemain(id):
		r.Remaining++
	case stored:
		r.Stuck++
		r.example("stuck", id)
	case f.cancelled != 0:
	case acked:
		r.Finished++
	case f.enqueued != nil:
		r.Lost++
		r.example("lost", id)
	}
}

// checkDeliveries applies the per-delivery invariants to one job.
func (r *Report) checkDeliveries(id string, f *jobFacts, acks map[ackKey]*ackState, rules Rules, late *[]time.Duration) {
	r.Delivered++
	r.Deliveries += len(f.deliveries)
	if !f.sent {
		r.Phantom++
		r.example("phantom", id)
	}
	first := f.deliveries[0]
	hit := false
	leases := map[string]bool{}
	for _, d := range f.deliveries {
		leases[d.Lease] = true
		if d.Reserved < first.Reserved {
			first = d
		}
		if d.Bad != "" {
			r.Corrupt++
			r.example("corrupt", id)
		}
		if d.Reserved < d.RunAt || (d.Attempt == 1 && f.enqueued != nil && d.Reserved < f.enqueued.RunAt) {
			r.Early++
			r.example("early", id)
		}
		if f.cancelled != 0 && d.Reserved > f.cancelled {
			r.AfterCancel++
			r.example("deliveries after cancel", id)
		}
		a := acks[ackKey{id, d.Lease}]
		for _, w := range rules.Faults {
			if d.Reserved <= w.End && (a == nil || a.ok == 0 || a.ok >= w.Start) {
				hit = true
			}
		}
		if a == nil || a.ok == 0 {
			continue
		}
		sentAt := a.sent
		if sentAt == 0 {
			sentAt = a.ok
		}
		// The ack went out after another lease of the job had been handed out, or after the
		// job was cancelled: it had to be refused.
		for _, o := range f.deliveries {
			if o.Lease != d.Lease && o.Reserved > d.Reserved && o.Reserved < sentAt {
				r.StaleAccepted++
				r.example("stale acks accepted", id)
			}
		}
		if f.cancelled != 0 && sentAt > f.cancelled {
			r.StaleAccepted++
			r.example("stale acks accepted", id)
		}
	}
	if hit {
		r.InFlight++
	}
	if len(leases) > 1 {
		r.Duplicates++
		if !hit {
			r.Unexplained++
			r.example("unexplained duplicates", id)
		}
	}
	if first.Attempt == 1 {
		*late = append(*late, time.Duration(first.Reserved-first.RunAt)*time.Millisecond)
	}
}
