package beanstalkd

import "time"

// deadlineMargin is how long before a reserved job's TTR runs out that beanstalkd answers a
// reserve DEADLINE_SOON (its SAFETY_MARGIN): the client should finish or touch that job first.
const deadlineMargin = time.Second

// reservation is a job this connection holds and when its TTR runs out.
type reservation struct {
	ttr      time.Duration
	deadline time.Time
}

// deadlines tracks the TTR deadlines of the jobs a connection has reserved. It is the
// connection's own, used by its goroutine only. A job whose deadline has passed has gone back
// to its tube and is dropped.
type deadlines map[uint64]reservation

func (d deadlines) reserved(id uint64, ttr time.Duration, now time.Time) {
	d[id] = reservation{ttr: ttr, deadline: now.Add(ttr)}
}

// touched restarts a job's TTR.
func (d deadlines) touched(id uint64, now time.Time) {
	if r, ok := d[id]; ok {
		d.reserved(id, r.ttr, now)
	}
}

func (d deadlines) done(id uint64) { delete(d, id) }

// soon returns when the next DEADLINE_SOON is due (the soonest deadline less the margin), and
// false when the connection holds no job.
func (d deadlines) soon(now time.Time) (time.Time, bool) {
	var first time.Time
	for id, r := range d {
		if !r.deadline.After(now) {
			delete(d, id)
			continue
		}
		if first.IsZero() || r.deadline.Before(first) {
			first = r.deadline
		}
	}
	if first.IsZero() {
		return first, false
	}
	return first.Add(-deadlineMargin), true
}
