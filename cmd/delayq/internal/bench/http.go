package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// The http scenario's shapes.
const (
	httpManyConns = 64
	httpBatch     = 100 // jobs in a batch request
	// Backlogs (for reserve+ack, and for memory) are enqueued before they are measured, in
	// batches of httpFillBatch from httpFillConns connections.
	httpFillBatch = 1000
	httpFillConns = 4
	// libraryProducers enqueue through the library for the rate the HTTP one is held against.
	libraryProducers = 16
)

// httpSizes are the http scenario's counts: operations of each stage, and jobs of the memory
// backlog.
type httpSizes struct {
	single1, single64   int // single-job enqueue requests
	batch1, batch64     int // batch requests of httpBatch jobs
	reserve1, reserve64 int // jobs reserved and acked
	library             int // jobs enqueued through the library, for reference
	memSmall, memLarge  int
}

func (env *Env) httpSizes() httpSizes {
	sz := env.sizes()
	if env.Quick {
		return httpSizes{single1: 300, single64: 2000, batch1: 20, batch64: 128, reserve1: 300, reserve64: 2000,
			library: sz.parallel, memSmall: sz.memSmall, memLarge: sz.memLarge}
	}
	return httpSizes{single1: 5000, single64: 20_000, batch1: 200, batch64: 1000, reserve1: 5000, reserve64: 20_000,
		library: sz.parallel, memSmall: sz.memSmall, memLarge: sz.memLarge}
}

// The http scenario's metrics.
var (
	httpSingle1     = "enqueue 1 job/request, 1 conn"
	httpSingle64    = fmt.Sprintf("enqueue 1 job/request, %d conns", httpManyConns)
	httpP99         = httpSingle64 + ": p99 latency"
	httpHalfRate    = httpSingle64 + " at half that rate"
	httpHalfRateP99 = httpHalfRate + ": p99 latency"
	httpBatch1      = fmt.Sprintf("enqueue %d jobs/request, 1 conn", httpBatch)
	httpBatch64     = fmt.Sprintf("enqueue %d jobs/request, %d conns", httpBatch, httpManyConns)
	httpReserve1    = "reserve 1 + ack, 1 conn"
	httpReserve64   = fmt.Sprintf("reserve 1 + ack, %d conns", httpManyConns)
	httpLibrary     = fmt.Sprintf("library enqueue 1 job/call, %d producers", libraryProducers)
	httpVsLibrary   = httpSingle64 + " vs library"
	// httpCPUSuffix ends the name of a stage's server CPU metric.
	httpCPUSuffix = ": server CPU"
	httpCPUUnit   = "ms/1k requests"
	memoryPrefix  = "memory per pending job at "
)

// httpStage is one timed stage: n operations over conns connections.
type httpStage struct {
	name  string
	conns int
	n     int
	jobs  int // jobs per operation
	every time.Duration
	// backlog, when above 0, is how many jobs due now are enqueued into the stage's topic
	// before it is timed.
	backlog int
	op      func(ctx context.Context, c *conn, topic string, i int) (requests int, err error)
}

func enqueueSingleOp(ctx context.Context, c *conn, topic string, i int) (int, error) {
	return 1, enqueueOne(ctx, c, topic, jobJSON(i, time.Hour))
}

func enqueueBatchOp(ctx context.Context, c *conn, topic string, i int) (int, error) {
	hour := func(int) time.Duration { return time.Hour }
	return 1, enqueueBatch(ctx, c, topic, batchJSON(i*httpBatch, (i+1)*httpBatch, hour))
}

func reserveAckOp(ctx context.Context, c *conn, topic string, _ int) (int, error) {
	return reserveAndAck(ctx, c, topic)
}

// runHTTP measures delayq server: the rates of enqueue (one job, and a batch, per request) and
// of reserve+ack with 1 and 64 keep-alive connections, the server's CPU time per 1,000
// requests of each, the p99 request latency flat out and at half that rate, and Redis memory
// per pending job enqueued through it.
func runHTTP(ctx context.Context, env *Env, c Contestant) Result {
	var r Result
	q, err := env.open(ctx, c, "http")
	if err != nil {
		return fail(r, "%v", err)
	}
	defer closeQueue(ctx, q)
	dc := Client(q)
	if dc == nil {
		for _, s := range []string{httpSingle1, httpSingle64, httpBatch1, httpBatch64, httpReserve1, httpReserve64, httpLibrary} {
			r.na(s, "jobs/s", Higher, "delayq's HTTP API only")
		}
		r.na(httpP99, "ms", Lower, "delayq's HTTP API only")
		r.na(httpHalfRateP99, "ms", Lower, "delayq's HTTP API only")
		return r
	}
	t, err := httpServer(ctx, env, c, dc, &r)
	if err != nil {
		return fail(r, "%v", err)
	}
	defer t.stop()
	h := &httpRun{env: env, t: t, g: newLoadgen(t.base), r: &r, sz: env.httpSizes()}
	if err := h.run(ctx, q); err != nil {
		if xerr := t.exited(); xerr != nil {
			err = fmt.Errorf("%w; %w", err, xerr)
		}
		return fail(r, "%v", err)
	}
	return r
}

// httpRun is one run of the http scenario.
type httpRun struct {
	env    *Env
	t      *httpTarget
	g      *loadgen
	r      *Result
	sz     httpSizes
	opened int // connections the stages opened
	// generator is the load generator's CPU time per 1,000 requests of each stage, when the
	// server runs in a process of its own: the share of the machine the measuring took.
	generator []string
}

func (h *httpRun) run(ctx context.Context, q Queue) error {
	r, sz := h.r, h.sz
	r.note("request bodies are built beforehand; each job's body is a JSON string whose text, as the server stores it, is %d bytes; enqueued jobs are due in an hour", BodySize)
	r.note("a conn is one HTTP/1.1 keep-alive connection, opened before its stage is timed, that sends its next request as soon as the last is answered; like wrk, the load generator writes each request and reads its answer on the socket itself, one goroutine per connection (net/http's client would hand each request to two goroutines of its own)")
	r.note("reserve 1 + ack is the documented consumer loop: reserve {max 1, wait_ms 1000}, then ack that job; two requests a job, from a backlog of due jobs enqueued before the stage")
	if h.t.pid != 0 {
		r.note("server CPU: utime + stime of the server process (/proc/%d/stat, 10 ms ticks) over the stage, per 1,000 requests; a batch request carries %d jobs, a reserved job takes two requests", h.t.pid, httpBatch)
	} else {
		r.note("server CPU not measured: %s", h.t.noCPU)
	}

	p, err := q.Produce(ctx, Plan{N: sz.library, Producers: libraryProducers, Delay: time.Hour})
	if err != nil {
		return fmt.Errorf("library enqueue: %w", err)
	}
	library := rate(sz.library, p.End.Sub(p.Start))
	r.add(httpLibrary, library, "jobs/s", Higher)
	r.note("%s: %d goroutines enqueue %d jobs one per call through a delayq.Client in the benchmark's process, on the same Redis; %s is the HTTP rate as a percentage of it",
		httpLibrary, libraryProducers, sz.library, httpVsLibrary)

	if _, err := h.stage(ctx, httpStage{name: httpSingle1, conns: 1, n: sz.single1, jobs: 1, op: enqueueSingleOp}); err != nil {
		return err
	}
	d, err := h.stage(ctx, httpStage{name: httpSingle64, conns: httpManyConns, n: sz.single64, jobs: 1, op: enqueueSingleOp})
	if err != nil {
		return err
	}
	full := rate(sz.single64, d.took)
	if full <= 0 {
		return fmt.Errorf("%s: no rate measured", httpSingle64)
	}
	r.add(httpP99, ms(percentile(d.latencies, 0.99)), "ms", Lower)
	r.add(httpVsLibrary, 100*full/library, "%", Higher)
	every := time.Duration(float64(time.Second) / (full / 2))
	d, err = h.stage(ctx, httpStage{name: httpHalfRate, conns: httpManyConns, n: sz.single64, jobs: 1, every: every, op: enqueueSingleOp})
	if err != nil {
		return err
	}
	r.note("p99 latency: of each request from when it was sent; at half that rate, %d conns send request i at start + i × %v (%.0f requests/s, half the rate measured just before; %.0f/s achieved) and its latency counts from then, so that a stall delays the requests behind it too",
		httpManyConns, every.Round(time.Microsecond), full/2, rate(sz.single64, d.took))

	for _, s := range []httpStage{
		{name: httpBatch1, conns: 1, n: sz.batch1, jobs: httpBatch, op: enqueueBatchOp},
		{name: httpBatch64, conns: httpManyConns, n: sz.batch64, jobs: httpBatch, op: enqueueBatchOp},
		{name: httpReserve1, conns: 1, n: sz.reserve1, jobs: 1, backlog: sz.reserve1, op: reserveAckOp},
		{name: httpReserve64, conns: httpManyConns, n: sz.reserve64, jobs: 1, backlog: sz.reserve64, op: reserveAckOp},
	} {
		if _, err := h.stage(ctx, s); err != nil {
			return err
		}
	}
	if err := h.memory(ctx); err != nil {
		return err
	}
	if len(h.generator) > 0 {
		r.note("load generator CPU (this process, ms/1k requests): %s", strings.Join(h.generator, "; "))
	}
	if dials := int(h.g.dials.Load()); dials != h.opened {
		r.note("the load generator dialled %d times for %d connections: the server closed some of them", dials, h.opened)
	}
	return nil
}

// stage runs s on a topic of its own and adds to the result its rate in jobs/s (its p99
// latency instead, for a paced stage) and the server's CPU time per 1,000 requests.
func (h *httpRun) stage(ctx context.Context, s httpStage) (driven, error) {
	topic := fmt.Sprintf("bench-http-%d", h.env.seq.Add(1))
	if s.backlog > 0 {
		if err := h.fill(ctx, topic, 0, s.backlog, func(int) time.Duration { return 0 }); err != nil {
			return driven{}, fmt.Errorf("%s: enqueueing its backlog: %w", s.name, err)
		}
	}
	cs, err := h.g.conns(ctx, s.conns)
	if err != nil {
		return driven{}, fmt.Errorf("%s: opening connections: %w", s.name, err)
	}
	defer closeConns(cs)
	h.opened += s.conns
	st := h.env.stage(ctx, s.name)
	cpu0, cpuOK := h.t.cpu()
	self0, selfErr := processCPU(os.Getpid())
	d, err := drive(ctx, cs, s.n, s.every, func(ctx context.Context, c *conn, i int) (int, error) {
		return s.op(ctx, c, topic, i)
	})
	cpu1, cpuOK1 := h.t.cpu()
	self1, selfErr1 := processCPU(os.Getpid())
	st.end(ctx, h.r)
	if err != nil {
		return d, fmt.Errorf("%s: %w", s.name, err)
	}
	if s.every > 0 {
		h.r.add(s.name+": p99 latency", ms(percentile(d.latencies, 0.99)), "ms", Lower)
	} else {
		h.r.add(s.name, rate(s.n*s.jobs, d.took), "jobs/s", Higher)
	}
	if cpuOK && cpuOK1 && d.requests > 0 {
		h.r.add(s.name+httpCPUSuffix, ms(cpu1-cpu0)*1000/float64(d.requests), httpCPUUnit, Lower)
		if selfErr == nil && selfErr1 == nil {
			h.generator = append(h.generator, fmt.Sprintf("%s %.0f", s.name, ms(self1-self0)*1000/float64(d.requests)))
		}
	} else {
		h.r.na(s.name+httpCPUSuffix, httpCPUUnit, Lower, h.t.noCPU)
	}
	return d, nil
}

// fill enqueues jobs from to to-1 into topic, job i due after delay(i), in batches of
// httpFillBatch from httpFillConns connections.
func (h *httpRun) fill(ctx context.Context, topic string, from, to int, delay func(i int) time.Duration) error {
	cs, err := h.g.conns(ctx, httpFillConns)
	if err != nil {
		return err
	}
	defer closeConns(cs)
	h.opened += httpFillConns
	batches := (to - from + httpFillBatch - 1) / httpFillBatch
	_, err = drive(ctx, cs, batches, 0, func(ctx context.Context, c *conn, b int) (int, error) {
		first := from + b*httpFillBatch
		return 1, enqueueBatch(ctx, c, topic, batchJSON(first, min(first+httpFillBatch, to), delay))
	})
	return err
}

// memory measures Redis memory per pending job enqueued through the server, as the memory
// scenario does through the library: used_memory growth over the jobs of a new topic, read
// once the last of them is stored, at two backlog sizes.
func (h *httpRun) memory(ctx context.Context) error {
	// What the stages before left behind goes first: call records that expire while the
	// backlog is enqueued would shrink used_memory under it.
	if h.env.Reset != nil {
		if err := h.env.Reset(ctx); err != nil {
			return err
		}
	}
	topic := fmt.Sprintf("bench-http-%d", h.env.seq.Add(1))
	m0, err := UsedMemory(ctx, h.env.RDB)
	if err != nil {
		return err
	}
	// Due over the next hours, 3 ms apart, as in the memory scenario.
	due := func(i int) time.Duration { return time.Hour + time.Duration(i)*3*time.Millisecond }
	done := 0
	for _, n := range []int{h.sz.memSmall, h.sz.memLarge} {
		if err := h.fill(ctx, topic, done, n, due); err != nil {
			return fmt.Errorf("memory: enqueueing jobs %d to %d: %w", done, n-1, err)
		}
		done = n
		m, err := UsedMemory(ctx, h.env.RDB)
		if err != nil {
			return err
		}
		name, perJob := memoryPrefix+countLabel(n)+" jobs", float64(m-m0)/float64(n)
		if perJob < BodySize {
			h.r.na(name, "B/job", Lower, "the server does not store its jobs in the benchmark's Redis; pass the server's with --redis")
			continue
		}
		h.r.add(name, perJob, "B/job", Lower)
	}
	h.r.note("memory per pending job: used_memory growth / jobs of a new topic, once Redis (or the benchmark's namespace) is emptied of the stages before; enqueued through the server in batches of %d from %d conns, due over the next hours (1 h + 3 ms × i), as the memory scenario does through the library",
		httpFillBatch, httpFillConns)
	return nil
}
