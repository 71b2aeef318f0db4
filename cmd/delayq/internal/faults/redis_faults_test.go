//go:build faults

package faults_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// firstAfter returns the moment of the agent's first event of kind at or after at, or 0.
func firstAfter(p *agent, kind faults.Kind, at int64) int64 {
	for _, e := range p.events() {
		if e.Kind == kind && e.T >= at {
			return e.T
		}
	}
	return 0
}

// recovery waits until the producer has had an enqueue acknowledged and a worker an ack
// accepted, both at or after at, and returns how long after at the later of the two came.
func (h *harness) recovery(at int64, producer, worker *agent) time.Duration {
	h.t.Helper()
	var enq, ack int64
	testwait.For(h.t, 30*time.Second, "the service to recover", func() bool {
		if enq == 0 {
			enq = firstAfter(producer, faults.Enqueued, at)
		}
		if ack == 0 {
			ack = firstAfter(worker, faults.Acked, at)
		}
		return enq != 0 && ack != 0
	})
	return time.Duration(max(enq, ack)-at) * time.Millisecond
}

// load starts a paced producer (ending by itself after about secs seconds) and two workers, and
// returns once two seconds' worth of jobs (at most a tenth of them) were enqueued and one acked.
func (h *harness) load(prefix string, n, secs int, extra ...string) (producer, worker *agent) {
	h.t.Helper()
	args := append([]string{"-prefix", prefix, "-n", itoa(n), "-batch", "20", "-concurrency", "4",
		"-rate", itoa(n / secs), "-spread", "1s", "-ttr", "3s", "-backoff", "0"}, extra...)
	producer = h.start("producer", "produce", args...)
	worker = h.start("worker1", "work", "-concurrency", "50", "-sleep", "10ms")
	h.start("worker2", "work", "-concurrency", "50", "-sleep", "10ms")
	testwait.For(h.t, 30*time.Second, "load to build up", func() bool {
		return producer.count(faults.Enqueued) >= min(n/10, 2*n/secs) && worker.count(faults.Acked) > 0
	})
	return producer, worker
}

// Scenario 5: kill -9 redis-server under load and restart it on the same append-only file.
// With appendfsync always nothing acknowledged is lost. With everysec the figure is reported:
// a killed process loses nothing the kernel has, so it is 0 here; a machine crash can lose the
// last second, which no process kill can show.
func TestKillRedis(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			srv := redistest.Standalone(t, redistest.WithAppendOnly(fsync))
			h := newHarness(t, "redis://"+srv.Addr, srv.Client(t), delayq.Config{})
			n := scale(6000, 60000)
			producer, worker := h.load("r", n, 6)
			killAt := time.Now().UnixMilli()
			srv.Kill(t)
			srv.Restart(t)
			upAt := time.Now().UnixMilli()
			rec := h.recovery(upAt, producer, worker)
			h.finished(producer, 2*time.Minute)
			h.drain(2*time.Minute, 0)
			r := h.check(faults.Rules{Faults: []faults.Window{{Name: "kill redis", Start: killAt, End: upAt}}}, fsync != "always")
			if r.Lost > 0 {
				t.Logf("appendfsync %s: %d acknowledged jobs lost", fsync, r.Lost)
			}
			record(t, figures(r, map[string]any{
				"appendfsync": fsync, "down_ms": upAt - killAt, "recovery_ms": rec.Milliseconds(),
			}))
		})
	}
}

// Scenario 6: Redis hangs for 5 s, paused with SIGSTOP or with CLIENT PAUSE. Callers get
// errors or wait, nothing is lost, and the service recovers by itself within 2 s of Redis
// answering again.
func TestRedisHangs(t *testing.T) {
	hangs := []struct {
		name string
		hang func(t *testing.T, srv *redistest.Server) (start, end int64)
	}{
		{"SIGSTOP", func(t *testing.T, srv *redistest.Server) (int64, int64) {
			start := time.Now().UnixMilli()
			srv.Stop(t)
			time.Sleep(5 * time.Second) // the fault's length, not a wait for a goroutine
			srv.Cont(t)
			return start, time.Now().UnixMilli()
		}},
		{"CLIENT_PAUSE", func(t *testing.T, srv *redistest.Server) (int64, int64) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now().UnixMilli()
			if err := srv.Client(t).Do(ctx, "CLIENT", "PAUSE", "5000", "ALL").Err(); err != nil {
				t.Fatalf("CLIENT PAUSE: %v", err)
			}
			return start, start + 5000
		}},
	}
	for _, tt := range hangs {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Standalone(t)
			h := newHarness(t, "redis://"+srv.Addr, srv.Client(t), delayq.Config{})
			n := scale(8000, 80000)
			producer, worker := h.load("h", n, 10)
			start, end := tt.hang(t, srv)
			rec := h.recovery(end, producer, worker)
			if rec > 2*time.Second {
				t.Errorf("recovered %v after Redis answered again, want within 2s", rec)
			}
			h.finished(producer, 2*time.Minute)
			h.drain(2*time.Minute, 0)
			r := h.check(faults.Rules{Faults: []faults.Window{{Name: tt.name, Start: start, End: end}}}, false)
			errs := 0
			for _, p := range []*agent{producer, worker} {
				errs += p.count(faults.EnqueueErr) + p.count(faults.AckErr) + p.count(faults.Warn)
			}
			record(t, figures(r, map[string]any{
				"hang_ms": end - start, "recovery_ms": rec.Milliseconds(), "caller_errors": errs,
			}))
		})
	}
}

// Scenario 9: Redis reaches maxmemory with noeviction. Enqueues fail with Redis's OOM error,
// nothing is evicted, and consumers started while memory is full drain every job, which frees
// memory.
func TestMaxMemory(t *testing.T) {
	srv := redistest.Standalone(t, redistest.WithArgs("--maxmemory", "20mb", "--maxmemory-policy", "noeviction"))
	rdb := srv.Client(t)
	h := newHarness(t, "redis://"+srv.Addr, rdb, delayq.Config{})
	producer := h.start("producer", "produce", "-prefix", "m", "-n", itoa(scale(40000, 100000)),
		"-batch", "200", "-pad", "1000", "-delay", "3s")
	h.finished(producer, 2*time.Minute)
	const oom = "OOM command not allowed when used memory > 'maxmemory'"
	if !hasErr(producer, faults.EnqueueErr, oom) {
		t.Fatalf("enqueue failed with %q, want Redis's %q", lastErr(producer, faults.EnqueueErr), oom)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	mem, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	// The producer's own buffers are gone now; lower the limit below what the jobs use, so that
	// the consumers start with memory over the limit.
	used, err := strconv.ParseInt(infoField(mem, "used_memory"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	limit := used - 1<<20
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("used_memory %d, maxmemory now %d, when the consumers start", used, limit)
	worker := h.start("worker", "work", "-concurrency", "100")
	h.drain(2*time.Minute, 0)
	r := h.check(faults.Rules{}, false)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := rdb.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	evicted := infoField(info, "evicted_keys")
	if evicted != "0" {
		t.Errorf("evicted_keys = %s, want 0", evicted)
	}
	record(t, figures(r, map[string]any{
		"enqueue_errors": producer.count(faults.EnqueueErr), "evicted_keys": evicted,
		"used_memory_at_drain_start": used, "maxmemory": limit,
		"worker_warnings": worker.count(faults.Warn), "worker_warning": lastErr(worker, faults.Warn),
	}))
}

// infoField returns one field of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// Scenario 10: SCRIPT FLUSH every 50 ms under load. Every call falls back from EVALSHA to
// EVAL when it finds the cache empty: no error reaches a caller, and none is even logged.
func TestScriptFlush(t *testing.T) {
	srv := redistest.Standalone(t)
	rdb := srv.Client(t)
	h := newHarness(t, "redis://"+srv.Addr, rdb, delayq.Config{})
	n := scale(10000, 100000)
	producer := h.start("producer", "produce", "-prefix", "f", "-n", itoa(n), "-batch", "10",
		"-concurrency", "4", "-rate", itoa(n/6), "-spread", "1s")
	w1 := h.start("worker1", "work", "-concurrency", "50")
	w2 := h.start("worker2", "work", "-concurrency", "50")
	canceller := h.start("canceller", "cancel", "-prefix", "f", "-n", itoa(n), "-every", "10", "-rate", itoa(n/60))
	flushes := 0
	done := make(chan struct{})
	go func() {
		<-producer.done
		close(done)
	}()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	ctx := context.Background()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-tick.C:
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatalf("SCRIPT FLUSH: %v", err)
			}
			flushes++
		}
	}
	h.finished(producer, time.Minute)
	h.finished(canceller, time.Minute)
	h.drain(time.Minute, 0)
	r := h.check(faults.Rules{}, false)
	errs := 0
	for _, p := range []*agent{producer, w1, w2, canceller} {
		for _, k := range []faults.Kind{faults.EnqueueErr, faults.AckErr, faults.CancelErr, faults.Warn} {
			if c := p.count(k); c > 0 {
				errs += c
				t.Errorf("%s logged %d %s, e.g. %s", p.name, c, k, lastErr(p, k))
			}
		}
	}
	if r.Duplicates > 0 {
		t.Errorf("%d jobs delivered twice with no fault but a script flush", r.Duplicates)
	}
	record(t, figures(r, map[string]any{"script_flushes": flushes, "caller_errors": errs}))
}

// Scenario 12: a whole backlog due at the same instant. No Redis command of delayq's takes
// 50 ms or more (the slow log records every command over 5 ms, to report the slowest), and
// every job is delivered.
func TestSameInstant(t *testing.T) {
	srv := redistest.Standalone(t, redistest.WithArgs("--slowlog-log-slower-than", "5000", "--slowlog-max-len", "100000"))
	rdb := srv.Client(t)
	h := newHarness(t, "redis://"+srv.Addr, rdb, delayq.Config{})
	h.nice = 10
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n := scale(100000, 1000000)
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(scale(15*time.Second, 90*time.Second))
	producer := h.start("producer", "produce", "-prefix", "i", "-n", itoa(n), "-batch", "1000",
		"-concurrency", "2", "-at", fmt.Sprint(at.UnixMilli()))
	for i := range 2 {
		h.start("worker"+itoa(i), "work", "-concurrency", "200")
	}
	h.finished(producer, 5*time.Minute)
	for _, e := range producer.events() {
		if e.Kind == faults.Enqueued && e.T >= at.UnixMilli() {
			t.Fatalf("job %s was enqueued after the instant all are due: enqueueing %d jobs takes longer than the lead", e.ID, n)
		}
		if e.Kind == faults.Enqueued && e.RunAt != at.UnixMilli() {
			t.Fatalf("job %s is due at %d, want %d", e.ID, e.RunAt, at.UnixMilli())
		}
	}
	if err := rdb.SlowLogReset(ctx).Err(); err != nil { // count the delivery of the backlog only
		t.Fatal(err)
	}
	h.drain(10*time.Minute, 0)
	drained := time.Since(at)
	slow, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var slowest time.Duration
	var slowestCmd string
	over, stalls := 0, 0
	for _, s := range slow {
		if s.Duration > slowest {
			slowest, slowestCmd = s.Duration, strings.Join(s.Args[:min(len(s.Args), 1)], " ")
		}
		if s.Duration >= 50*time.Millisecond {
			over++
			t.Errorf("slow log: %v took %v", s.Args[:min(len(s.Args), 3)], s.Duration)
			if cmd := strings.ToLower(fmt.Sprint(s.Args[0])); cmd != "evalsha" && cmd != "eval" {
				stalls++ // one command of a script, such as a ZADD of one member
			}
		}
	}
	if stalls > 0 {
		t.Errorf("%d single commands inside scripts took 50 ms or more: Redis was starved of CPU "+
			"(is the machine running other heavy work?), so the slow log times the machine, not delayq", stalls)
	}
	r := h.check(faults.Rules{}, false)
	if r.Delivered != n {
		t.Errorf("%d of %d jobs delivered", r.Delivered, n)
	}
	record(t, figures(r, map[string]any{
		"jobs": n, "drain_seconds_after_due": drained.Seconds(), "slowlog_over_5ms": len(slow),
		"slowlog_over_50ms": over, "slowest_ms": float64(slowest.Microseconds()) / 1000, "slowest_command": slowestCmd,
	}))
}
