package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/bench"
)

// asynqVersion is the asynq release pinned in go.mod.
const asynqVersion = "v0.26.0"

// Settings that give asynq its best precision; its defaults are 5s and 1s.
const (
	asynqDelayedCheck = 100 * time.Millisecond
	asynqTaskCheck    = 10 * time.Millisecond
)

// asynqContestant runs hibiken/asynq: Client.Enqueue with ProcessIn or ProcessAt to produce,
// an asynq.Server to consume.
type asynqContestant struct {
	rdb redis.UniversalClient
}

func (a *asynqContestant) Name() string    { return "asynq" }
func (a *asynqContestant) Version() string { return asynqVersion }

func (a *asynqContestant) Open(_ context.Context, topic string) (bench.Queue, error) {
	return &asynqQueue{
		rdb:       a.rdb,
		topic:     topic,
		client:    asynq.NewClientFromRedisClient(a.rdb),
		inspector: asynq.NewInspectorFromRedisClient(a.rdb),
	}, nil
}

type asynqQueue struct {
	rdb       redis.UniversalClient
	topic     string
	client    *asynq.Client
	inspector *asynq.Inspector
	server    *asynq.Server
	rec       bench.Recorder
}

// MaxBatch is 1: asynq has no batch enqueue.
func (q *asynqQueue) MaxBatch() int { return 1 }

func (q *asynqQueue) Produce(ctx context.Context, p bench.Plan) (bench.Produced, error) {
	return bench.Produce(ctx, p, 1, func(ctx context.Context, i, _ int) error {
		opts := []asynq.Option{asynq.Queue(q.topic)}
		switch {
		case !p.At.IsZero():
			opts = append(opts, asynq.ProcessAt(p.DueAt(i)))
		case p.Delay > 0:
			opts = append(opts, asynq.ProcessIn(p.Delay))
		}
		_, err := q.client.EnqueueContext(ctx, asynq.NewTask("bench", bench.Body(i)), opts...)
		return err
	})
}

func (q *asynqQueue) Consume(_ context.Context, concurrency int) error {
	q.server = asynq.NewServerFromRedisClient(q.rdb, asynq.Config{
		Concurrency:              concurrency,
		Queues:                   map[string]int{q.topic: 1},
		DelayedTaskCheckInterval: asynqDelayedCheck,
		TaskCheckInterval:        asynqTaskCheck,
		LogLevel:                 asynq.FatalLevel,
		ShutdownTimeout:          10 * time.Second,
	})
	return q.server.Start(asynq.HandlerFunc(func(_ context.Context, t *asynq.Task) error {
		received := time.Now()
		i, err := bench.BodyIndex(t.Payload())
		if err != nil {
			return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
		}
		q.rec.Add(bench.Delivery{Index: i, Received: received})
		return nil
	}))
}

func (q *asynqQueue) Await(ctx context.Context, n int) (bench.Awaited, error) {
	return q.rec.Await(ctx, n, func(context.Context) (bool, error) {
		info, err := q.inspector.GetQueueInfo(q.topic)
		if err != nil {
			return false, err
		}
		return info.Pending+info.Active+info.Scheduled+info.Retry == 0, nil
	})
}

func (q *asynqQueue) StopConsuming(context.Context) error {
	if q.server != nil {
		q.server.Shutdown()
		q.server = nil
	}
	return nil
}

func (q *asynqQueue) Close(ctx context.Context) error { return q.StopConsuming(ctx) }
