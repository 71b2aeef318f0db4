//go:build faults

package faults_test

import (
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/redistest"
)

// Scenario 13: clients whose clocks are an hour fast or slow. Agents apply the skew to every
// local time they hand the library (DELAYQ_AGENT_CLOCK_SKEW), as a client with a wrong clock
// would. What it proves, and no more: a Delay becomes a due time by the Redis server's clock
// whatever the producer's clock says, and workers deliver by the Redis clock; an absolute RunAt
// is kept exactly as given, so a producer with a wrong clock gets the wrong due time it asked
// for (an hour late or at once), never a silently "corrected" one. The library's own uses of
// the local clock (timers for sleeping) are not skewed by this: faking the process clock would
// need a tool such as faketime.
func TestClockSkew(t *testing.T) {
	srv := redistest.Standalone(t)
	h := newHarness(t, "redis://"+srv.Addr, srv.Client(t), delayq.Config{})
	n := scale(500, 5000)
	const lead = 2 * time.Second
	producers := []struct {
		prefix string
		skew   time.Duration
		runAt  bool
	}{
		{"delay-fast", time.Hour, false},
		{"delay-slow", -time.Hour, false},
		{"runat-fast", time.Hour, true},
		{"runat-slow", -time.Hour, true},
	}
	h.startEnv([]string{"DELAYQ_AGENT_CLOCK_SKEW=1h"}, "worker-fast", "work", "-concurrency", "50")
	h.startEnv([]string{"DELAYQ_AGENT_CLOCK_SKEW=-1h"}, "worker-slow", "work", "-concurrency", "50")
	var agents []*agent
	for _, p := range producers {
		mode := []string{"-delay", lead.String()}
		if p.runAt {
			mode = []string{"-run-at-lead", lead.String()}
		}
		args := append([]string{"-prefix", p.prefix, "-n", itoa(n), "-batch", "10", "-rate", itoa(n / 2)}, mode...)
		agents = append(agents, h.startEnv([]string{"DELAYQ_AGENT_CLOCK_SKEW=" + p.skew.String()}, p.prefix, "produce", args...))
	}
	for _, a := range agents {
		h.finished(a, time.Minute)
	}
	// Everything but the jobs due in an hour drains.
	h.drain(time.Minute, int64(n))
	r := h.check(faults.Rules{MayRemain: func(id string) bool { return strings.HasPrefix(id, "runat-fast-") }}, false)

	events, err := faults.ReadLogs(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	enqueuedAt := map[string]int64{}
	worst := map[string]time.Duration{} // per producer, the largest deviation from what is expected
	for i, p := range producers {
		for _, e := range agents[i].events() {
			if e.Kind != faults.Enqueued {
				continue
			}
			enqueuedAt[e.ID] = e.T
			var dev time.Duration
			if p.runAt {
				// The due time is the one asked for, and that was skewed.
				if e.RunAt != e.Want {
					t.Errorf("%s: due at %d, asked for %d", e.ID, e.RunAt, e.Want)
				}
				dev = time.Duration(e.Want-e.T)*time.Millisecond - (p.skew + lead)
			} else {
				// Due lead after the Redis server received it; the producer's clock plays no part.
				dev = time.Duration(e.RunAt-e.T)*time.Millisecond - lead
			}
			worst[p.prefix] = max(worst[p.prefix], dev.Abs())
		}
		if worst[p.prefix] > time.Second {
			t.Errorf("%s: a due time is %v off what was expected", p.prefix, worst[p.prefix])
		}
	}
	delivered := map[string]int{}
	var slowestAtOnce, delayLate time.Duration
	for _, e := range events {
		if e.Kind != faults.Delivered {
			continue
		}
		prefix := e.ID[:strings.LastIndexByte(e.ID, '-')]
		delivered[prefix]++
		if strings.HasPrefix(prefix, "delay-") {
			delayLate = max(delayLate, time.Duration(e.Reserved-e.RunAt)*time.Millisecond)
		}
		if prefix == "runat-slow" {
			slowestAtOnce = max(slowestAtOnce, time.Duration(e.Reserved-enqueuedAt[e.ID])*time.Millisecond)
		}
	}
	for _, p := range producers {
		want := n
		if p.prefix == "runat-fast" {
			want = 0
		}
		if delivered[p.prefix] != want {
			t.Errorf("%s: %d jobs delivered, want %d", p.prefix, delivered[p.prefix], want)
		}
	}
	if slowestAtOnce > time.Second {
		t.Errorf("a job given a RunAt an hour past waited %v, want it delivered at once", slowestAtOnce)
	}
	if delayLate > time.Second {
		t.Errorf("a job with a Delay was delivered %v after its due time", delayLate)
	}
	if r.Remaining != n {
		t.Errorf("%d jobs due in an hour remain, want %d", r.Remaining, n)
	}
	record(t, figures(r, map[string]any{
		"delay_fast_worst_deviation_ms": worst["delay-fast"].Milliseconds(),
		"delay_slow_worst_deviation_ms": worst["delay-slow"].Milliseconds(),
		"runat_fast_delivered":          delivered["runat-fast"], "runat_fast_remaining": r.Remaining,
		"runat_slow_slowest_ms": slowestAtOnce.Milliseconds(), "delay_jobs_late_max_ms": delayLate.Milliseconds(),
	}))
}
