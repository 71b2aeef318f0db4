package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

// asynqVersion is the asynq release pinned in go.mod.
const asynqVersion = "v0.26.0"

// The polling intervals of asynq-tuned, for precision; asynq's defaults are 5 s and 1 s.
const (
	asynqDelayedCheck = 100 * time.Millisecond
	asynqTaskCheck    = 10 * time.Millisecond
)

// asynqContestant runs hibiken/asynq as its README shows: an asynq.Client made from a
// RedisClientOpt enqueues with ProcessIn or ProcessAt, an asynq.Server made from one consumes,
// and an asynq.Inspector tells when a queue is empty. Each makes and closes its own go-redis
// client, with asynq's defaults (a pool of 10 connections per CPU).
type asynqContestant struct {
	redis asynq.RedisClientOpt
	// tuned sets the Server's DelayedTaskCheckInterval and TaskCheckInterval far below their
	// defaults, which favours asynq's precision; asynq-tuned runs the scenarios with consumers
	// alone, beside asynq at its defaults.
	tuned bool
}

func (a *asynqContestant) Name() string {
	if a.tuned {
		return "asynq-tuned"
	}
	return "asynq"
}

func (a *asynqContestant) Version() string { return asynqVersion }

// Supports reports that asynq-tuned runs only the scenarios whose figures its polling changes:
// those with consumers. Enqueue and memory do not involve the Server.
func (a *asynqContestant) Supports(scenario string) bool {
	switch scenario {
	case "precision", "precision-load", "e2e", "burst":
		return true
	}
	return !a.tuned
}

func (a *asynqContestant) Open(_ context.Context, topic string) (bench.Queue, error) {
	return &asynqQueue{
		a:         a,
		topic:     topic,
		client:    asynq.NewClient(a.redis),
		inspector: asynq.NewInspector(a.redis),
	}, nil
}

type asynqQueue struct {
	a         *asynqContestant
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
	cfg := asynq.Config{
		Concurrency: concurrency,
		Queues:      map[string]int{q.topic: 1},
		// Warnings and errors still reach stderr; the start and stop notices do not.
		LogLevel: asynq.WarnLevel,
	}
	if q.a.tuned {
		cfg.DelayedTaskCheckInterval, cfg.TaskCheckInterval = asynqDelayedCheck, asynqTaskCheck
	}
	q.server = asynq.NewServer(q.a.redis, cfg)
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

func (q *asynqQueue) Close(ctx context.Context) error {
	return errors.Join(q.StopConsuming(ctx), q.client.Close(), q.inspector.Close())
}
