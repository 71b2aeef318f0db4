package main

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

// BenchmarkOneProducer puts the one-producer enqueue figures beside a bare PING, in one process
// and on one redis-server: with one call at a time, each rate is one over a round trip, and the
// round trip of this machine (a PING's) bounds them all.
//
//	go test -run '^$' -bench OneProducer -benchtime 10000x -count 3 .
func BenchmarkOneProducer(b *testing.B) {
	ctx := context.Background()
	srv, err := bench.StartRedis(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	floor, err := (&bench.Floor{RDB: rdb}).Open(ctx, "one")
	if err != nil {
		b.Fatal(err)
	}
	ac := asynq.NewClient(asynq.RedisClientOpt{Addr: srv.Addr})
	defer ac.Close()
	dq, err := delayq.New(ctx, rdb, delayq.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer dq.Close()
	each := func(call func(i int) error) func(n int) error {
		return func(n int) error {
			for i := range n {
				if err := call(i); err != nil {
					return err
				}
			}
			return nil
		}
	}
	// Each runs n calls one after another; the floor's as the harness's enqueue scenario makes them.
	runs := map[string]func(n int) error{
		"ping": each(func(int) error { return rdb.Ping(ctx).Err() }),
		"floor": func(n int) error {
			_, err := floor.Produce(ctx, bench.Plan{N: n, Delay: time.Hour})
			return err
		},
		"asynq": each(func(i int) error {
			_, err := ac.EnqueueContext(ctx, asynq.NewTask("one", bench.Body(i)), asynq.Queue("one"), asynq.ProcessIn(time.Hour))
			return err
		}),
		"delayq": each(func(i int) error {
			_, err := dq.Enqueue(ctx, "one", delayq.Spec{Body: bench.Body(i), Delay: time.Hour})
			return err
		}),
	}
	for _, name := range []string{"ping", "floor", "asynq", "delayq"} {
		b.Run(name, func(b *testing.B) {
			if err := runs[name](b.N); err != nil {
				b.Fatal(name + ": " + err.Error())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
