package bench_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/bench"
	"github.com/delayq/delayq/internal/redistest"
)

// httpStages are the timed stages of the http scenario that report a rate, in order.
var httpStages = []string{
	"enqueue 1 job/request, 1 conn",
	"enqueue 1 job/request, 64 conns",
	"enqueue 100 jobs/request, 1 conn",
	"enqueue 100 jobs/request, 64 conns",
	"reserve 1 + ack, 1 conn",
	"reserve 1 + ack, 64 conns",
}

// httpMetrics are every metric of the http scenario, in the order of the table.
var httpMetrics = []string{
	"library enqueue 1 job/call, 16 producers",
	"enqueue 1 job/request, 1 conn",
	"enqueue 1 job/request, 1 conn: server CPU",
	"enqueue 1 job/request, 64 conns",
	"enqueue 1 job/request, 64 conns: server CPU",
	"enqueue 1 job/request, 64 conns: p99 latency",
	"enqueue 1 job/request, 64 conns vs library",
	"enqueue 1 job/request, 64 conns at half that rate: p99 latency",
	"enqueue 1 job/request, 64 conns at half that rate: server CPU",
	"enqueue 100 jobs/request, 1 conn",
	"enqueue 100 jobs/request, 1 conn: server CPU",
	"enqueue 100 jobs/request, 64 conns",
	"enqueue 100 jobs/request, 64 conns: server CPU",
	"reserve 1 + ack, 1 conn",
	"reserve 1 + ack, 1 conn: server CPU",
	"reserve 1 + ack, 64 conns",
	"reserve 1 + ack, 64 conns: server CPU",
	"memory per pending job at 2k jobs",
	"memory per pending job at 10k jobs",
}

var serverPidRe = regexp.MustCompile(`process of its own \(pid (\d+)\)`)

// serverKind is where the server of an http scenario run was.
type serverKind int

const (
	ownProcess serverKind = iota // started by the scenario
	inProcess
	existing // given with its process id
)

// checkHTTP checks a quick run of the http scenario: every figure measured (the server's CPU
// time unless it ran in process), each in a sane range, each stage profiled on Redis, and the
// server process the scenario started, if it did, gone.
func checkHTTP(t *testing.T, r bench.Result, kind serverKind) {
	t.Helper()
	cpu := kind != inProcess
	if r.Error != "" {
		t.Fatalf("http: %s", r.Error)
	}
	var names []string
	for _, m := range r.Metrics {
		names = append(names, m.Name)
	}
	if diff := cmp.Diff(httpMetrics, names); diff != "" {
		t.Errorf("http metrics (-want +got):\n%s", diff)
	}
	byName := map[string]bench.Metric{}
	for _, m := range r.Metrics {
		byName[m.Name] = m
	}
	want := func(name, unit string, lo, hi float64) {
		t.Helper()
		m, ok := byName[name]
		switch {
		case !ok:
		case m.NA:
			t.Errorf("http: %s not measured", name)
		case m.Unit != unit || !(m.Value >= lo && m.Value <= hi):
			t.Errorf("http: %s = %v %s, want %s within %v to %v", name, m.Value, m.Unit, unit, lo, hi)
		}
	}
	var cpuTotal float64
	for _, s := range append(httpStages, "enqueue 1 job/request, 64 conns at half that rate") {
		if !strings.Contains(s, "half") {
			want(s, "jobs/s", 1, 1e7)
		}
		c := byName[s+": server CPU"]
		if !cpu {
			if !c.NA {
				t.Errorf("http: %s: server CPU = %v, want n/a: the server runs in the benchmark's process", s, c.Value)
			}
			continue
		}
		want(s+": server CPU", "ms/1k requests", 0, 1e5)
		cpuTotal += c.Value
	}
	if cpu && !(cpuTotal > 0) {
		t.Errorf("http: the server used no CPU time in any stage")
	}
	// Latencies are only checked to be measured: a loaded machine (tests in parallel, -race)
	// falls behind even half the rate it measured, and a paced stage's latency then grows.
	want("enqueue 1 job/request, 64 conns: p99 latency", "ms", 0.001, 60_000)
	want("enqueue 1 job/request, 64 conns at half that rate: p99 latency", "ms", 0.001, 60_000)
	want("library enqueue 1 job/call, 16 producers", "jobs/s", 1, 1e7)
	want("enqueue 1 job/request, 64 conns vs library", "%", 0.01, 1e4)
	want("memory per pending job at 2k jobs", "B/job", bench.BodySize, 2000)
	want("memory per pending job at 10k jobs", "B/job", bench.BodySize, 2000)
	profiled := map[string]bool{}
	for _, s := range r.Stages {
		profiled[s.Name] = len(s.Commands) > 0
	}
	for _, s := range append(httpStages, "enqueue 1 job/request, 64 conns at half that rate") {
		if !profiled[s] {
			t.Errorf("http: no Redis commands recorded for stage %q", s)
		}
	}
	generator := strings.Contains(strings.Join(r.Notes, "\n"), "load generator CPU")
	if generator != cpu {
		t.Errorf("http: a note on the load generator's CPU time: %v, want %v: %q", generator, cpu, r.Notes)
	}
	pid := ""
	for _, n := range r.Notes {
		if m := serverPidRe.FindStringSubmatch(n); m != nil {
			pid = m[1]
		}
	}
	switch {
	case kind == ownProcess && pid == "":
		t.Errorf("http: no note gives the server process's id: %q", r.Notes)
	case kind != ownProcess && pid != "":
		t.Errorf("http: a note says the scenario started a server process (pid %s)", pid)
	case pid != "":
		if _, err := os.Stat("/proc/" + pid); err == nil {
			t.Errorf("http: the server process %s still runs after the scenario", pid)
		}
	}
}

// TestHTTPInProcess runs the http scenario with no delayq binary to run: the server runs in
// the benchmark's process, and its CPU time is not measured. The http tests run one at a
// time, before the parallel ones, whose timing-sensitive scenarios they would crowd out.
func TestHTTPInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rdb := redistest.Standalone(t).Client(t)
	env := &bench.Env{RDB: rdb, Reset: bench.Flusher(rdb), Quick: true}
	dq := &bench.Delayq{RDB: rdb, Config: delayq.Config{Namespace: "hq"}}
	results := bench.Run(ctx, env, mustSelect(t, "http"), []bench.Contestant{dq})
	checkHTTP(t, results[0], inProcess)
	if !strings.Contains(strings.Join(results[0].Notes, "\n"), "in-process server") {
		t.Errorf("no note says the server ran in process: %q", results[0].Notes)
	}
}

// TestHTTPExistingServer runs the http scenario against a server it did not start, given
// with its process id, as --http and --http-pid do.
func TestHTTPExistingServer(t *testing.T) {
	bin := bench.DelayqBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := redistest.Standalone(t)
	rdb := srv.Client(t)
	base, pid := bench.StartServer(t, bin, "redis://"+srv.Addr)
	env := &bench.Env{RDB: rdb, Reset: bench.Flusher(rdb), Quick: true, HTTP: base, HTTPPid: pid}
	dq := &bench.Delayq{RDB: rdb, Config: delayq.Config{Namespace: "hx"}}
	results := bench.Run(ctx, env, mustSelect(t, "http"), []bench.Contestant{dq})
	checkHTTP(t, results[0], existing)
	if !strings.Contains(strings.Join(results[0].Notes, "\n"), "the server at "+base) {
		t.Errorf("no note names the server at %s: %q", base, results[0].Notes)
	}
}

func mustSelect(t *testing.T, list string) []bench.Scenario {
	t.Helper()
	s, err := bench.Select(list)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHTTPPidUnreadable checks that a server process id whose CPU time cannot be read fails
// the scenario at once, instead of leaving every CPU figure unexplained.
func TestHTTPPidUnreadable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := redistest.Standalone(t).Client(t)
	// Above the largest pid Linux hands out (2^22).
	env := &bench.Env{RDB: rdb, Reset: bench.Flusher(rdb), Quick: true, HTTP: "http://127.0.0.1:1", HTTPPid: 1<<22 + 1}
	dq := &bench.Delayq{RDB: rdb, Config: delayq.Config{Namespace: "hp"}}
	r := bench.Run(ctx, env, mustSelect(t, "http"), []bench.Contestant{dq})[0]
	if !strings.Contains(r.Error, "pid 4194305") || len(r.Metrics) != 0 {
		t.Errorf("http with an unreadable --http-pid: error %q and %d metrics, want an error naming the pid and none", r.Error, len(r.Metrics))
	}
}
