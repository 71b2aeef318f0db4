package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

// measure starts a redis-server and runs every scenario for every queue, o.runs times, each in
// a process of its own.
func measure(ctx context.Context, o options, dataDir string, log *slog.Logger, stderr io.Writer) (*report, error) {
	scenarios, err := bench.Select(o.scenarios)
	if err != nil {
		return nil, err
	}
	var contestants []string
	for name := range strings.SplitSeq(o.contestants, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(contestantNames, name) {
			return nil, fmt.Errorf("unknown queue %q: the queues and floors are %s", name, strings.Join(contestantNames, ", "))
		}
		contestants = append(contestants, name)
	}
	if slices.Contains(contestants, "bullmq") {
		if err := installBullMQ(ctx, filepath.Join(dataDir, "bullmq"), stderr); err != nil {
			return nil, err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if o.serverBin == "" {
		// The http scenario runs delayq's server as a process of its own, so that its CPU time
		// per request can be read apart from the load generator's.
		dir, err := os.MkdirTemp("", "delayq-peers-server-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.serverBin = filepath.Join(dir, "delayq")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.serverBin, "./cmd/delayq")
		build.Dir, build.Stderr = o.root, stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("building delayq for the http scenario: %w", err)
		}
	}
	srv, err := bench.StartRedis(ctx)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	// The harness's own client reads INFO and empties Redis between processes; it sends no job.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	log.Info("peers: started redis-server", "addr", srv.Addr)

	rep := &report{
		Started:     time.Now().UTC(),
		Command:     commandLine(o),
		Machine:     describeMachine(),
		Quick:       o.quick,
		Runs:        o.runs,
		Contestants: contestants,
		Versions:    map[string]string{},
	}
	rep.Versions["redis"] = bench.ServerInfo(ctx, rdb, "redis_version")
	rep.Versions["go"] = goVersion()
	rep.Versions["delayq"] = gitRevision(ctx, filepath.Dir(filepath.Dir(dataDir)))
	rep.Versions["asynq"] = asynqVersion
	rep.Hz = bench.ServerInfo(ctx, rdb, "hz")

	flush := bench.Flusher(rdb)
	for run := range o.runs {
		for _, s := range scenarios {
			// Rotate the order of the queues from run to run, so that none always goes first.
			order := slices.Clone(contestants)
			k := run % len(order)
			order = append(order[k:], order[:k]...)
			for _, c := range order {
				if !supports(c, s.Name) {
					continue
				}
				// Whatever a process left behind, the next starts on an empty Redis.
				if err := flush(ctx); err != nil {
					return nil, err
				}
				log.Info("peers: running", "run", run+1, "scenario", s.Name, "queue", c)
				out, err := runChild(ctx, self, o, c, s.Name, run+1, srv.Addr, stderr)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if err != nil {
					log.Warn("peers: contestant process failed", "scenario", s.Name, "queue", c, "err", err)
					out.Result = bench.Result{Scenario: s.Name, Contestant: c, Error: err.Error()}
				}
				for k, v := range out.Versions {
					rep.Versions[k] = v
				}
				rep.Results = append(rep.Results, runResult{Run: run + 1, Result: out.Result})
			}
		}
	}
	if err := flush(ctx); err != nil {
		return nil, err
	}
	rep.Finished = time.Now().UTC()
	return rep, nil
}

// childOutput is what a contestant's process writes on stdout, as one JSON object.
type childOutput struct {
	// PID is the process's id, which tells processes apart in tests.
	PID int `json:"pid"`
	// Versions are those the process learned, such as BullMQ's and Node's.
	Versions map[string]string `json:"versions,omitempty"`
	Result   bench.Result      `json:"result"`
}

// runChild runs scenario for contestant in a new process of the harness's binary self, and
// returns what it measured. The child's log goes to stderr.
func runChild(ctx context.Context, self string, o options, contestant, scenario string, run int, redisAddr string, stderr io.Writer) (childOutput, error) {
	args := []string{
		"-contestant", contestant, "-scenario", scenario, "-run", strconv.Itoa(run),
		"-redis", redisAddr, "-root", o.root, "-server-bin", o.serverBin,
	}
	if o.quick {
		args = append(args, "-quick")
	}
	cmd := exec.CommandContext(ctx, self, args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	// On an interrupt the child stops its queue and Node driver before it exits.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	var out childOutput
	if err := cmd.Run(); err != nil {
		return out, fmt.Errorf("%s -contestant %s -scenario %s: %w", filepath.Base(self), contestant, scenario, err)
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return out, fmt.Errorf("reading the result of %s in %s: %w", contestant, scenario, err)
	}
	return out, nil
}

func commandLine(o options) string {
	cmd := "make bench-peers"
	if o.runs != 3 || o.quick || o.scenarios != "all" || o.contestants != defaultQueues {
		cmd = fmt.Sprintf("cd cmd/delayq/bench/peers && go run . -runs %d", o.runs)
		if o.quick {
			cmd += " -quick"
		}
		if o.scenarios != "all" {
			cmd += " -scenarios " + o.scenarios
		}
		if o.contestants != defaultQueues {
			cmd += " -queues " + o.contestants
		}
	}
	return cmd
}
