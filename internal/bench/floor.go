package bench

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Floor is not a queue but what Redis allows: each job is one EVALSHA of the least a delay
// queue must do (store the body, add the id to a sorted set by due time), sent by go-redis with
// nothing around it — one call per job, or a pipeline of them for a batch. It runs the enqueue
// scenario only, so that each queue's enqueue figures stand next to the floor of the same run.
type Floor struct {
	RDB redis.UniversalClient
	// Namespace prefixes the floor's keys, as delayq's namespace does its own, so that the
	// bench's clean-up of a shared Redis removes them. Defaults to "delayq-bench".
	Namespace string
}

// floorScript stores one job: KEYS[1] the bodies hash, KEYS[2] the due set; ARGV id, body,
// delay in ms. Its time comes from the server, as a delay queue's must.
var floorScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 1`)

// Name returns "floor".
func (f *Floor) Name() string { return "floor" }

// Version says what the floor is.
func (f *Floor) Version() string { return "one EVALSHA per job, no queue" }

// Supports reports that the floor runs the enqueue scenario alone.
func (f *Floor) Supports(scenario string) bool { return scenario == "enqueue" }

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
	return &floorQueue{rdb: f.RDB, keys: []string{tag + ":jobs", tag + ":due"}}, nil
}

type floorQueue struct {
	rdb  redis.UniversalClient
	keys []string
}

func (q *floorQueue) MaxBatch() int { return 1000 }

func (q *floorQueue) Produce(ctx context.Context, p Plan) (Produced, error) {
	delay := strconv.FormatInt(p.Delay.Milliseconds(), 10)
	return produce(ctx, p, q.MaxBatch(), func(ctx context.Context, from, to int) error {
		if to-from == 1 {
			return floorScript.EvalSha(ctx, q.rdb, q.keys, strconv.Itoa(from), Body(from), delay).Err()
		}
		_, err := q.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i := from; i < to; i++ {
				floorScript.EvalSha(ctx, pipe, q.keys, strconv.Itoa(i), Body(i), delay)
			}
			return nil
		})
		return err
	})
}

func (q *floorQueue) Consume(context.Context, int) error { return ErrUnsupported }

func (q *floorQueue) Await(context.Context, int) (Awaited, error) { return Awaited{}, ErrUnsupported }

func (q *floorQueue) StopConsuming(context.Context) error { return nil }

func (q *floorQueue) Close(context.Context) error { return nil }
