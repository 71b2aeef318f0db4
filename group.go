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
	nows, added, err := c.store.EnqueueMany(ctx, b.parts, b.groups)
	for g, positions := range b.positions {
		for k, i := range positions {
			switch {
			case err != nil:
				out[i].err = err
			case added[g][k].Err != nil:
				out[i].err = added[g][k].Err
			default:
				out[i].job = newJob(reqs[i].topic, reqs[i].job, nows[g], added[g][k].RunAtMs)
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
	results, err := c.store.AckMany(ctx, b.parts, b.groups)
	for g, positions := range b.positions {
		for k, i := range positions {
			if err != nil {
				out[i] = err
			} else {
				out[i] = results[g][k]
			}
		}
	}
	return out
}
