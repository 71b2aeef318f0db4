package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

// report is everything one comparison measured; it is saved as results.json.
type report struct {
	Started     time.Time         `json:"started"`
	Finished    time.Time         `json:"finished"`
	Command     string            `json:"command"`
	Machine     machine           `json:"machine"`
	Versions    map[string]string `json:"versions"`
	Hz          string            `json:"hz"`
	Quick       bool              `json:"quick"`
	Runs        int               `json:"runs"`
	Contestants []string          `json:"contestants"`
	Results     []runResult       `json:"results"`
}

// runResult is one scenario's result for one queue in one run.
type runResult struct {
	Run int `json:"run"`
	bench.Result
}

// results returns the results of scenario for queue, one per run.
func (r *report) results(scenario, queue string) []bench.Result {
	var out []bench.Result
	for _, rr := range r.Results {
		if rr.Scenario == scenario && rr.Contestant == queue {
			out = append(out, rr.Result)
		}
	}
	return out
}

// scenarios returns the scenario names in the order they ran.
func (r *report) scenarios() []string {
	var out []string
	for _, rr := range r.Results {
		if !slices.Contains(out, rr.Scenario) {
			out = append(out, rr.Scenario)
		}
	}
	return out
}

// metricNames returns the metric names of scenario in the order the queues reported them.
func (r *report) metricNames(scenario string) []string {
	var out []string
	for _, rr := range r.Results {
		if rr.Scenario != scenario {
			continue
		}
		for _, m := range rr.Metrics {
			if !slices.Contains(out, m.Name) {
				out = append(out, m.Name)
			}
		}
	}
	return out
}

// summary is a metric over the runs of one queue.
type summary struct {
	med, lo, hi float64
	n           int
	unit        string
	better      bench.Better
	na          bool
}

func (r *report) summarize(scenario, queue, metric string) (summary, bool) {
	var s summary
	var vals []float64
	found := false
	for _, res := range r.results(scenario, queue) {
		m, ok := res.Metric(metric)
		if !ok {
			continue
		}
		found = true
		s.unit, s.better = m.Unit, m.Better
		if m.NA {
			s.na = true
			continue
		}
		vals = append(vals, m.Value)
	}
	if !found {
		return s, false
	}
	s.n = len(vals)
	if s.n > 0 {
		s.med, s.lo, s.hi = bench.Median(vals)
		s.na = false
	}
	return s, true
}

func (s summary) String() string {
	if s.na || s.n == 0 {
		return "n/a"
	}
	f := func(v float64) string { return bench.FormatValue(bench.Metric{Value: v}) }
	if s.n == 1 || s.lo == s.hi {
		return f(s.med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.med), f(s.lo), f(s.hi))
}

// target is a goal delayq must reach on one metric.
type target struct {
	text string
	// met reports whether delayq's median d reaches the goal, given the peers' medians and the
	// floors'.
	met func(d float64, peers, floors map[string]float64) bool
}

func bestPeer(peers map[string]float64, better bench.Better) (float64, bool) {
	best, ok := math.NaN(), false
	for _, v := range peers {
		if !ok || (better == bench.Higher && v > best) || (better == bench.Lower && v < best) {
			best, ok = v, true
		}
	}
	return best, ok
}

func atLeast(x float64) func(float64, map[string]float64, map[string]float64) bool {
	return func(d float64, _, _ map[string]float64) bool { return d >= x }
}

func atMost(x float64) func(float64, map[string]float64, map[string]float64) bool {
	return func(d float64, _, _ map[string]float64) bool { return d <= x }
}

func timesBestPeer(k float64) func(float64, map[string]float64, map[string]float64) bool {
	return func(d float64, peers, _ map[string]float64) bool {
		b, ok := bestPeer(peers, bench.Higher)
		return ok && d >= k*b
	}
}

// timesAsynq is met by a rate at least k times asynq's.
func timesAsynq(k float64) func(float64, map[string]float64, map[string]float64) bool {
	return func(d float64, peers, _ map[string]float64) bool {
		a, ok := peers["asynq"]
		return ok && d >= k*a
	}
}

// targets are the goals of the performance work, by scenario and metric.
var targets = map[string]map[string]target{
	"enqueue": {
		"1 producer": {"≥ asynq and ≥ 0.9× the one-EVALSHA floor", func(d float64, p, f map[string]float64) bool {
			floor, ok := f["floor"]
			return timesAsynq(1)(d, p, f) && ok && d >= 0.9*floor
		}},
		"16 producers": {"≥ 1.5× asynq", timesAsynq(1.5)},
		"batch 100":    {"≥ 150,000", atLeast(150_000)},
		"batch 1000":   {"≥ 150,000", atLeast(150_000)},
	},
	"memory": {"at 100k jobs": {"≤ 300", atMost(300)}},
	"precision": {
		"p99 (Redis clock)":   {"≤ 2", atMost(2)},
		"max (Redis clock)":   {"≤ 20", atMost(20)},
		"early (Redis clock)": {"0", atMost(0)},
		"p99 (receipt)":       {"≤ 2", atMost(2)},
		"max (receipt)":       {"≤ 20", atMost(20)},
		"early (receipt)":     {"0", atMost(0)},
	},
	"expiry": {
		"p99":   {"≤ 5", atMost(5)},
		"early": {"0", atMost(0)},
	},
	"precision-load": {
		"p99 (Redis clock)":   {"≤ 2", atMost(2)},
		"max (Redis clock)":   {"≤ 20", atMost(20)},
		"early (Redis clock)": {"0", atMost(0)},
	},
	"http": {
		"enqueue 1 job/request, 64 conns vs library":                     {"≥ 50", atLeast(50)},
		"enqueue 1 job/request, 64 conns at half that rate: p99 latency": {"≤ 5", atMost(5)},
		"memory per pending job at 100k jobs":                            {"≤ 300", atMost(300)},
	},
	"e2e": {
		"end-to-end": {"≥ 2× best peer", timesBestPeer(2)},
		"drain":      {"≥ 2× best peer", timesBestPeer(2)},
	},
	"burst": {
		"all delivered":         {"≤ 3,000", atMost(3000)},
		"slowest Redis command": {"≤ 50", atMost(50)},
	},
	"scaling": {"ratio": {"≥ 90", atLeast(90)}},
}

// ratio compares delayq with the best peer so that above 1 means delayq is ahead.
func ratio(d summary, peers map[string]float64) string {
	if d.na || d.n == 0 {
		return "—"
	}
	b, ok := bestPeer(peers, d.better)
	if !ok {
		return "—"
	}
	var x float64
	switch d.better {
	case bench.Higher:
		if b <= 0 {
			return "—"
		}
		x = d.med / b
	default:
		if d.med <= 0 || b <= 0 {
			if d.med == b {
				return "same"
			}
			return "—"
		}
		x = b / d.med
	}
	if x >= 10 {
		return fmt.Sprintf("%.0f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// missed lists the targets delayq misses, for the summary.
type missed struct{ scenario, metric, target, got string }

// isFloor reports whether the contestant called q is a floor: what Redis allows, shown for
// the distance to it, never a peer to beat.
func isFloor(q string) bool { return strings.HasPrefix(q, "floor") }

// labels are the column headings of contestants whose names say too little.
var labels = map[string]string{
	"asynq-tuned":     "asynq, tuned polling",
	"floor":           "floor: one EVALSHA per job",
	"floor-pipelined": "floor: pipelined EVALSHA",
}

func label(q string) string {
	if l, ok := labels[q]; ok {
		return l
	}
	return q
}

// queuesIn returns the contestants with results in scenario, in the report's order.
func (r *report) queuesIn(scenario string) []string {
	var out []string
	for _, q := range r.Contestants {
		if len(r.results(scenario, q)) > 0 {
			out = append(out, q)
		}
	}
	return out
}

// scenarioTable renders one scenario's table and returns the targets missed in it. Floors
// get columns of their own and a ratio of their own.
func (r *report) scenarioTable(b *strings.Builder, scenario string) []missed {
	var miss []missed
	queues := r.queuesIn(scenario)
	floors := slices.ContainsFunc(queues, isFloor)
	fmt.Fprintf(b, "| metric | unit |")
	for _, q := range queues {
		fmt.Fprintf(b, " %s |", label(q))
	}
	b.WriteString(" delayq vs best peer |")
	if floors {
		b.WriteString(" delayq vs best floor |")
	}
	b.WriteString(" target | met |\n|---|---|")
	for range queues {
		b.WriteString("---:|")
	}
	b.WriteString("---:|")
	if floors {
		b.WriteString("---:|")
	}
	b.WriteString("---|---|\n")
	for _, name := range r.metricNames(scenario) {
		var unit string
		row := make([]summary, len(queues))
		peers, floorRates := map[string]float64{}, map[string]float64{}
		var d summary
		for i, q := range queues {
			s, ok := r.summarize(scenario, q, name)
			if !ok {
				s.na = true
			}
			row[i] = s
			if s.unit != "" {
				unit = s.unit
			}
			switch {
			case q == "delayq":
				d = s
			case s.na || s.n == 0:
			case isFloor(q):
				floorRates[q] = s.med
			default:
				peers[q] = s.med
			}
		}
		if !slices.ContainsFunc(row, func(s summary) bool { return !s.na && s.n > 0 }) {
			continue // a figure no queue has, such as a delayq-only one's placeholder
		}
		fmt.Fprintf(b, "| %s | %s |", name, unit)
		for _, s := range row {
			fmt.Fprintf(b, " %s |", s)
		}
		fmt.Fprintf(b, " %s |", ratio(d, peers))
		if floors {
			fmt.Fprintf(b, " %s |", ratio(d, floorRates))
		}
		t, ok := targets[scenario][name]
		switch {
		case !ok:
			b.WriteString(" | |\n")
		case d.na || d.n == 0:
			fmt.Fprintf(b, " %s | not measured |\n", t.text)
		case t.met(d.med, peers, floorRates):
			fmt.Fprintf(b, " %s | yes |\n", t.text)
		default:
			fmt.Fprintf(b, " %s | **no** |\n", t.text)
			miss = append(miss, missed{scenario, name, t.text + " " + unit, d.String() + " " + unit})
		}
	}
	return miss
}

// notes returns each queue's notes of scenario from its first run, and its errors from all.
func (r *report) notes(b *strings.Builder, scenario string) {
	for _, q := range r.Contestants {
		res := r.results(scenario, q)
		if len(res) == 0 {
			continue
		}
		lines := slices.Clone(res[0].Notes)
		for _, x := range res {
			if x.Error != "" {
				lines = append(lines, "**error**: "+x.Error)
			}
		}
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(b, "- %s: %s\n", q, strings.Join(lines, "; "))
	}
}
