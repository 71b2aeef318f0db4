// Package budget holds what one call on delayq's hot path may cost, in the two measures that do
// not move with the machine's load: the instructions redis-server executes for it (counted by
// callgrind: go run ./cmd/delayq/bench/scriptcost -check) and the allocations the Go client
// makes for it (testing.AllocsPerRun, in the tests named TestAllocationsPerCall…). CI runs both
// checks (make check-cost) and fails when a figure is over its budget.
//
// Each budget is today's figure and a small margin. A change that needs more raises the figure
// here, in the same commit, and says in its message why the cost is worth it; a change that
// needs less lowers it, so that the room it won is not spent unseen.
package budget

import (
	"fmt"
	"runtime"
	"strconv"
)

// Cost is one budget: Today is the figure as last measured, Max the most a check allows, Calls
// the calls a check makes (after its set-up) to measure it. A figure per call moves a little
// with the count (hash tables grow in steps), so the budgets hold for that many.
type Cost struct {
	Today, Max float64
	Calls      int
}

// Judge says what a check makes of a measured figure: whether it is within the budget, and in
// words what to do about it. A figure more than twice the margin under Today is within the
// budget, and the budget should come down to it.
func (c Cost) Judge(measured float64) (verdict string, ok bool) {
	switch {
	case measured > c.Max:
		return fmt.Sprintf("OVER BUDGET (today %s, budget %s): find what the change added, or raise the budget in internal/budget and say why in the commit", num(c.Today), num(c.Max)), false
	case measured < c.Today-2*(c.Max-c.Today):
		return fmt.Sprintf("within budget, well under today's %s: lower the budget in internal/budget", num(c.Today)), true
	}
	return fmt.Sprintf("within budget (today %s, budget %s)", num(c.Today), num(c.Max)), true
}

// num writes a figure as it is written here: 1357000, 78.5.
func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// AllocsPerCall is testing.AllocsPerRun without its rounding down: the mean allocations of runs
// calls of f, after one more to warm up, so that a path that allocates once more now and then
// (a pool refilled after a collection) counts a fraction rather than moving the figure by one
// from run to run.
func AllocsPerCall(runs int, f func()) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(runs)
}

// Instructions are the redis-server instructions per call, by the check's variant, less the C
// library's string functions chosen for the CPU and the event loop's work around its turns (see
// scriptcost), so that they hold on any x86-64 machine with the same Redis and C library. A figure is the median of three servers;
// repeated checks agree within 0.8 % (Redis draws a hash seed at start, which moves its
// lookups). The margins are 1.5 %, and 1 % for a lone enqueue, so that one more redis.call of
// the cheapest kind (a GET of a missing key, about 2,500 instructions, 2 %) fails it.
var Instructions = map[string]Cost{
	// Enqueue of one job due in an hour (default Config: its own record answers a replay).
	"enqueue": {Today: 124_900, Max: 126_200, Calls: 500},
	// EnqueueBatch of 16 jobs, as 16 producers' calls coalesce into one.
	"enqueue-16": {Today: 588_200, Max: 597_000, Calls: 500},
	// Reserve of 16 due jobs from a backlog, the jobs of each call acked before the next. (Each
	// call is counted alone, a tenth of a second's work under callgrind: hence fewer calls.)
	"reserve-16": {Today: 1_323_000, Max: 1_343_000, Calls: 64},
	// Ack of one lease of 16 held, as a worker with 16 handlers holds them.
	"ack": {Today: 132_500, Max: 134_500, Calls: 496},
}

// Allocations are the Go client's allocations per call, by the test that counts them (a mean
// over Calls calls). The margin is under one allocation.
var Allocations = map[string]Cost{
	// Client.Enqueue of one job with a 100-byte body (TestAllocationsPerCall/enqueue).
	"enqueue": {Today: 47, Max: 47.5, Calls: 400},
	// Client.Reserve of one job and Client.Ack of its lease (TestAllocationsPerCall/reserve_ack).
	"reserve+ack": {Today: 113, Max: 113.5, Calls: 400},
	// POST /v1/topics/{topic}/jobs of one job, through the server's handler
	// (cmd/delayq/internal/httpapi's TestAllocationsPerCall).
	"http enqueue": {Today: 92, Max: 92.5, Calls: 400},
}
