// Command peers runs delayq's benchmark scenarios against delayq and its peers — hibiken/asynq
// and BullMQ — and against two floors (what Redis allows with no queue around it), on one
// redis-server it starts itself, several runs each, side by side, and writes BENCHMARKS.md with
// the medians, the ratios and charts.
//
// Each scenario of each contestant runs in a process of its own: the harness starts itself
// again with -contestant, which runs that one scenario on its own Redis clients and writes the
// result as JSON on stdout (BullMQ's Go side drives a Node process of its own). No queue shares
// a process, a client, leftover goroutines or a Go scheduler with another.
//
//	cd cmd/delayq/bench/peers && go run .            # or: make bench-peers
//	go run . -quick -runs 1               # a smoke run; writes to a temporary directory
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
	"strings"
	"syscall"
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
	// The command line of a contestant's own process, which the harness starts.
	contestant string
	scenario   string
	run        int
	redis      string
	// serverBin is the delayq binary the http scenario runs as `delayq server`, a process of
	// its own whose CPU time it reads; the harness builds it when empty.
	serverBin string
}

// defaultQueues are the queues and floors a run measures unless -queues says otherwise.
const defaultQueues = "delayq,asynq,asynq-tuned,bullmq,floor,floor-pipelined"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.runs, "runs", 3, "runs of every scenario for every queue")
	fs.BoolVar(&o.quick, "quick", false, "small counts, for a smoke run; the report, results and charts go beside -out, or to a temporary directory")
	fs.StringVar(&o.scenarios, "scenarios", "all", "comma-separated scenarios")
	fs.StringVar(&o.contestants, "queues", defaultQueues, "comma-separated queues and floors to run")
	fs.StringVar(&o.root, "root", "", "the delayq repository's root; found from the working directory when empty")
	fs.StringVar(&o.out, "out", "", "report to write; defaults to BENCHMARKS.md at the root")
	fs.StringVar(&o.from, "from", "", "rewrite the report from this results file instead of running")
	fs.StringVar(&o.contestant, "contestant", "", "internal: run one scenario for this queue in this process and write its result as JSON")
	fs.StringVar(&o.scenario, "scenario", "", "internal: the scenario -contestant runs")
	fs.IntVar(&o.run, "run", 0, "internal: the number of the run -contestant takes part in")
	fs.StringVar(&o.redis, "redis", "", "internal: the address of the redis-server -contestant uses")
	fs.StringVar(&o.serverBin, "server-bin", "", "the delayq binary the http scenario runs as its server; built from the repository when empty")
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
	dataDir := filepath.Join(o.root, "cmd", "delayq", "bench", "peers")
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if o.contestant != "" {
		return runContestant(ctx, o, dataDir, log, stdout, stderr)
	}
	chartDir := filepath.Join(dataDir, "charts")
	switch {
	case o.out != "":
	case o.quick:
		// A smoke run leaves the committed report, results and charts alone.
		tmp, err := os.MkdirTemp("", "delayq-peers-")
		if err != nil {
			return err
		}
		o.out = filepath.Join(tmp, "BENCHMARKS.md")
	default:
		o.out = filepath.Join(o.root, "BENCHMARKS.md")
	}
	if o.quick {
		chartDir = filepath.Join(filepath.Dir(o.out), "charts")
	}

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
		resultsPath := filepath.Join(dataDir, "results.json")
		if o.quick {
			resultsPath = filepath.Join(filepath.Dir(o.out), "results.json")
		}
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		if err := os.WriteFile(resultsPath, b, 0o644); err != nil {
			return err
		}
	}
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
	md := renderMarkdown(rep, filepath.ToSlash(rel), string(analysis)) + keptSection(o.out)
	if err := os.WriteFile(o.out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and the charts in %s\n", o.out, chartDir)
	return nil
}

// keptSection returns the section that make bench-beanstalkd writes at the end of the report
// (between its marker comments) as the report at path holds it, so that rewriting the report
// keeps it; "" when there is none.
func keptSection(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := string(b)
	i, j := strings.Index(s, "<!-- bench-beanstalkd:begin -->"), strings.Index(s, "<!-- bench-beanstalkd:end -->")
	if i < 0 || j < i {
		return ""
	}
	return "\n" + s[i:j] + "<!-- bench-beanstalkd:end -->\n"
}

// findRoot walks up from the working directory to the repository holding cmd/delayq/bench/peers.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "cmd", "delayq", "bench", "peers", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (a directory with cmd/delayq/bench/peers/go.mod); pass -root")
		}
		dir = parent
	}
}
