package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

// bullmqContestant runs BullMQ through bullmq/driver.js, a Node process that the contestant's
// Go process sends one command per line: the scenario code stays the same Go code for every
// queue, and only bulk operations cross the pipe, each timed inside Node. Commands carry ids
// and run concurrently, as the scenarios call a queue's topics from several goroutines.
type bullmqContestant struct {
	cmd     *exec.Cmd
	version string
	node    string
	// read ends once the driver's stdout does.
	read chan struct{}

	mu      sync.Mutex
	stdin   io.WriteCloser
	nextID  int
	waiting map[int]chan []byte // by command id
	readErr error
}

// installBullMQ installs the driver's packages from package-lock.json when they are missing.
// `npm install` rather than `npm ci`: npm 11's ci refuses this lock file for lacking entries of
// optional packages built for other platforms, which install does not need.
func installBullMQ(ctx context.Context, dir string, stderr io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "bullmq")); err == nil {
		return nil
	}
	npm := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund")
	npm.Dir, npm.Stdout, npm.Stderr = dir, stderr, stderr
	if err := npm.Run(); err != nil {
		return fmt.Errorf("npm install in %s: %w", dir, err)
	}
	return nil
}

// startBullMQ starts the driver, whose packages installBullMQ installed.
func startBullMQ(ctx context.Context, dir, redisURL string, stderr io.Writer) (*bullmqContestant, error) {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "bullmq")); err != nil {
		return nil, fmt.Errorf("BullMQ is not installed in %s: %w", dir, err)
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
	b := &bullmqContestant{cmd: cmd, stdin: stdin, read: make(chan struct{}), waiting: map[int]chan []byte{}}
	go b.readAnswers(stdout)
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

// readAnswers hands each answer line of the driver to the call waiting for its id, until the
// driver's stdout ends; then it fails the calls still waiting.
func (b *bullmqContestant) readAnswers(stdout io.Reader) {
	defer close(b.read)
	r := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			b.mu.Lock()
			b.readErr = err
			for id, ch := range b.waiting {
				close(ch)
				delete(b.waiting, id)
			}
			b.mu.Unlock()
			return
		}
		var a struct {
			ID int `json:"id"`
		}
		if err := json.Unmarshal(line, &a); err != nil {
			continue // not an answer; the driver writes nothing else on stdout
		}
		b.mu.Lock()
		ch := b.waiting[a.ID]
		delete(b.waiting, a.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
}

// call sends one command and decodes its answer into out. Calls may run concurrently.
func (b *bullmqContestant) call(cmd map[string]any, out any) error {
	answer := make(chan []byte, 1)
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return fmt.Errorf("bullmq driver: gone: %w", b.readErr)
	}
	b.nextID++
	cmd["id"] = b.nextID
	b.waiting[b.nextID] = answer
	line, err := json.Marshal(cmd)
	if err == nil {
		_, err = b.stdin.Write(append(line, '\n'))
	}
	if err != nil {
		delete(b.waiting, b.nextID)
		b.mu.Unlock()
		return fmt.Errorf("bullmq driver: %w", err)
	}
	b.mu.Unlock()
	reply, ok := <-answer
	if !ok {
		return fmt.Errorf("bullmq driver: no answer to %s: %w", cmd["cmd"], b.readErr)
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

// Stop ends the driver process: closing its stdin lets it close its topics and exit.
func (b *bullmqContestant) Stop() {
	b.mu.Lock()
	_ = b.stdin.Close()
	b.mu.Unlock()
	select {
	case <-b.read:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.read
	}
	_ = b.cmd.Wait()
}

func (b *bullmqContestant) Name() string    { return "bullmq" }
func (b *bullmqContestant) Version() string { return b.version }

// versions reports BullMQ's version and Node's, for the report.
func (b *bullmqContestant) versions() map[string]string {
	return map[string]string{"bullmq": b.version, "node": b.node}
}

func (b *bullmqContestant) Open(_ context.Context, topic string) (bench.Queue, error) {
	if err := b.call(map[string]any{"cmd": "open", "topic": topic}, nil); err != nil {
		return nil, err
	}
	return &bullmqQueue{b: b, topic: topic}, nil
}

type bullmqQueue struct {
	b     *bullmqContestant
	topic string
}

// MaxBatch is 1000: addBulk takes any number, and the scenarios use batches of up to 1000.
func (q *bullmqQueue) MaxBatch() int { return 1000 }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us) }

func (q *bullmqQueue) Produce(_ context.Context, p bench.Plan) (bench.Produced, error) {
	cmd := map[string]any{
		"cmd": "produce", "topic": q.topic, "n": p.N, "producers": p.Producers, "batch": p.Batch,
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
	return q.b.call(map[string]any{"cmd": "consume", "topic": q.topic, "concurrency": concurrency}, nil)
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
	if err := q.b.call(map[string]any{"cmd": "await", "topic": q.topic, "n": n, "timeout_ms": timeout.Milliseconds()}, &out); err != nil {
		return bench.Awaited{}, err
	}
	aw := bench.Awaited{Done: fromMicros(out.Done), Deliveries: make([]bench.Delivery, len(out.Deliveries))}
	for i, d := range out.Deliveries {
		aw.Deliveries[i] = bench.Delivery{Index: int(d[0]), Received: fromMicros(d[1])}
	}
	return aw, nil
}

func (q *bullmqQueue) StopConsuming(context.Context) error {
	return q.b.call(map[string]any{"cmd": "stop", "topic": q.topic}, nil)
}

func (q *bullmqQueue) Close(context.Context) error {
	return q.b.call(map[string]any{"cmd": "close", "topic": q.topic}, nil)
}
