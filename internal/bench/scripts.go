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
	topic := fmt.Sprintf("bench-scripts-%d", env.seq.Add(1))
	calls := env.sizes().scriptCalls
	restore, err := setConfig(ctx, env.RDB, "slowlog-log-slower-than", "0", "slowlog-max-len", "20000")
	defer restore()
	if err != nil {
		return fail(r, "%v", err)
	}
	r.note("SLOWLOG with no threshold times every call on the server; %d calls a stage (batch and promote stages fewer)", calls)

	enqueue := func(ctx context.Context, n int, s delayq.Spec) error {
		for done := 0; done < n; done += 1000 {
			specs := make([]delayq.Spec, min(1000, n-done))
			for i := range specs {
				specs[i] = s
				specs[i].Body = Body(done + i)
			}
			if _, err := dc.EnqueueBatch(ctx, topic, specs); err != nil {
				return err
			}
		}
		return nil
	}
	var leased []*delayq.Job
	reserve := func(ctx context.Context, max, times int) error {
		for range times {
			jobs, err := dc.Reserve(ctx, topic, delayq.ReserveOptions{Max: max, Wait: time.Second})
			if err != nil {
				return err
			}
			if len(jobs) == 0 {
				return fmt.Errorf("reserve found no job")
			}
			leased = append(leased, jobs...)
		}
		return nil
	}
	ackAll := func(ctx context.Context) error {
		for _, j := range leased {
			if err := dc.Ack(ctx, topic, j.ID, j.Lease); err != nil {
				return err
			}
		}
		leased = nil
		return nil
	}
	nothing := func(context.Context) error { return nil }
	batches := max(2, calls/100)
	rounds := max(2, calls/400)
	stages := []scriptStage{
		{"enqueue, 1 job", "enqueue", nothing, func(ctx context.Context) error {
			for i := range calls {
				if _, err := dc.Enqueue(ctx, topic, delayq.Spec{Body: Body(i), Delay: time.Hour}); err != nil {
					return err
				}
			}
			return nil
		}},
		{"enqueue, batch of 1000", "enqueue", nothing, func(ctx context.Context) error {
			return enqueue(ctx, batches*1000, delayq.Spec{Delay: time.Hour})
		}},
		{"reserve, 1 job", "reserve", func(ctx context.Context) error {
			return enqueue(ctx, calls, delayq.Spec{})
		}, func(ctx context.Context) error { return reserve(ctx, 1, calls) }},
		{"ack", "ack", nothing, ackAll},
		{"reserve, 100 jobs", "reserve", func(ctx context.Context) error {
			return enqueue(ctx, batches*100, delayq.Spec{})
		}, func(ctx context.Context) error { return reserve(ctx, 100, batches) }},
		{"nack", "nack", nothing, func(ctx context.Context) error {
			for _, j := range leased {
				if _, err := dc.Nack(ctx, topic, j.ID, j.Lease, delayq.NackOptions{Error: "bench"}); err != nil {
					return err
				}
			}
			leased = nil
			return nil
		}},
		{"reserve, promoting 1000 due jobs", "reserve", nothing, func(ctx context.Context) error {
			for range rounds {
				if err := enqueue(ctx, 1000, delayq.Spec{Delay: 200 * time.Millisecond}); err != nil {
					return err
				}
				if err := reserve(ctx, 1, 1); err != nil {
					return err
				}
				if err := ackAll(ctx); err != nil {
					return err
				}
				// Lease the rest so that the next round promotes a full thousand again.
				for {
					jobs, err := dc.Reserve(ctx, topic, delayq.ReserveOptions{Max: 1000})
					if err != nil || len(jobs) == 0 {
						break
					}
					leased = append(leased, jobs...)
				}
				if err := ackAll(ctx); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	shas := map[string]string{} // script → sha
	for _, s := range stages {
		if err := s.prepare(ctx); err != nil {
			return fail(r, "%s: preparing: %v", s.name, err)
		}
		if err := env.RDB.SlowLogReset(ctx).Err(); err != nil {
			return fail(r, "SLOWLOG RESET: %v", err)
		}
		st := env.stage(ctx, s.name)
		if err := s.run(ctx); err != nil {
			return fail(r, "%s: %v", s.name, err)
		}
		st.end(ctx, &r)
		entries, err := SlowLog(ctx, env.RDB, 20000)
		if err != nil {
			return fail(r, "%v", err)
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
			return fail(r, "%s: SLOWLOG recorded no call of the script", s.name)
		}
		if s.name == "reserve, promoting 1000 due jobs" {
			// Only each round's first due reserve promotes; the rest lease what it promoted.
			sum := summarize(took, 0)
			r.add(s.name+" max", float64(sum.Max.Microseconds()), "µs", Lower)
			continue
		}
		sum := summarize(took, 0)
		r.add(s.name+" p50", float64(sum.P50.Microseconds()), "µs", Lower)
		r.add(s.name+" p99", float64(sum.P99.Microseconds()), "µs", Lower)
		r.add(s.name+" max", float64(sum.Max.Microseconds()), "µs", Lower)
	}
	return r
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
