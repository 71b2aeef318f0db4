package delayq

import (
	"context"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
)

// byPartition groups items by the partition each belongs to, keeping their order, and
// remembers where each came from, so that one script call per partition can serve them all.
type byPartition[T any] struct {
	parts     []keys.Partition
	groups    [][]T
	positions [][]int // groups[g][k] is item positions[g][k]
	index     map[keys.Partition]int
}

func (b *byPartition[T]) add(p keys.Partition, item T, position int) {
	if b.index == nil {
		b.index = map[keys.Partition]int{}
	}
	g, ok := b.index[p]
	if !ok {
		g = len(b.parts)
		b.index[p] = g
		b.parts = append(b.parts, p)
		b.groups = append(b.groups, nil)
		b.positions = append(b.positions, nil)
	}
	b.groups[g] = append(b.groups[g], item)
	b.positions[g] = append(b.positions[g], position)
}

type enqueueReq struct {
	topic string
	part  keys.Partition
	job   store.NewJob
}

type enqueueRes struct {
	job *Job
	err error
}

// flushEnqueues stores the jobs of concurrent Enqueue calls in one round trip.
func (c *Client) flushEnqueues(ctx context.Context, reqs []enqueueReq) []enqueueRes {
	var b byPartition[store.NewJob]
	for i, r := range reqs {
		b.add(r.part, r.job, i)
	}
	out := make([]enqueueRes, len(reqs))
	res := c.store.EnqueueMany(ctx, b.parts, b.groups)
	for g, positions := range b.positions {
		for k, i := range positions {
			switch r := res[g]; {
			case r.Err != nil:
				out[i].err = r.Err // this partition's call failed; the others stand
			case r.Jobs[k].Err != nil:
				out[i].err = r.Jobs[k].Err
			default:
				out[i].job = newJob(reqs[i].topic, reqs[i].job, r.Jobs[k].CreatedMs, r.Jobs[k].RunAtMs)
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
	var b byPartition[store.Lease]
	for i, r := range reqs {
		b.add(r.part, r.lease, i)
	}
	out := make([]error, len(reqs))
	results, errs := c.store.AckMany(ctx, b.parts, b.groups)
	for g, positions := range b.positions {
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
	by    byPartition[store.Lease]
	taken map[keys.Partition]bool
	errs  []error
}

func newRidingAcks(acks []ackReq) *ridingAcks {
	r := &ridingAcks{taken: map[keys.Partition]bool{}, errs: make([]error, len(acks))}
	for i, a := range acks {
		r.by.add(a.part, a.lease, i)
	}
	return r
}

// take returns the acks of partition p, to go with the reserve call to p.
func (r *ridingAcks) take(p keys.Partition) []store.Lease {
	g, ok := r.by.index[p]
	if !ok {
		return nil
	}
	r.taken[p] = true
	return r.by.groups[g]
}

// settle records the outcomes of partition p's acks.
func (r *ridingAcks) settle(p keys.Partition, errs []error) {
	if g, ok := r.by.index[p]; ok {
		for k, i := range r.by.positions[g] {
			r.errs[i] = errs[k]
		}
	}
}

// rest returns the acks of the partitions no reserve call took.
func (r *ridingAcks) rest() []ackReq {
	var out []ackReq
	for g, p := range r.by.parts {
		if !r.taken[p] {
			for _, l := range r.by.groups[g] {
				out = append(out, ackReq{part: p, lease: l})
			}
		}
	}
	return out
}

// settleRest records the outcomes of rest()'s acks, in its order.
func (r *ridingAcks) settleRest(errs []error) {
	k := 0
	for g, p := range r.by.parts {
		if !r.taken[p] {
			for _, i := range r.by.positions[g] {
				r.errs[i] = errs[k]
				k++
			}
		}
	}
}
