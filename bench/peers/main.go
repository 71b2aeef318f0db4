// Command peers runs delayq's benchmark scenarios against delayq and its peers — hibiken/asynq
// and BullMQ — on one redis-server it starts itself, several runs each, side by side, and
// writes BENCHMARKS.md with the medians, the ratios and charts.
//
//	cd bench/peers && go run .            # or: make bench-peers
//	go run . -quick -runs 1 -out /tmp/b.md
//	go run . -from results.json           # rewrite the report from saved results
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	runs        int
	quick       bool
	scenarios   string
	contestants string
	root        string
	out         string
	from        string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.runs, "runs", 3, "runs of every scenario for every queue")
	fs.BoolVar(&o.quick, "quick", false, "small counts, for a smoke run")
	fs.StringVar(&o.scenarios, "scenarios", "all", "comma-separated scenarios")
	fs.StringVar(&o.contestants, "queues", "delayq,asynq,bullmq", "comma-separated queues to run")
	fs.StringVar(&o.root, "root", "", "the delayq repository's root; found from the working directory when empty")
	fs.StringVar(&o.out, "out", "", "report to write; defaults to BENCHMARKS.md at the root")
	fs.StringVar(&o.from, "from", "", "rewrite the report from this results file instead of running")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.root == "" {
		root, err := findRoot()
		if err != nil {
			return err
		}
		o.root = root
	}
	if o.out == "" {
		o.out = filepath.Join(o.root, "BENCHMARKS.md")
	}
	dataDir := filepath.Join(o.root, "bench", "peers")
	resultsPath := filepath.Join(dataDir, "results.json")
	log := slog.New(slog.NewTextHandler(stderr, nil))

	var rep *report
	if o.from != "" {
		b, err := os.ReadFile(o.from)
		if err != nil {
			return err
		}
		rep = &report{}
		if err := json.Unmarshal(b, rep); err != nil {
			return fmt.Errorf("%s: %w", o.from, err)
		}
	} else {
		var err error
		rep, err = measure(ctx, o, dataDir, log, stderr)
		if err != nil {
			return err
		}
		if !o.quick {
			b, err := json.Marshal(rep)
			if err != nil {
				return err
			}
			if err := os.WriteFile(resultsPath, b, 0o644); err != nil {
				return err
			}
		}
	}
	chartDir := filepath.Join(dataDir, "charts")
	if err := writeCharts(rep, chartDir); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(o.out), chartDir)
	if err != nil {
		rel = chartDir
	}
	// analysis.md explains, with the commands that measured it, why a target is missed.
	analysis, err := os.ReadFile(filepath.Join(dataDir, "analysis.md"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	md := renderMarkdown(rep, filepath.ToSlash(rel), string(analysis))
	if err := os.WriteFile(o.out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and the charts in %s\n", o.out, chartDir)
	return nil
}

// findRoot walks up from the working directory to the repository holding bench/peers.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "bench", "peers", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (a directory with bench/peers/go.mod); pass -root")
		}
		dir = parent
	}
}

// measure starts a redis-server and runs every scenario for every queue, o.runs times.
func measure(ctx context.Context, o options, dataDir string, log *slog.Logger, stderr io.Writer) (*report, error) {
	scenarios, err := bench.Select(o.scenarios)
	if err != nil {
		return nil, err
	}
	srv, err := bench.StartRedis(ctx)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 128})
	defer rdb.Close()
	log.Info("peers: started redis-server", "addr", srv.Addr)

	rep := &report{
		Started:  time.Now().UTC(),
		Command:  commandLine(o),
		Machine:  describeMachine(),
		Quick:    o.quick,
		Runs:     o.runs,
		Versions: map[string]string{},
	}
	rep.Versions["redis"] = bench.ServerInfo(ctx, rdb, "redis_version")
	rep.Versions["go"] = goVersion()
	rep.Versions["delayq"] = gitRevision(ctx, filepath.Dir(filepath.Dir(dataDir)))
	rep.Versions["asynq"] = asynqVersion
	rep.Hz = bench.ServerInfo(ctx, rdb, "hz")

	var contestants []bench.Contestant
	for name := range strings.SplitSeq(o.contestants, ",") {
		switch strings.TrimSpace(name) {
		case "delayq":
			contestants = append(contestants, &bench.Delayq{RDB: rdb, Config: delayq.Config{}, Revision: rep.Versions["delayq"]})
		case "asynq":
			contestants = append(contestants, &asynqContestant{rdb: rdb})
		case "floor":
			contestants = append(contestants, &bench.Floor{RDB: rdb})
		case "bullmq":
			b, err := startBullMQ(ctx, filepath.Join(dataDir, "bullmq"), srv.URL(), stderr)
			if err != nil {
				return nil, err
			}
			defer b.Stop()
			rep.Versions["bullmq"] = b.version
			rep.Versions["node"] = b.node
			contestants = append(contestants, b)
		default:
			return nil, fmt.Errorf("unknown queue %q: the queues are delayq, asynq, bullmq and floor", name)
		}
	}
	for _, c := range contestants {
		rep.Contestants = append(rep.Contestants, c.Name())
	}
	env := &bench.Env{RDB: rdb, Reset: bench.Flusher(rdb), Quick: o.quick, Log: log}
	for run := range o.runs {
		for _, s := range scenarios {
			// Rotate the order of the queues from run to run, so that none always goes first.
			order := slices.Clone(contestants)
			k := run % len(order)
			order = append(order[k:], order[:k]...)
			for _, c := range order {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if !bench.Supports(c, s.Name) {
					continue
				}
				r := bench.RunOne(ctx, env, s, c)
				rep.Results = append(rep.Results, runResult{Run: run + 1, Result: r})
			}
		}
	}
	if err := env.Reset(ctx); err != nil {
		return nil, err
	}
	rep.Finished = time.Now().UTC()
	return rep, nil
}

func commandLine(o options) string {
	cmd := "make bench-peers"
	if o.runs != 3 || o.quick || o.scenarios != "all" || o.contestants != "delayq,asynq,bullmq" {
		cmd = fmt.Sprintf("cd bench/peers && go run . -runs %d", o.runs)
		if o.quick {
			cmd += " -quick"
		}
		if o.scenarios != "all" {
			cmd += " -scenarios " + o.scenarios
		}
		if o.contestants != "delayq,asynq,bullmq" {
			cmd += " -queues " + o.contestants
		}
	}
	return cmd
}
