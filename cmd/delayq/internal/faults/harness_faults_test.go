//go:build faults

package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/testwait"
)

// harness runs one scenario: agent processes on one topic of one Redis deployment, the test's
// own delayq client to watch and drain it, and the checker at the end.
type harness struct {
	t        *testing.T
	dir      string // the agents' logs
	redisURL string
	ns       string
	topic    string
	rdb      redis.UniversalClient
	c        *delayq.Client

	// nice, when above 0, lowers the priority of every agent started from then on.
	nice int

	mu    sync.Mutex
	procs map[string]*agent
}

// newHarness prepares a scenario against the deployment at redisURL, which rdb also reaches;
// cfg configures the test's own client (its namespace and logger are the harness's).
func newHarness(t *testing.T, redisURL string, rdb redis.UniversalClient, cfg delayq.Config) *harness {
	t.Helper()
	h := &harness{
		t: t, dir: t.TempDir(), redisURL: redisURL, ns: "faults", topic: "jobs", rdb: rdb,
		procs: map[string]*agent{},
	}
	cfg.Namespace = h.ns
	cfg.Logger = slog.New(slog.DiscardHandler)
	c, err := delayq.New(context.Background(), rdb, cfg)
	if err != nil {
		t.Fatalf("delayq.New: %v", err)
	}
	h.c = c
	t.Cleanup(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, p := range h.procs {
			p.signal(syscall.SIGKILL)
			p.signal(syscall.SIGCONT)
			<-p.done
		}
		c.Close()
	})
	return h
}

// agent is one running agent process.
type agent struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done is closed
	// killed is set when the test killed the agent, so its failure is expected.
	killed bool
	log2   *logTail
}

// start runs an agent with the given role and flags (on top of those every role shares).
func (h *harness) start(name, role string, args ...string) *agent {
	h.t.Helper()
	return h.startEnv(nil, name, role, args...)
}

// startEnv is start with extra environment variables ("NAME=value").
func (h *harness) startEnv(env []string, name, role string, args ...string) *agent {
	h.t.Helper()
	log := filepath.Join(h.dir, name+".jsonl")
	all := append([]string{
		"-role", role, "-name", name, "-log", log, "-redis", h.redisURL,
		"-ns", h.ns, "-topic", h.topic, "-max-time", "15m",
	}, args...)
	return h.startBin(env, name, agentBin, all...)
}

// startBin runs any program as one of the scenario's processes; its output goes to
// <name>.stderr and its events, if it writes any, to <name>.jsonl.
func (h *harness) startBin(env []string, name, bin string, args ...string) *agent {
	h.t.Helper()
	p := &agent{name: name, log: filepath.Join(h.dir, name+".jsonl"), done: make(chan struct{})}
	p.log2 = &logTail{path: p.log, counts: map[faults.Kind]int{}}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	stderr, err := os.Create(filepath.Join(h.dir, name+".stderr"))
	if err != nil {
		h.t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = stderr, stderr
	setProcAttr(p.cmd)
	if err := p.cmd.Start(); err != nil {
		h.t.Fatalf("start agent %s: %v", name, err)
	}
	if h.nice > 0 {
		if err := lowerPriority(p.cmd.Process.Pid, h.nice); err != nil {
			h.t.Fatalf("nice agent %s: %v", name, err)
		}
	}
	go func() {
		p.err = p.cmd.Wait()
		stderr.Close()
		close(p.done)
	}()
	h.mu.Lock()
	h.procs[name] = p
	h.mu.Unlock()
	return p
}

func (p *agent) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// kill sends SIGKILL and waits for the process to be gone; it returns the moment of the kill.
func (h *harness) kill(p *agent) int64 {
	h.t.Helper()
	at := time.Now().UnixMilli()
	p.killed = true
	p.signal(syscall.SIGKILL)
	h.waitExit(p, 10*time.Second)
	return at
}

// pause sends SIGSTOP (stop true) or SIGCONT and waits until the process state follows; it
// returns the moment of the signal.
func (h *harness) pause(p *agent, stop bool) int64 {
	h.t.Helper()
	at := time.Now().UnixMilli()
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	p.signal(sig)
	testwait.For(h.t, 5*time.Second, fmt.Sprintf("%s to follow %v", p.name, sig), func() bool {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			return false
		}
		i := bytes.LastIndexByte(data, ')')
		return i > 0 && i+2 < len(data) && (data[i+2] == 'T') == stop
	})
	return at
}

// stop ends an agent with SIGTERM (a worker stops gracefully) and waits for it.
func (h *harness) stop(p *agent) {
	h.t.Helper()
	p.signal(syscall.SIGTERM)
	h.waitExit(p, 20*time.Second)
	if p.err != nil {
		h.t.Errorf("agent %s: %v\n%s", p.name, p.err, h.stderr(p))
	}
}

// waitExit waits for an agent that is to end by itself (a producer) and fails the test when it
// does not within timeout.
func (h *harness) waitExit(p *agent, timeout time.Duration) {
	h.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		h.t.Fatalf("agent %s still running after %v\n%s", p.name, timeout, h.stderr(p))
	}
}

// finished waits for an agent that ends by itself and fails the test when it failed.
func (h *harness) finished(p *agent, timeout time.Duration) {
	h.t.Helper()
	h.waitExit(p, timeout)
	if p.err != nil {
		h.t.Fatalf("agent %s: %v\n%s", p.name, p.err, h.stderr(p))
	}
}

func (h *harness) stderr(p *agent) string {
	data, _ := os.ReadFile(filepath.Join(h.dir, p.name+".stderr"))
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// count returns how many events of kind the agent has logged so far.
func (p *agent) count(kind faults.Kind) int {
	return p.log2.count(kind)
}

// events returns the agent's events so far.
func (p *agent) events() []faults.Event {
	evs, _ := faults.ReadLog(p.log)
	return evs
}

// pending returns the topic's delayed, ready and reserved jobs.
func (h *harness) pending() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := h.c.Stats(ctx, h.topic)
	if err != nil {
		return 0, err
	}
	return s.Delayed + s.Ready + s.Reserved, nil
}

// drain waits until at most allowed jobs are pending, then a little longer so that acks in
// flight land, and returns how long it took.
func (h *harness) drain(timeout time.Duration, allowed int64) time.Duration {
	h.t.Helper()
	start := time.Now()
	testwait.ForNil(h.t, timeout, fmt.Sprintf("at most %d jobs pending", allowed), func() error {
		last, err := h.pending()
		if err == nil && last <= allowed {
			return nil
		}
		h.mu.Lock()
		for _, p := range h.procs {
			select {
			case <-p.done:
				if p.err != nil && !p.killed {
					h.mu.Unlock()
					h.t.Fatalf("drain: agent %s failed: %v\n%s", p.name, p.err, h.stderr(p))
				}
			default:
			}
		}
		h.mu.Unlock()
		return fmt.Errorf("%d jobs still pending (%v)", last, err)
	})
	return time.Since(start)
}

// check stops every agent still running, reads all logs and what Redis holds, and applies the
// checker. It fails the test on any violation (lost jobs too unless allowLoss) and on any
// inconsistency in Redis, and returns the report.
func (h *harness) check(rules faults.Rules, allowLoss bool) *faults.Report {
	h.t.Helper()
	h.mu.Lock()
	procs := make([]*agent, 0, len(h.procs))
	for _, p := range h.procs {
		procs = append(procs, p)
	}
	h.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.done:
		default:
			h.stop(p)
		}
	}
	events, err := faults.ReadLogs(h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	present, problems := h.scan()
	for _, p := range problems {
		h.t.Errorf("redis: %s", p)
	}
	r := faults.Check(events, present, rules)
	h.t.Logf("report: %v", r)
	for _, p := range r.Problems(allowLoss) {
		h.t.Errorf("violation: %s", p)
	}
	return r
}

// figures returns a report's counts for record, with extra ones added.
func figures(r *faults.Report, extra map[string]any) map[string]any {
	m := map[string]any{
		"sent": r.Sent, "acknowledged": r.Acknowledged, "unconfirmed": r.Unconfirmed,
		"delivered": r.Delivered, "deliveries": r.Deliveries, "cancelled": r.Cancelled,
		"lost": r.Lost, "early": r.Early, "stuck": r.Stuck, "stale_acks_accepted": r.StaleAccepted,
		"after_cancel": r.AfterCancel, "phantom": r.Phantom, "corrupt": r.Corrupt,
		"resent": r.Resent, "resends_refused": r.ResendsRefused,
		"duplicates": r.Duplicates, "in_flight_at_fault": r.InFlight, "unexplained_duplicates": r.Unexplained,
		"late_p50_ms": r.LateP50.Milliseconds(), "late_p99_ms": r.LateP99.Milliseconds(), "late_max_ms": r.LateMax.Milliseconds(),
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// logTail counts an agent's events incrementally, reading only what was appended since the
// last call.
type logTail struct {
	path string

	mu      sync.Mutex
	offset  int64
	partial []byte
	counts  map[faults.Kind]int
}

func (l *logTail) count(kind faults.Kind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.Open(l.path)
	if err == nil {
		defer f.Close()
		buf := make([]byte, 1<<20)
		for {
			n, err := f.ReadAt(buf, l.offset)
			l.offset += int64(n)
			data := append(l.partial, buf[:n]...)
			lines := bytes.Split(data, []byte("\n"))
			l.partial = append([]byte(nil), lines[len(lines)-1]...)
			for _, line := range lines[:len(lines)-1] {
				var e struct {
					Kind faults.Kind `json:"ev"`
				}
				if json.Unmarshal(line, &e) == nil {
					l.counts[e.Kind]++
				}
			}
			if err != nil || n == 0 {
				break
			}
		}
	}
	return l.counts[kind]
}

// lastErr returns the last error text an agent logged of kind, for failure messages.
func lastErr(p *agent, kind faults.Kind) string {
	evs := p.events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == kind {
			return evs[i].Err
		}
	}
	return ""
}

// hasErr reports whether any of the agent's events of kind has an error containing s.
func hasErr(p *agent, kind faults.Kind, s string) bool {
	for _, e := range p.events() {
		if e.Kind == kind && strings.Contains(e.Err, s) {
			return true
		}
	}
	return false
}
