package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// freeConsumers is the handler concurrency of the scenarios that need a consumer free whenever
// a job comes due.
const freeConsumers = 64

// awaitTimeout bounds how long a scenario waits for its deliveries beyond the last due time.
func (env *Env) awaitTimeout() time.Duration {
	if env.Quick {
		return 20 * time.Second
	}
	return 2 * time.Minute
}

func runPrecision(ctx context.Context, env *Env, c Contestant) Result {
	sz := env.sizes()
	return precision(ctx, env, c, sz.precisionN, sz.precisionSpan, false)
}

// runPrecisionUnderLoad is runPrecision with jobs coming due five times as often while 16
// producers enqueue flat out into another topic of the same queue.
func runPrecisionUnderLoad(ctx context.Context, env *Env, c Contestant) Result {
	sz := env.sizes()
	return precision(ctx, env, c, 5*sz.precisionN, sz.precisionSpan, true)
}

// precision measures the lateness of n jobs due one after another over span; with load, 16
// producers enqueue into another topic, one job per call, from before the first job is due
// until the last is delivered.
func precision(ctx context.Context, env *Env, c Contestant, n int, span time.Duration, load bool) Result {
	var r Result
	offset, uncertainty, err := ClockOffset(ctx, env.RDB)
	if err != nil {
		return fail(r, "%v", err)
	}
	q, err := env.open(ctx, c, "precision")
	if err != nil {
		return fail(r, "%v", err)
	}
	defer closeQueue(ctx, q)
	if err := q.Consume(ctx, freeConsumers); err != nil {
		return fail(r, "consume: %v", err)
	}
	lead := 3 * time.Second
	if env.Quick {
		lead = time.Second
	}
	p := fill(q, n)
	p.At = time.Now().Add(lead).Truncate(time.Millisecond)
	p.Step = span / time.Duration(n)
	r.note("%d jobs due one every %v over %v, %d free handlers; %s", n, p.Step, span, freeConsumers, fillNote(q))
	r.note("server clock − local clock = %v ± %v; a delivery counts as early when it precedes its due time by more than that uncertainty", offset.Round(time.Microsecond), uncertainty.Round(time.Microsecond))
	produced, err := q.Produce(ctx, p)
	if err != nil {
		return fail(r, "produce: %v", err)
	}
	if produced.End.After(p.At) {
		r.note("enqueueing took %v, longer than the %v lead: the first jobs were stored after their due time", produced.End.Sub(produced.Start).Round(time.Millisecond), lead)
	}
	var stopLoad func() (jobs int, took time.Duration, err error)
	if load {
		if stopLoad, err = flood(ctx, env, c); err != nil {
			return fail(r, "load: %v", err)
		}
	}
	actx, cancel := context.WithTimeout(ctx, lead+span+env.awaitTimeout())
	defer cancel()
	aw, err := q.Await(actx, n)
	if load {
		jobs, took, ferr := stopLoad()
		if ferr != nil {
			return fail(r, "load: %v", ferr)
		}
		r.add("load enqueued", rate(jobs, took), "jobs/s", Higher)
		r.note("load: 16 producers enqueueing one job per call into another topic, due in an hour: %d jobs in %v", jobs, took.Round(time.Millisecond))
	}
	if err != nil {
		return fail(r, "%v", err)
	}
	var byServer, byReceipt []time.Duration
	for _, d := range aw.Deliveries {
		due := p.DueAt(d.Index)
		byReceipt = append(byReceipt, d.Received.Add(offset).Sub(due))
		if !d.Reserved.IsZero() {
			byServer = append(byServer, d.Reserved.Sub(due))
		}
	}
	if dup := duplicates(aw.Deliveries); dup > 0 {
		r.note("jobs delivered more than once: %d", dup)
	}
	if len(byServer) > 0 {
		s := summarize(byServer, 0)
		r.add("p50 (Redis clock)", ms(s.P50), "ms", Lower)
		r.add("p99 (Redis clock)", ms(s.P99), "ms", Lower)
		r.add("max (Redis clock)", ms(s.Max), "ms", Lower)
		r.add("early (Redis clock)", float64(s.Early), "jobs", Lower)
		r.note("Redis clock: lease time (lease deadline − TTR, whole ms) − due time")
	} else {
		for _, m := range []string{"p50", "p99", "max"} {
			r.na(m+" (Redis clock)", "ms", Lower, "the queue does not report when Redis handed a job out")
		}
		r.na("early (Redis clock)", "jobs", Lower, "the queue does not report when Redis handed a job out")
	}
	s := summarize(byReceipt, uncertainty)
	r.add("p50 (receipt)", ms(s.P50), "ms", Lower)
	r.add("p99 (receipt)", ms(s.P99), "ms", Lower)
	r.add("max (receipt)", ms(s.Max), "ms", Lower)
	r.add("early (receipt)", float64(s.Early), "jobs", Lower)
	if s.Early > 0 {
		r.add("earliest (receipt)", ms(-time.Duration(s.Samples[0]*float64(time.Millisecond))), "ms early", Lower)
	}
	r.Samples = map[string][]float64{"lateness_ms": s.Samples}
	return r
}

// duplicates counts deliveries of an index already delivered.
func duplicates(ds []Delivery) int {
	seen := make(map[int]bool, len(ds))
	n := 0
	for _, d := range ds {
		if seen[d.Index] {
			n++
		}
		seen[d.Index] = true
	}
	return n
}

const e2eConsumers = 16

func runE2E(ctx context.Context, env *Env, c Contestant) Result {
	var r Result
	n := env.sizes().e2e
	// Jobs enqueued while the handlers run.
	q, err := env.open(ctx, c, "e2e")
	if err != nil {
		return fail(r, "%v", err)
	}
	r.note("%d jobs due at once, %d handlers that do nothing; %s", n, e2eConsumers, fillNote(q))
	st := env.stage(ctx, "end-to-end")
	err = func() error {
		defer closeQueue(ctx, q)
		if err := q.Consume(ctx, e2eConsumers); err != nil {
			return fmt.Errorf("consume: %w", err)
		}
		p, err := q.Produce(ctx, fill(q, n))
		if err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		actx, cancel := context.WithTimeout(ctx, env.awaitTimeout())
		defer cancel()
		aw, err := q.Await(actx, n)
		if err != nil {
			return err
		}
		r.add("end-to-end", rate(n, aw.Done.Sub(p.Start)), "jobs/s", Higher)
		return nil
	}()
	st.end(ctx, &r)
	if err != nil {
		return fail(r, "end-to-end: %v", err)
	}
	// A backlog enqueued before the handlers start.
	q, err = env.open(ctx, c, "drain")
	if err != nil {
		return fail(r, "%v", err)
	}
	defer closeQueue(ctx, q)
	if _, err := q.Produce(ctx, fill(q, n)); err != nil {
		return fail(r, "drain: produce: %v", err)
	}
	st = env.stage(ctx, "drain")
	start := time.Now()
	if err := q.Consume(ctx, e2eConsumers); err != nil {
		return fail(r, "drain: consume: %v", err)
	}
	actx, cancel := context.WithTimeout(ctx, env.awaitTimeout())
	defer cancel()
	aw, err := q.Await(actx, n)
	st.end(ctx, &r)
	if err != nil {
		return fail(r, "drain: %v", err)
	}
	r.add("drain", rate(n, aw.Done.Sub(start)), "jobs/s", Higher)
	return r
}

// runBurst makes a backlog due at one instant and measures how soon after it every job is
// delivered, and the slowest Redis command meanwhile.
func runBurst(ctx context.Context, env *Env, c Contestant) Result {
	var r Result
	n := env.sizes().burst
	offset, _, err := ClockOffset(ctx, env.RDB)
	if err != nil {
		return fail(r, "%v", err)
	}
	restore, err := setConfig(ctx, env.RDB, "slowlog-log-slower-than", "10000", "slowlog-max-len", "1024", "latency-monitor-threshold", "10")
	defer restore()
	if err != nil {
		return fail(r, "%v", err)
	}
	b, err := produceBurst(ctx, env, c, n, &r)
	if err != nil {
		return fail(r, "%v", err)
	}
	defer closeQueue(ctx, b.q)
	r.note("%d jobs due at one instant %v after the enqueue began, %d free handlers; %s; SLOWLOG threshold 10 ms", n, b.lead.Round(time.Millisecond), freeConsumers, b.fill)
	if err := env.RDB.SlowLogReset(ctx).Err(); err != nil {
		return fail(r, "SLOWLOG RESET: %v", err)
	}
	if err := env.RDB.Do(ctx, "LATENCY", "RESET").Err(); err != nil {
		return fail(r, "LATENCY RESET: %v", err)
	}
	st := env.stage(ctx, "delivery")
	actx, cancel := context.WithTimeout(ctx, b.lead+env.awaitTimeout())
	defer cancel()
	aw, err := b.q.Await(actx, n)
	st.end(ctx, &r)
	if err != nil {
		return fail(r, "%v", err)
	}
	late := make([]time.Duration, len(aw.Deliveries))
	for i, d := range aw.Deliveries {
		late[i] = d.Received.Add(offset).Sub(b.at)
	}
	slices.Sort(late)
	r.add("first delivered", ms(late[0]), "ms after due", Lower)
	r.add("all delivered", ms(late[len(late)-1]), "ms after due", Lower)
	r.add("all acked", ms(aw.Done.Add(offset).Sub(b.at)), "ms after due", Lower)
	if late[0] < 0 {
		r.note("the first delivery came %v before the due instant", (-late[0]).Round(time.Microsecond))
	}
	if err := reportSlowCommands(ctx, env, &r); err != nil {
		return fail(r, "%v", err)
	}
	return r
}

// burst is a backlog stored and due at one instant.
type burst struct {
	q    Queue
	at   time.Time     // the instant
	lead time.Duration // how long after the enqueue began it is
	fill string        // how the backlog was enqueued
}

// produceBurst enqueues n jobs due at one instant, with consumers ready. Should storing them
// take until past the instant, it tries once more with a longer lead.
func produceBurst(ctx context.Context, env *Env, c Contestant, n int, r *Result) (burst, error) {
	lead := 2 * time.Second
	if env.Quick {
		lead = time.Second
	}
	for attempt := 0; ; attempt++ {
		q, err := env.open(ctx, c, "burst")
		if err != nil {
			return burst{}, err
		}
		if err := q.Consume(ctx, freeConsumers); err != nil {
			_ = closeQueue(ctx, q)
			return burst{}, fmt.Errorf("consume: %w", err)
		}
		p := fill(q, n)
		p.At = time.Now().Add(lead).Truncate(time.Millisecond)
		b := burst{q: q, at: p.At, lead: lead, fill: fillNote(q)}
		produced, err := q.Produce(ctx, p)
		if err != nil {
			_ = closeQueue(ctx, q)
			return burst{}, fmt.Errorf("produce: %w", err)
		}
		took := produced.End.Sub(produced.Start)
		if !produced.End.After(b.at.Add(-100*time.Millisecond)) || attempt == 1 {
			if produced.End.After(b.at) {
				r.note("enqueueing took %v, past the due instant", took.Round(time.Millisecond))
			}
			return b, nil
		}
		// Too slow to store the burst before it is due: try again with time to spare.
		_ = closeQueue(ctx, q)
		lead = 2*took + time.Second
	}
}

// reportSlowCommands adds the slowest command of the SLOWLOG to r, and notes the LATENCY
// monitor's events.
func reportSlowCommands(ctx context.Context, env *Env, r *Result) error {
	slow, err := SlowLog(ctx, env.RDB, 1024)
	if err != nil {
		return err
	}
	var slowest SlowEntry
	for _, e := range slow {
		if e.Duration > slowest.Duration {
			slowest = e
		}
	}
	r.add("slowest Redis command", ms(slowest.Duration), "ms", Lower)
	if slowest.Duration > 0 {
		r.Stages[len(r.Stages)-1].Slowest = &slowest
		r.note("%d commands over 10 ms; slowest: %v %s", len(slow), slowest.Duration.Round(time.Microsecond), describeArgs(slowest.Args))
	}
	if lat, err := LatencyLatest(ctx, env.RDB); err == nil && len(lat) > 0 {
		r.note("LATENCY LATEST: %s", joinSemi(lat))
	} else if err == nil {
		r.note("LATENCY LATEST: no event over 10 ms")
	}
	return nil
}

// describeArgs shows a command's name and first argument (a script's sha), not its data.
func describeArgs(args []string) string {
	if len(args) == 0 {
		return ""
	}
	s := args[0]
	if len(args) > 1 {
		a := args[1]
		if len(a) > 12 {
			a = a[:12] + "…"
		}
		s += " " + a
	}
	return s
}

func joinSemi(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += "; "
		}
		out += v
	}
	return out
}

// flood starts 16 producers enqueueing one job per call, due in an hour, into a topic of its
// own, and returns a function that stops them and reports how many jobs they stored in how long.
func flood(ctx context.Context, env *Env, c Contestant) (func() (int, time.Duration, error), error) {
	q, err := env.openAnother(ctx, c, "flood")
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithCancel(ctx)
	const chunk = 4000
	var jobs int
	var ferr error
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		for fctx.Err() == nil {
			pr, err := q.Produce(fctx, Plan{N: chunk, Producers: 16, Delay: time.Hour})
			if err != nil {
				// The chunk the stop cut short counts for what it stored: on a slow machine
				// the whole load may be less than one chunk.
				jobs += pr.Stored
				if fctx.Err() == nil {
					ferr = err
				}
				return
			}
			jobs += chunk
		}
	}()
	return func() (int, time.Duration, error) {
		cancel()
		<-done
		took := time.Since(start)
		_ = closeQueue(ctx, q)
		return jobs, took, ferr
	}, nil
}
