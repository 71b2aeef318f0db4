package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/delayq/delayq/internal/bench"
)

// bullmqContestant runs BullMQ through bullmq/driver.js, a Node process that the harness
// sends one command per line: the scenario code stays the same Go code for every queue, and
// only bulk operations cross the pipe, each timed inside Node.
type bullmqContestant struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	mu      sync.Mutex
	version string
	node    string
}

// startBullMQ installs the driver's packages from package-lock.json when they are missing and
// starts it. `npm install` rather than `npm ci`: npm 11's ci refuses this lock file for lacking
// entries of optional packages built for other platforms, which install does not need.
func startBullMQ(ctx context.Context, dir, redisURL string, stderr io.Writer) (*bullmqContestant, error) {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "bullmq")); err != nil {
		npm := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund")
		npm.Dir, npm.Stdout, npm.Stderr = dir, stderr, stderr
		if err := npm.Run(); err != nil {
			return nil, fmt.Errorf("npm install in %s: %w", dir, err)
		}
	}
	cmd := exec.Command("node", "driver.js", redisURL)
	cmd.Dir, cmd.Stderr = dir, stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting node: %w", err)
	}
	b := &bullmqContestant{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<20)}
	var v struct {
		BullMQ string `json:"bullmq"`
		Node   string `json:"node"`
	}
	if err := b.call(map[string]any{"cmd": "version"}, &v); err != nil {
		b.Stop()
		return nil, err
	}
	b.version, b.node = v.BullMQ, v.Node
	return b, nil
}

// call sends one command and decodes its answer into out.
func (b *bullmqContestant) call(cmd map[string]any, out any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	line, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	if _, err := b.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("bullmq driver: %w", err)
	}
	reply, err := b.stdout.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("bullmq driver: reading the answer to %s: %w", cmd["cmd"], err)
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(reply, &e); err != nil {
		return fmt.Errorf("bullmq driver: %w", err)
	}
	if e.Error != "" {
		return fmt.Errorf("bullmq driver: %s: %s", cmd["cmd"], e.Error)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(reply, out)
}

// Stop ends the driver process.
func (b *bullmqContestant) Stop() {
	_ = b.stdin.Close()
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
}

func (b *bullmqContestant) Name() string    { return "bullmq" }
func (b *bullmqContestant) Version() string { return b.version }

func (b *bullmqContestant) Open(_ context.Context, topic string) (bench.Queue, error) {
	if err := b.call(map[string]any{"cmd": "open", "topic": topic}, nil); err != nil {
		return nil, err
	}
	return &bullmqQueue{b: b}, nil
}

type bullmqQueue struct{ b *bullmqContestant }

// MaxBatch is 1000: addBulk takes any number, and the scenarios use batches of up to 1000.
func (q *bullmqQueue) MaxBatch() int { return 1000 }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us) }

func (q *bullmqQueue) Produce(_ context.Context, p bench.Plan) (bench.Produced, error) {
	cmd := map[string]any{
		"cmd": "produce", "n": p.N, "producers": p.Producers, "batch": p.Batch,
		"delay_ms": p.Delay.Milliseconds(),
	}
	if !p.At.IsZero() {
		cmd["at_us"], cmd["step_us"] = micros(p.At), float64(p.Step)/float64(time.Microsecond)
	}
	var out struct {
		Start int64 `json:"start_us"`
		End   int64 `json:"end_us"`
	}
	err := q.b.call(cmd, &out)
	return bench.Produced{Start: fromMicros(out.Start), End: fromMicros(out.End)}, err
}

func (q *bullmqQueue) Consume(_ context.Context, concurrency int) error {
	return q.b.call(map[string]any{"cmd": "consume", "concurrency": concurrency}, nil)
}

func (q *bullmqQueue) Await(ctx context.Context, n int) (bench.Awaited, error) {
	timeout := 10 * time.Minute
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	var out struct {
		Deliveries [][2]int64 `json:"deliveries"`
		Done       int64      `json:"done_us"`
	}
	if err := q.b.call(map[string]any{"cmd": "await", "n": n, "timeout_ms": timeout.Milliseconds()}, &out); err != nil {
		return bench.Awaited{}, err
	}
	aw := bench.Awaited{Done: fromMicros(out.Done), Deliveries: make([]bench.Delivery, len(out.Deliveries))}
	for i, d := range out.Deliveries {
		aw.Deliveries[i] = bench.Delivery{Index: int(d[0]), Received: fromMicros(d[1])}
	}
	return aw, nil
}

func (q *bullmqQueue) StopConsuming(context.Context) error {
	return q.b.call(map[string]any{"cmd": "stop"}, nil)
}

func (q *bullmqQueue) Close(context.Context) error {
	return errors.Join(q.b.call(map[string]any{"cmd": "close"}, nil))
}
