package delayq

import (
	"context"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
)

type enqueueReq struct {
	topic string
	part  keys.Partition
	job   store.NewJob
	// generated says the job's id was made here: no earlier enqueue can have meant this job,
	// so an identical job met under the id is another job, not a repeat.
	generated bool
}

type enqueueRes struct {
	job *Job
	err error
}

// flushEnqueues stores the jobs of concurrent Enqueue calls in one round trip.
func (c *Client) flushEnqueues(ctx context.Context, reqs []enqueueReq) []enqueueRes {
	var b store.ByPartition[store.NewJob]
	for i, r := range reqs {
		b.Add(r.part, r.job, i)
	}
	out := make([]enqueueRes, len(reqs))
	res := c.store.EnqueueMany(ctx, b.Parts, b.Groups)
	for g, positions := range b.Positions {
		for k, i := range positions {
			switch r := res[g]; {
			case r.Err != nil:
				out[i].err = r.Err // this partition's call failed; the others stand
			case r.Jobs[k].Err != nil:
				out[i].err = doneError(r.Jobs[k].Err, reqs[i].topic, reqs[i].job.ID)
			case r.Jobs[k].Repeat && reqs[i].generated:
				out[i].err = ErrExists
			case r.Jobs[k].Job != nil:
				out[i].job = jobFromRecord(reqs[i].topic, *r.Jobs[k].Job)
				out[i].job.Existed = true
			default:
				j := reqs[i].job
				if t := r.Jobs[k].StoredTrace; t != nil {
					j.Headers = withStoredTrace(j.Headers, t)
				}
				if u := r.Jobs[k].UniqueForMs; u > 0 {
					j.UniqueForMs = u // the default it took
				}
				out[i].job = newJob(reqs[i].topic, j, r.Jobs[k].CreatedMs, r.Jobs[k].RunAtMs)
			}
		}
	}
	return out
}

type ackReq struct {
	part  keys.Partition
	lease store.Lease
}

// flushAcks acks the leases of concurrent Ack calls in one round trip.
func (c *Client) flushAcks(ctx context.Context, reqs []ackReq) []error {
	var b store.ByPartition[store.Lease]
	for i, r := range reqs {
		b.Add(r.part, r.lease, i)
	}
	out := make([]error, len(reqs))
	results, errs := c.store.AckMany(ctx, b.Parts, b.Groups)
	for g, positions := range b.Positions {
		for k, i := range positions {
			if errs[g] != nil {
				out[i] = errs[g]
			} else {
				out[i] = results[g][k]
			}
		}
	}
	return out
}

// ridingAcks are acks that travel with reserve calls, each partition's with the call to that
// partition, and errs their outcomes in the order they came.
type ridingAcks struct {
	by    store.ByPartition[store.Lease]
	taken map[keys.Partition]bool
	errs  []error
}

func newRidingAcks(acks []ackReq) *ridingAcks {
	r := &ridingAcks{taken: map[keys.Partition]bool{}, errs: make([]error, len(acks))}
	for i, a := range acks {
		r.by.Add(a.part, a.lease, i)
	}
	return r
}

// take returns the acks of partition p, to go with the reserve call to p.
func (r *ridingAcks) take(p keys.Partition) []store.Lease {
	g, ok := r.by.Group(p)
	if !ok || r.taken[p] {
		return nil
	}
	r.taken[p] = true
	return r.by.Groups[g]
}

// settle records the outcomes of partition p's acks.
func (r *ridingAcks) settle(p keys.Partition, errs []error) {
	if g, ok := r.by.Group(p); ok {
		for k, i := range r.by.Positions[g] {
			r.errs[i] = errs[k]
		}
	}
}

// takenAcks are acks taken off the riders to go in a round trip of their own, with where
// each came from.
type takenAcks struct {
	reqs      []ackReq
	positions []int
}

// takeAllBut takes the acks of every partition not taken yet but ride (none when nil).
func (r *ridingAcks) takeAllBut(ride *keys.Partition) takenAcks {
	var out takenAcks
	for g, p := range r.by.Parts {
		if r.taken[p] || (ride != nil && p == *ride) {
			continue
		}
		r.taken[p] = true
		for k, l := range r.by.Groups[g] {
			out.reqs = append(out.reqs, ackReq{part: p, lease: l})
			out.positions = append(out.positions, r.by.Positions[g][k])
		}
	}
	return out
}

// settleTaken records the outcomes of taken acks, in their order. Calls for distinct takes may
// run concurrently: each writes its own positions.
func (r *ridingAcks) settleTaken(t takenAcks, errs []error) {
	for k, i := range t.positions {
		r.errs[i] = errs[k]
	}
}
