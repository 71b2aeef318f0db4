package bench

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Floor is not a queue but what Redis allows: each job is one EVALSHA of the least a delay
// queue must do (store the body, add the id to a sorted set by due time), sent by go-redis with
// nothing around it. It runs the scenarios that measure enqueue rates alone (enqueue and
// scaling), so that each queue's enqueue figures stand next to the floor of the same run.
//
// Without Pipelined, a job enqueued alone is one call and round trip of its own, and a batch one
// pipeline of its jobs' calls. With Pipelined, the floor is what Redis allows a client that
// coalesces, as delayq's Client does: while one pipeline is in flight, the calls of concurrent
// producers queue up and leave together in the next one.
type Floor struct {
	RDB redis.UniversalClient
	// Namespace prefixes the floor's keys, as delayq's namespace does its own, so that the
	// bench's clean-up of a shared Redis removes them. Defaults to "delayq-bench".
	Namespace string
	// Pipelined sends the calls of concurrent producers together, one pipeline in flight.
	Pipelined bool
}

// floorScript stores one job: KEYS[1] the bodies hash, KEYS[2] the due set; ARGV id, body,
// delay in ms. Its time comes from the server, as a delay queue's must.
var floorScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 1`)

// Name returns "floor", or "floor-pipelined" for the pipelined floor.
func (f *Floor) Name() string {
	if f.Pipelined {
		return "floor-pipelined"
	}
	return "floor"
}

// Version says what the floor is.
func (f *Floor) Version() string {
	if f.Pipelined {
		return "pipelined EVALSHA, no queue"
	}
	return "one EVALSHA per job, no queue"
}

// Supports reports that the floor runs the scenarios that measure enqueue rates alone.
func (f *Floor) Supports(scenario string) bool { return scenario == "enqueue" || scenario == "scaling" }

// Open returns the floor's queue for topic.
func (f *Floor) Open(ctx context.Context, topic string) (Queue, error) {
	if err := floorScript.Load(ctx, f.RDB).Err(); err != nil {
		return nil, err
	}
	// One hash tag: on a Cluster both keys are in one slot, as a queue's must be.
	ns := f.Namespace
	if ns == "" {
		ns = "delayq-bench"
	}
	tag := ns + ":{floor:" + topic + "}"
	q := &floorQueue{rdb: f.RDB, keys: []string{tag + ":jobs", tag + ":due"}}
	if f.Pipelined {
		q.pipe = &pipeliner{send: q.send}
	}
	return q, nil
}

type floorQueue struct {
	rdb      redis.UniversalClient
	keys     []string
	pipe     *pipeliner   // nil: every call goes out on its own
	produced atomic.Int64 // Produce calls so far: each names its jobs apart from the others'
}

func (q *floorQueue) MaxBatch() int { return 1000 }

func (q *floorQueue) Produce(ctx context.Context, p Plan) (Produced, error) {
	prefix := strconv.FormatInt(q.produced.Add(1), 10) + ":"
	return produce(ctx, p, q.MaxBatch(), func(ctx context.Context, from, to int) error {
		c := floorCall{plan: p, from: from, to: to, prefix: prefix}
		if q.pipe != nil {
			return q.pipe.do(ctx, c)
		}
		return q.send(ctx, []floorCall{c})[0]
	})
}

// send stores the jobs of calls in one pipeline, or one call for a lone job, and returns each
// call's error.
func (q *floorQueue) send(ctx context.Context, calls []floorCall) []error {
	if c := calls[0]; len(calls) == 1 && c.to-c.from == 1 {
		return []error{floorScript.EvalSha(ctx, q.rdb, q.keys, c.id(c.from), Body(c.from), c.delay(c.from)).Err()}
	}
	cmds := make([][]redis.Cmder, len(calls))
	_, err := q.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for k, c := range calls {
			for i := c.from; i < c.to; i++ {
				cmds[k] = append(cmds[k], floorScript.EvalSha(ctx, pipe, q.keys, c.id(i), Body(i), c.delay(i)))
			}
		}
		return nil
	})
	errs := make([]error, len(calls))
	for k := range calls {
		errs[k] = err
		for _, cmd := range cmds[k] {
			if cmd.Err() != nil {
				errs[k] = cmd.Err()
				break
			}
		}
	}
	return errs
}

func (q *floorQueue) Consume(context.Context, int) error { return ErrUnsupported }

func (q *floorQueue) Await(context.Context, int) (Awaited, error) { return Awaited{}, ErrUnsupported }

func (q *floorQueue) StopConsuming(context.Context) error { return nil }

func (q *floorQueue) Close(context.Context) error { return nil }

// floorCall is one enqueue call of a producer: jobs [from, to) of plan.
type floorCall struct {
	plan     Plan
	from, to int
	prefix   string // the Produce call's, so that its jobs are new ones
}

// id returns job i's id.
func (c floorCall) id(i int) string { return c.prefix + strconv.Itoa(i) }

// delay returns job i's delay in whole milliseconds, as the script takes it.
func (c floorCall) delay(i int) string {
	d := c.plan.Delay
	if !c.plan.At.IsZero() {
		d = max(0, time.Until(c.plan.DueAt(i)))
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// pipeliner sends the calls of concurrent producers together, one pipeline in flight, like a
// database's group commit. A call that finds no pipeline in flight goes out at once on its
// caller's goroutine, which then sends, pipeline after pipeline, every call that queued
// meanwhile, until none is left: no goroutine hand-off, no timer. A producer has one call
// outstanding at a time, so a pipeline carries at most one call of each.
type pipeliner struct {
	send func(ctx context.Context, calls []floorCall) []error

	mu      sync.Mutex
	queue   []pendingCall
	sending bool
}

type pendingCall struct {
	call floorCall
	err  *error
	done chan struct{}
}

func (p *pipeliner) do(ctx context.Context, c floorCall) error {
	p.mu.Lock()
	if p.sending {
		var err error
		done := make(chan struct{})
		p.queue = append(p.queue, pendingCall{call: c, err: &err, done: done})
		p.mu.Unlock()
		<-done
		return err
	}
	p.sending = true
	p.mu.Unlock()
	own := p.send(ctx, []floorCall{c})[0]
	for {
		p.mu.Lock()
		queued := p.queue
		p.queue = nil
		if len(queued) == 0 {
			p.sending = false
			p.mu.Unlock()
			return own
		}
		p.mu.Unlock()
		calls := make([]floorCall, len(queued))
		for i, pc := range queued {
			calls[i] = pc.call
		}
		// Another producer's calls must not fail because this caller's context ended.
		errs := p.send(context.WithoutCancel(ctx), calls)
		for i, pc := range queued {
			*pc.err = errs[i]
			close(pc.done)
		}
	}
}
