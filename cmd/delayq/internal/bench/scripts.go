package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/delayq/delayq"
)

// scriptStage is one of delayq's scripts run alone, to time it on the server.
type scriptStage struct {
	name string
	// script is the script the stage times; the first stage of a script learns its sha.
	script string
	// prepare runs before the stage's SLOWLOG is reset, to set up what run needs.
	prepare func(ctx context.Context) error
	run     func(ctx context.Context) error
	// maxOnly reports only the slowest call: most calls of the stage do not do what it times.
	maxOnly bool
}

// runScripts times each of delayq's scripts by the server, with SLOWLOG recording every
// command: a stage runs one kind of call, so the scripts need no telling apart.
func runScripts(ctx context.Context, env *Env, c Contestant) Result {
	var r Result
	q, err := env.open(ctx, c, "scripts")
	if err != nil {
		return fail(r, "%v", err)
	}
	defer closeQueue(ctx, q)
	dc := Client(q)
	if dc == nil {
		r.na("scripts", "µs", Lower, "times delayq's own scripts")
		return r
	}
	sb := &scriptBench{dc: dc, topic: fmt.Sprintf("bench-scripts-%d", env.seq.Add(1))}
	calls := env.sizes().scriptCalls
	restore, err := setConfig(ctx, env.RDB, "slowlog-log-slower-than", "0", "slowlog-max-len", "20000")
	defer restore()
	if err != nil {
		return fail(r, "%v", err)
	}
	r.note("SLOWLOG with no threshold times every call on the server; %d calls a stage (batch and promote stages fewer)", calls)
	shas := map[string]string{} // script → sha
	for _, s := range sb.stages(calls) {
		if err := timeStage(ctx, env, s, shas, &r); err != nil {
			return fail(r, "%v", err)
		}
	}
	return r
}

// timeStage runs one stage and adds the server's timings of its script to r. The first stage
// of a script records the script's sha in shas.
func timeStage(ctx context.Context, env *Env, s scriptStage, shas map[string]string, r *Result) error {
	if err := s.prepare(ctx); err != nil {
		return fmt.Errorf("%s: preparing: %w", s.name, err)
	}
	if err := env.RDB.SlowLogReset(ctx).Err(); err != nil {
		return fmt.Errorf("SLOWLOG RESET: %w", err)
	}
	st := env.stage(ctx, s.name)
	if err := s.run(ctx); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	st.end(ctx, r)
	entries, err := SlowLog(ctx, env.RDB, 20000)
	if err != nil {
		return err
	}
	sha, ok := shas[s.script]
	if !ok {
		sha = commonestSHA(entries)
		shas[s.script] = sha
	}
	var took []time.Duration
	for _, e := range entries {
		if len(e.Args) > 1 && strings.HasPrefix(strings.ToLower(e.Args[0]), "eval") && e.Args[1] == sha {
			took = append(took, e.Duration)
		}
	}
	if len(took) == 0 {
		return fmt.Errorf("%s: SLOWLOG recorded no call of the script", s.name)
	}
	sum := summarize(took, 0)
	if !s.maxOnly {
		r.add(s.name+" p50", float64(sum.P50.Microseconds()), "µs", Lower)
		r.add(s.name+" p99", float64(sum.P99.Microseconds()), "µs", Lower)
	}
	r.add(s.name+" max", float64(sum.Max.Microseconds()), "µs", Lower)
	return nil
}

// scriptBench makes the calls of the script stages on one topic, keeping the leases it took.
type scriptBench struct {
	dc     *delayq.Client
	topic  string
	leased []*delayq.Job
}

// stages returns the stages, each making about calls calls.
func (sb *scriptBench) stages(calls int) []scriptStage {
	nothing := func(context.Context) error { return nil }
	batches := max(2, calls/100)
	rounds := max(2, calls/400)
	return []scriptStage{
		{name: "enqueue, 1 job", script: "enqueue", prepare: nothing, run: func(ctx context.Context) error {
			for i := range calls {
				if _, err := sb.dc.Enqueue(ctx, sb.topic, delayq.Spec{Body: Body(i), Delay: time.Hour}); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "enqueue, batch of 1000", script: "enqueue", prepare: nothing, run: func(ctx context.Context) error {
			return sb.enqueue(ctx, batches*1000, delayq.Spec{Delay: time.Hour})
		}},
		{name: "reserve, 1 job", script: "reserve", prepare: func(ctx context.Context) error {
			return sb.enqueue(ctx, calls, delayq.Spec{})
		}, run: func(ctx context.Context) error { return sb.reserve(ctx, 1, calls) }},
		{name: "ack", script: "ack", prepare: nothing, run: sb.ackAll},
		{name: "reserve, 100 jobs", script: "reserve", prepare: func(ctx context.Context) error {
			return sb.enqueue(ctx, batches*100, delayq.Spec{})
		}, run: func(ctx context.Context) error { return sb.reserve(ctx, 100, batches) }},
		{name: "nack", script: "nack", prepare: nothing, run: sb.nackAll},
		// Only each round's first due reserve promotes; the rest lease what it promoted.
		{name: "reserve, promoting 1000 due jobs", script: "reserve", prepare: nothing, maxOnly: true,
			run: func(ctx context.Context) error { return sb.promoteRounds(ctx, rounds) }},
	}
}

// enqueue enqueues n copies of s in batches of 1000, each with its own body.
func (sb *scriptBench) enqueue(ctx context.Context, n int, s delayq.Spec) error {
	for done := 0; done < n; done += 1000 {
		specs := make([]delayq.Spec, min(1000, n-done))
		for i := range specs {
			specs[i] = s
			specs[i].Body = Body(done + i)
		}
		if _, err := sb.dc.EnqueueBatch(ctx, sb.topic, specs); err != nil {
			return err
		}
	}
	return nil
}

// reserve makes times reserves of up to max jobs each, every one of which must find a job.
func (sb *scriptBench) reserve(ctx context.Context, max, times int) error {
	for range times {
		jobs, err := sb.dc.Reserve(ctx, sb.topic, delayq.ReserveOptions{Max: max, Wait: time.Second})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return fmt.Errorf("reserve found no job")
		}
		sb.leased = append(sb.leased, jobs...)
	}
	return nil
}

func (sb *scriptBench) ackAll(ctx context.Context) error {
	for _, j := range sb.leased {
		if err := sb.dc.Ack(ctx, delayq.Lease{Topic: sb.topic, ID: j.ID, Token: j.LeaseToken}); err != nil {
			return err
		}
	}
	sb.leased = nil
	return nil
}

func (sb *scriptBench) nackAll(ctx context.Context) error {
	for _, j := range sb.leased {
		if _, err := sb.dc.Nack(ctx, delayq.Lease{Topic: sb.topic, ID: j.ID, Token: j.LeaseToken}, delayq.NackOptions{Error: "bench"}); err != nil {
			return err
		}
	}
	sb.leased = nil
	return nil
}

// promoteRounds enqueues 1000 jobs due shortly, rounds times, and reserves once they are due:
// the first reserve of a round promotes all thousand.
func (sb *scriptBench) promoteRounds(ctx context.Context, rounds int) error {
	for range rounds {
		if err := sb.enqueue(ctx, 1000, delayq.Spec{Delay: 200 * time.Millisecond}); err != nil {
			return err
		}
		if err := sb.reserve(ctx, 1, 1); err != nil {
			return err
		}
		if err := sb.ackAll(ctx); err != nil {
			return err
		}
		// Lease the rest so that the next round promotes a full thousand again.
		for {
			jobs, err := sb.dc.Reserve(ctx, sb.topic, delayq.ReserveOptions{Max: 1000})
			if err != nil || len(jobs) == 0 {
				break
			}
			sb.leased = append(sb.leased, jobs...)
		}
		if err := sb.ackAll(ctx); err != nil {
			return err
		}
	}
	return nil
}

// commonestSHA returns the script sha most EVALSHA entries carry.
func commonestSHA(entries []SlowEntry) string {
	count := map[string]int{}
	best := ""
	for _, e := range entries {
		if len(e.Args) > 1 && strings.EqualFold(e.Args[0], "evalsha") {
			count[e.Args[1]]++
			if count[e.Args[1]] > count[best] {
				best = e.Args[1]
			}
		}
	}
	return best
}
