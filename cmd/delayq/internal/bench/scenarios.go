package bench

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Env is what every scenario runs against.
type Env struct {
	// RDB is the Redis the contestants use; scenarios read INFO, SLOWLOG and TIME through it.
	RDB redis.UniversalClient
	// Reset empties the Redis, or the part of it the contestants use, between scenario parts.
	Reset func(ctx context.Context) error
	// Quick shrinks every count, for a smoke run of a few seconds.
	Quick bool
	// HTTP is the base URL of a running delayq server for the HTTP scenario; empty starts one.
	HTTP string
	// HTTPPid is the process id of the server at HTTP, whose CPU time the HTTP scenario then
	// reads from /proc; 0: its CPU time is not measured.
	HTTPPid int
	// Server is the delayq binary that the HTTP scenario runs as `delayq server`, a process of
	// its own on RedisURL, when HTTP is empty. Without it (or RedisURL) the server runs inside
	// the benchmark's process, and its CPU time is not measured.
	Server string
	// RedisURL is the URL of RDB, for the server process.
	RedisURL string
	// ScalingPending, when above 0, replaces the scaling scenario's backlog size.
	ScalingPending int
	// ClusterAddrs are nodes of a Redis Cluster for the cluster scenario; empty starts its own
	// clusters of 1 and 3 primaries.
	ClusterAddrs []string
	// Log receives progress.
	Log *slog.Logger

	seq atomic.Int64
}

// Scenario is one measurement.
type Scenario struct {
	Name string
	// Doc says what the scenario measures, in one line.
	Doc string
	// Run measures contestant c; failures land in the Result's Error.
	Run func(ctx context.Context, env *Env, c Contestant) Result
}

// Scenarios returns every scenario, in the order they run by default.
func Scenarios() []Scenario {
	return []Scenario{
		{"enqueue", "enqueue rate: 1 producer one job at a time, 16 producers, batches of 100 and 1000", runEnqueue},
		{"memory", "Redis memory per pending job with a 100-byte body, at two backlog sizes", runMemory},
		{"precision", "lateness of jobs due uniformly over a span, with free consumers", runPrecision},
		{"expiry", "lateness of lease expiries with nobody consuming the topic: leases whose deadlines come one after another over a span", runExpiry},
		{"precision-load", "lateness of jobs due five times as often while 16 producers enqueue flat out into another topic", runPrecisionUnderLoad},
		{"e2e", "jobs due at once with 16 handlers doing nothing: enqueue-to-last-ack rate, and backlog drain rate", runE2E},
		{"burst", "jobs all due at one instant: time until all are delivered, slowest Redis command", runBurst},
		{"http", "delayq server: enqueue (1 and 100 jobs a request) and reserve+ack with 1 and 64 connections, server CPU, p99 at half load, memory per job", runHTTP},
		{"scaling", "enqueue rate with a large backlog pending against an empty Redis", runScaling},
		{"scripts", "server time of each of delayq's scripts, from SLOWLOG with no threshold", runScripts},
		{"cluster", "one topic of 16 partitions enqueued and drained on Redis Clusters of 1 and 3 primaries: each shard's Redis CPU per job, their spread, and the rate N shards project", runCluster},
	}
}

// Select returns the scenarios named in the comma-separated list; empty or "all" is all.
func Select(list string) ([]Scenario, error) {
	all := Scenarios()
	if list == "" || list == "all" {
		return all, nil
	}
	var out []Scenario
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(all, func(s Scenario) bool { return s.Name == name })
		if i < 0 {
			names := make([]string, len(all))
			for k, s := range all {
				names[k] = s.Name
			}
			return nil, fmt.Errorf("bench: unknown scenario %q; the scenarios are %s", name, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// Run runs each scenario against each contestant in turn and returns every result.
func Run(ctx context.Context, env *Env, scenarios []Scenario, contestants []Contestant) []Result {
	var out []Result
	for _, s := range scenarios {
		for _, c := range contestants {
			if Supports(c, s.Name) {
				out = append(out, RunOne(ctx, env, s, c))
			}
		}
	}
	return out
}

// Supports reports whether contestant c runs scenario name: every one, unless c says otherwise
// with a Supports method (the floors run the enqueue and scaling scenarios alone).
func Supports(c Contestant, name string) bool {
	s, ok := c.(interface{ Supports(string) bool })
	return !ok || s.Supports(name)
}

// RunOne runs one scenario against one contestant.
func RunOne(ctx context.Context, env *Env, s Scenario, c Contestant) Result {
	log := env.logger()
	log.Info("bench: running", "scenario", s.Name, "queue", c.Name())
	start := time.Now()
	r := s.Run(ctx, env, c)
	r.Scenario, r.Contestant = s.Name, c.Name()
	r.Seconds = time.Since(start).Seconds()
	if r.Error != "" {
		log.Warn("bench: scenario failed", "scenario", s.Name, "queue", c.Name(), "err", r.Error)
	}
	return r
}

func (env *Env) logger() *slog.Logger {
	if env.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return env.Log
}

// sizes are a run's job counts.
type sizes struct {
	single, parallel, batch int
	memSmall, memLarge      int
	precisionN              int
	precisionSpan           time.Duration
	e2e                     int
	burst                   int
	http                    int
	scaleProbe, scaleFill   int
	scriptCalls             int
}

func (env *Env) sizes() sizes {
	sz := env.defaultSizes()
	if env.ScalingPending > 0 {
		sz.scaleFill = env.ScalingPending
	}
	return sz
}

func (env *Env) defaultSizes() sizes {
	if env.Quick {
		return sizes{
			single: 300, parallel: 2000, batch: 5000,
			memSmall: 2000, memLarge: 10000,
			precisionN: 300, precisionSpan: 600 * time.Millisecond,
			e2e: 2000, burst: 3000, http: 2000,
			scaleProbe: 1000, scaleFill: 10000,
			scriptCalls: 200,
		}
	}
	return sizes{
		single: 10_000, parallel: 50_000, batch: 200_000,
		memSmall: 100_000, memLarge: 1_000_000,
		precisionN: 5000, precisionSpan: 5 * time.Second,
		e2e: 50_000, burst: 100_000, http: 50_000,
		scaleProbe: 50_000, scaleFill: 1_000_000,
		scriptCalls: 2000,
	}
}

// open empties Redis (or the contestants' part of it) and opens a new topic of c.
func (env *Env) open(ctx context.Context, c Contestant, label string) (Queue, error) {
	if env.Reset != nil {
		if err := env.Reset(ctx); err != nil {
			return nil, err
		}
	}
	return env.openAnother(ctx, c, label)
}

// openAnother opens a new topic of c beside those the scenario opened, emptying nothing.
func (env *Env) openAnother(ctx context.Context, c Contestant, label string) (Queue, error) {
	topic := fmt.Sprintf("bench-%s-%d", label, env.seq.Add(1))
	q, err := c.Open(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", topic, err)
	}
	return q, nil
}

// closeQueue closes q, bounded in time.
func closeQueue(ctx context.Context, q Queue) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return q.Close(ctx)
}

// fill returns the fastest way q has to enqueue n jobs: batches of 1000 from 4 producers, or
// 16 producers one job at a time when q has no batch enqueue.
func fill(q Queue, n int) Plan {
	if q.MaxBatch() > 1 {
		return Plan{N: n, Producers: 4, Batch: min(1000, q.MaxBatch())}
	}
	return Plan{N: n, Producers: 16, Batch: 1}
}

func fillNote(q Queue) string {
	p := fill(q, 0)
	if p.Batch > 1 {
		return fmt.Sprintf("jobs enqueued in batches of %d by %d producers", p.Batch, p.Producers)
	}
	return fmt.Sprintf("no batch enqueue: jobs enqueued one at a time by %d producers", p.Producers)
}

// stage is a commandstats reading at the start of a stage of a scenario.
type stage struct {
	env    *Env
	name   string
	before map[string]CommandStat
}

func (env *Env) stage(ctx context.Context, name string) *stage {
	before, err := CommandStats(ctx, env.RDB)
	if err != nil {
		env.logger().Warn("bench: reading commandstats", "err", err)
	}
	return &stage{env: env, name: name, before: before}
}

// end adds the commands run since the stage began to r.
func (s *stage) end(ctx context.Context, r *Result) {
	if s.before == nil {
		return
	}
	after, err := CommandStats(ctx, s.env.RDB)
	if err != nil {
		return
	}
	r.Stages = append(r.Stages, Stage{Name: s.name, Commands: diffCommandStats(s.before, after)})
}

func fail(r Result, format string, args ...any) Result {
	r.Error = fmt.Sprintf(format, args...)
	return r
}

func runEnqueue(ctx context.Context, env *Env, c Contestant) Result {
	var r Result
	sz := env.sizes()
	cases := []struct {
		name string
		plan Plan
	}{
		{"1 producer", Plan{N: sz.single, Producers: 1}},
		{"16 producers", Plan{N: sz.parallel, Producers: 16}},
		{"batch 100", Plan{N: sz.batch, Producers: 4, Batch: 100}},
		{"batch 1000", Plan{N: sz.batch, Producers: 4, Batch: 1000}},
	}
	r.note("every job has a %d-byte body and is due in an hour; batches come from 4 producers at once", BodySize)
	for _, k := range cases {
		q, err := env.open(ctx, c, "enqueue")
		if err != nil {
			return fail(r, "%v", err)
		}
		if k.plan.Batch > q.MaxBatch() {
			r.na(k.name, "jobs/s", Higher, "no batch enqueue")
			_ = closeQueue(ctx, q)
			continue
		}
		k.plan.Delay = time.Hour
		st := env.stage(ctx, k.name)
		p, err := q.Produce(ctx, k.plan)
		st.end(ctx, &r)
		_ = closeQueue(ctx, q)
		if err != nil {
			return fail(r, "%s: %v", k.name, err)
		}
		r.add(k.name, rate(k.plan.N, p.End.Sub(p.Start)), "jobs/s", Higher)
	}
	return r
}

func runMemory(ctx context.Context, env *Env, c Contestant) Result {
	var r Result
	sz := env.sizes()
	q, err := env.open(ctx, c, "memory")
	if err != nil {
		return fail(r, "%v", err)
	}
	defer closeQueue(ctx, q)
	r.note("used_memory growth / jobs, %d-byte bodies, due over the next hours; %s", BodySize, fillNote(q))
	m0, err := UsedMemory(ctx, env.RDB)
	if err != nil {
		return fail(r, "%v", err)
	}
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	step := 3 * time.Millisecond // due times spread over ~50 minutes per million jobs
	done := 0
	for _, n := range []int{sz.memSmall, sz.memLarge} {
		p := fill(q, n-done)
		p.At, p.Step = at.Add(time.Duration(done)*step), step
		if _, err := q.Produce(ctx, p); err != nil {
			return fail(r, "filling to %d jobs: %v", n, err)
		}
		done = n
		m, err := UsedMemory(ctx, env.RDB)
		if err != nil {
			return fail(r, "%v", err)
		}
		r.add(fmt.Sprintf("at %s jobs", countLabel(n)), float64(m-m0)/float64(n), "B/job", Lower)
	}
	return r
}

func runScaling(ctx context.Context, env *Env, c Contestant) Result {
	var r Result
	sz := env.sizes()
	q, err := env.open(ctx, c, "scaling")
	if err != nil {
		return fail(r, "%v", err)
	}
	defer closeQueue(ctx, q)
	r.note("enqueue rate of %d jobs from 16 producers one at a time, on an empty Redis and then with %d jobs pending (%s)", sz.scaleProbe, sz.scaleFill, fillNote(q))
	probe := func() (float64, error) {
		p, err := q.Produce(ctx, Plan{N: sz.scaleProbe, Producers: 16, Delay: 2 * time.Hour})
		return rate(sz.scaleProbe, p.End.Sub(p.Start)), err
	}
	empty, err := probe()
	if err != nil {
		return fail(r, "empty: %v", err)
	}
	r.add("empty", empty, "jobs/s", Higher)
	p := fill(q, sz.scaleFill)
	p.At, p.Step = time.Now().Add(time.Hour), 3*time.Millisecond
	if _, err := q.Produce(ctx, p); err != nil {
		return fail(r, "filling: %v", err)
	}
	full, err := probe()
	if err != nil {
		return fail(r, "with a backlog: %v", err)
	}
	r.add(fmt.Sprintf("with %s pending", countLabel(sz.scaleFill)), full, "jobs/s", Higher)
	r.add("ratio", 100*full/empty, "%", Higher)
	return r
}

// countLabel writes n as 100k or 1M.
func countLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
