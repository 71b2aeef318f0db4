// Command beanstalkd measures delayq's beanstalkd front end against the real beanstalkd, side by
// side in one run, through the same client (go-beanstalk): put, then reserve+delete, in jobs/s,
// with 1 and with 50 connections. Both servers are durable: delayq runs its embedded
// redis-server with AOF (appendfsync everysec), beanstalkd runs with its binlog (-b), once at its
// default fsync setting (at most every 50 ms) and once with -f 1000 (at most once a second, the
// closest to everysec).
//
// It starts every server itself, on free loopback ports, with fresh directories, and stops them
// by their process ids. It writes a markdown report to stdout and, with -write, into the
// section of BENCHMARKS.md between its marker comments.
//
//	go run ./cmd/delayq/bench/beanstalkd -n 20000 -runs 3 -write BENCHMARKS.md
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type options struct {
	jobs    int
	runs    int
	conns   []int
	delayq  string // a built delayq binary; empty: go build ./cmd/delayq into a temporary directory
	write   string // BENCHMARKS.md to update; empty: stdout only
	timeout time.Duration
}

func main() {
	var o options
	var conns string
	flag.IntVar(&o.jobs, "n", 20000, "jobs each scenario puts and then reserves and deletes")
	flag.IntVar(&o.runs, "runs", 3, "runs of each scenario; the order of the contestants rotates from run to run")
	flag.StringVar(&conns, "conns", "1,50", "connections, each with its own goroutine and go-beanstalk Conn, comma-separated")
	flag.StringVar(&o.delayq, "delayq", "", "delayq binary to run; empty: build ./cmd/delayq")
	flag.StringVar(&o.write, "write", "", "also write the report into this file (BENCHMARKS.md), between its marker comments")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "bound on the whole run")
	flag.Parse()
	for _, s := range strings.Split(conns, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < 1 || c > 1000 {
			fail(fmt.Errorf("-conns %q: want numbers from 1 to 1000", conns))
		}
		o.conns = append(o.conns, c)
	}
	if o.jobs < 1 || o.jobs > 1_000_000 || o.runs < 1 || o.runs > 10 {
		fail(fmt.Errorf("-n %d -runs %d: want 1 to 1,000,000 jobs and 1 to 10 runs", o.jobs, o.runs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "beanstalkd bench:", err)
	os.Exit(1)
}

func run(ctx context.Context, o options) error {
	tmp, err := os.MkdirTemp("", "dqbb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.delayq == "" {
		o.delayq = filepath.Join(tmp, "delayq")
		logf("building %s", o.delayq)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", o.delayq, "./cmd/delayq")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/delayq: %w", err)
		}
	}

	contestants := []*contestant{
		{name: "delayq", start: func(dir string) (*server, error) { return startDelayq(ctx, o.delayq, dir) }},
		{name: "beanstalkd -b", start: func(dir string) (*server, error) { return startBeanstalkd(ctx, dir) }},
		{name: "beanstalkd -b -f 1000", start: func(dir string) (*server, error) { return startBeanstalkd(ctx, dir, "-f", "1000") }},
	}
	for i, c := range contestants {
		dir := filepath.Join(tmp, strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		s, err := c.start(dir)
		if err != nil {
			stopAll(contestants)
			return fmt.Errorf("%s: %w", c.name, err)
		}
		c.srv = s
		logf("%s on %s (pids %v)", c.name, s.addr, s.pids())
	}
	defer stopAll(contestants)

	rep := report{opts: o, started: time.Now(), contestants: contestants}
	for _, c := range contestants {
		// A warm-up, so that no figure includes the first connections or script loads.
		if _, err := measure(ctx, c.srv, 50, 2000); err != nil {
			return fmt.Errorf("%s: warm-up: %w", c.name, err)
		}
	}
	for _, conns := range o.conns {
		for r := range o.runs {
			for i := range contestants {
				c := contestants[(i+r)%len(contestants)]
				res, err := measure(ctx, c.srv, conns, o.jobs)
				if err != nil {
					return fmt.Errorf("%s, %d connections, run %d: %w", c.name, conns, r+1, err)
				}
				res.contestant, res.conns = c.name, conns
				logf("%-22s %2d conns run %d: put %8.0f jobs/s, reserve+delete %8.0f jobs/s", c.name, conns, r+1, res.put.rate, res.take.rate)
				rep.results = append(rep.results, res)
			}
		}
	}
	rep.finished = time.Now()
	md := rep.markdown()
	fmt.Print(md)
	if o.write != "" {
		if err := writeSection(o.write, md); err != nil {
			return err
		}
		logf("wrote the section of %s", o.write)
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}
