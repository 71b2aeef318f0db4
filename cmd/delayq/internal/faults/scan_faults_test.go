//go:build faults

package faults_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/keys"
)

// scan reads every job of the topic straight from Redis, one MULTI per partition so that each
// partition is read at one instant, and checks the layout: every job record sits in exactly
// one of the delayed, ready, ready:push, reserved and dead sets, every set member has a
// record, the reserved jobs are exactly those with a lease token, and every record reads back
// whole with the body its producer sent. It returns each
// job's set ("delayed", "ready", "reserved" or "dead") and the inconsistencies found.
func (h *harness) scan() (map[string]string, []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	present := map[string]string{}
	var problems []string
	n, err := h.rdb.HGet(ctx, keys.Topics(h.ns), h.topic).Int()
	if errors.Is(err, redis.Nil) {
		return present, nil
	}
	if err != nil {
		return nil, []string{fmt.Sprintf("partition count: %v", err)}
	}
	for part := range n {
		p := keys.For(h.ns, h.topic, part)
		var jobs, leased *redis.StringSliceCmd
		sets := map[string]*redis.StringSliceCmd{}
		_, err := h.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			jobs = pipe.HKeys(ctx, p.Jobs())
			leased = pipe.HKeys(ctx, p.Leases())
			sets["delayed"] = pipe.ZRange(ctx, p.Delayed(), 0, -1)
			sets["ready"] = pipe.ZRange(ctx, p.Ready(), 0, -1)
			sets["ready:push"] = pipe.ZRange(ctx, p.ReadyPush(), 0, -1)
			sets["reserved"] = pipe.ZRange(ctx, p.Reserved(), 0, -1)
			sets["dead"] = pipe.ZRange(ctx, p.Dead(), 0, -1)
			return nil
		})
		if err != nil {
			return nil, []string{fmt.Sprintf("partition %d: %v", part, err)}
		}
		problems = append(problems, leaseProblems(sets["reserved"].Val(), leased.Val())...)
		where := map[string][]string{}
		for name, cmd := range sets {
			for _, id := range cmd.Val() {
				where[id] = append(where[id], name)
			}
		}
		for _, id := range jobs.Val() {
			switch in := where[id]; len(in) {
			case 1:
				present[id] = in[0]
				if in[0] == "ready:push" {
					present[id] = "ready"
				}
			case 0:
				problems = append(problems, fmt.Sprintf("job %s has a record but is in no set", id))
				present[id] = "lost-in-no-set"
			default:
				problems = append(problems, fmt.Sprintf("job %s is in several sets: %v", id, in))
				present[id] = in[0]
			}
			delete(where, id)
		}
		for id, in := range where {
			problems = append(problems, fmt.Sprintf("%v holds %s, which has no record", in, id))
		}
	}
	for id := range present {
		j, err := h.c.Get(ctx, h.topic, id)
		if err != nil {
			problems = append(problems, fmt.Sprintf("job %s: Get: %v", id, err))
			continue
		}
		if err := faults.CheckBody(id, j.Body); err != nil {
			problems = append(problems, fmt.Sprintf("job %s: %v", id, err))
		}
	}
	return present, problems
}

// leaseProblems reports reserved jobs without a lease token and tokens of jobs not reserved.
func leaseProblems(reserved, leased []string) []string {
	var out []string
	has := map[string]bool{}
	for _, id := range leased {
		has[id] = true
	}
	for _, id := range reserved {
		if !has[id] {
			out = append(out, fmt.Sprintf("job %s is reserved without a lease token", id))
		}
		delete(has, id)
	}
	for id := range has {
		out = append(out, fmt.Sprintf("job %s has a lease token but is not reserved", id))
	}
	return out
}
