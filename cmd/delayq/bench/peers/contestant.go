package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

// contestantNames are the queues and floors the harness runs, each in processes of its own.
var contestantNames = []string{"delayq", "asynq", "asynq-tuned", "bullmq", "floor", "floor-pipelined"}

// supports reports whether the contestant called name runs scenario.
func supports(name, scenario string) bool {
	switch name {
	case "floor":
		return bench.Supports(&bench.Floor{}, scenario)
	case "floor-pipelined":
		return bench.Supports(&bench.Floor{Pipelined: true}, scenario)
	case "asynq-tuned":
		return bench.Supports(&asynqContestant{tuned: true}, scenario)
	}
	return true
}

// runContestant is the harness's child process: it runs o.scenario for o.contestant on the
// redis-server at o.redis, with clients of its own, and writes a childOutput on stdout.
func runContestant(ctx context.Context, o options, dataDir string, log *slog.Logger, stdout, stderr io.Writer) error {
	scenarios, err := bench.Select(o.scenario)
	if err != nil {
		return err
	}
	if len(scenarios) != 1 || o.redis == "" {
		return errors.New("-contestant takes one -scenario and -redis")
	}
	c, closeContestant, err := newContestant(ctx, o.contestant, o.redis, filepath.Join(dataDir, "bullmq"), stderr)
	if err != nil {
		return err
	}
	defer closeContestant()
	// The scenarios read INFO, SLOWLOG and TIME, and empty Redis, through a client of their
	// own, apart from the queue's.
	rdb := redis.NewClient(&redis.Options{Addr: o.redis})
	defer rdb.Close()
	env := &bench.Env{
		RDB:      rdb,
		Reset:    bench.Flusher(rdb),
		Quick:    o.quick,
		Server:   o.serverBin,
		RedisURL: "redis://" + o.redis,
		Log:      log.With("run", o.run),
	}
	if err := warmUp(ctx, c, o.quick); err != nil {
		return fmt.Errorf("warming %s up: %w", o.contestant, err)
	}
	if err := env.Reset(ctx); err != nil {
		return err
	}
	out := childOutput{PID: os.Getpid(), Result: bench.RunOne(ctx, env, scenarios[0], c)}
	if v, ok := c.(interface{ versions() map[string]string }); ok {
		out.Versions = v.versions()
	}
	return json.NewEncoder(stdout).Encode(out)
}

// newContestant returns the contestant called name, set up as its documentation shows, on the
// redis-server at addr; close releases it.
func newContestant(ctx context.Context, name, addr, bullmqDir string, stderr io.Writer) (bench.Contestant, func(), error) {
	switch name {
	case "delayq":
		// As delayq's README shows: a go-redis client with its defaults, a delayq.Client on it.
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		return &bench.Delayq{RDB: rdb, Config: delayq.Config{}}, func() { _ = rdb.Close() }, nil
	case "asynq", "asynq-tuned":
		// asynq makes its own go-redis clients from RedisClientOpt, with its defaults.
		return &asynqContestant{redis: asynq.RedisClientOpt{Addr: addr}, tuned: name == "asynq-tuned"}, func() {}, nil
	case "bullmq":
		b, err := startBullMQ(ctx, bullmqDir, "redis://"+addr, stderr)
		if err != nil {
			return nil, nil, err
		}
		return b, b.Stop, nil
	case "floor", "floor-pipelined":
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		return &bench.Floor{RDB: rdb, Pipelined: name == "floor-pipelined"}, func() { _ = rdb.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown queue %q", name)
}

// warmUp sends jobs through c on a topic of its own before the scenario, so that no figure of a
// new process includes opening connections or, in Node, compiling the code that enqueues and
// delivers: 16 producers enqueue jobs one per call, due at once, and 16 handlers take them.
func warmUp(ctx context.Context, c bench.Contestant, quick bool) error {
	n := 2000
	if quick {
		n = 200
	}
	q, err := c.Open(ctx, "bench-warmup")
	if err != nil {
		return err
	}
	defer q.Close(context.WithoutCancel(ctx))
	if _, err := q.Produce(ctx, bench.Plan{N: n, Producers: 16}); err != nil {
		return err
	}
	if err := q.Consume(ctx, 16); errors.Is(err, bench.ErrUnsupported) {
		return nil // a floor: there is nothing to consume
	} else if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := q.Await(actx, n); err != nil {
		return err
	}
	return q.StopConsuming(ctx)
}
