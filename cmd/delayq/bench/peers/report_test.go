package main

import (
	"strings"
	"testing"

	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

func TestRatio(t *testing.T) {
	tests := []struct {
		name  string
		d     summary
		peers map[string]float64
		want  string
	}{
		{"rate ahead", summary{med: 200, n: 3, better: bench.Higher}, map[string]float64{"asynq": 100, "bullmq": 50}, "2.00×"},
		{"rate behind", summary{med: 50, n: 3, better: bench.Higher}, map[string]float64{"asynq": 100}, "0.50×"},
		{"time ahead", summary{med: 2, n: 3, better: bench.Lower}, map[string]float64{"asynq": 150, "bullmq": 100}, "50×"},
		{"both zero", summary{med: 0, n: 3, better: bench.Lower}, map[string]float64{"bullmq": 0}, "same"},
		{"no peer", summary{med: 1, n: 3, better: bench.Higher}, map[string]float64{}, "—"},
		{"delayq not measured", summary{na: true, better: bench.Higher}, map[string]float64{"asynq": 1}, "—"},
	}
	for _, tt := range tests {
		if got := ratio(tt.d, tt.peers); got != tt.want {
			t.Errorf("%s: ratio = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestRenderMarkdown(t *testing.T) {
	res := func(run int, queue string, ms ...bench.Metric) runResult {
		return runResult{Run: run, Result: bench.Result{Scenario: "e2e", Contestant: queue, Metrics: ms}}
	}
	rate := func(name string, v float64) bench.Metric {
		return bench.Metric{Name: name, Value: v, Unit: "jobs/s", Better: bench.Higher}
	}
	r := &report{Runs: 3, Contestants: []string{"delayq", "asynq"}, Command: "make bench-peers", Versions: map[string]string{}}
	for run, v := range []float64{300, 100, 200} {
		r.Results = append(r.Results,
			res(run+1, "delayq", rate("end-to-end", v), rate("drain", 10)),
			res(run+1, "asynq", rate("end-to-end", 90), rate("drain", 20)))
	}
	md := renderMarkdown(r, "charts", "")
	for _, want := range []string{
		"| end-to-end | jobs/s | 200 (100–300) | 90.0 | 2.22× | ≥ 2× best peer | yes |",
		"| drain | jobs/s | 10.0 | 20.0 | 0.50× | ≥ 2× best peer | **no** |",
		"| e2e | drain | ≥ 2× best peer jobs/s | 10.0 jobs/s |",
		"```sh\nmake bench-peers\n```",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}

func TestRenderMarkdownCarriesTheAnalysis(t *testing.T) {
	r := &report{Runs: 1, Contestants: []string{"delayq"}, Versions: map[string]string{}}
	md := renderMarkdown(r, "charts", "\n## Why\n\nBecause.\n\n")
	if !strings.Contains(md, "## Targets missed") || !strings.Contains(md, "## Why\n\nBecause.\n\n![throughput]") {
		t.Fatalf("the analysis is not between the missed targets and the chart:\n%s", md)
	}
}

// TestFloorsAreShownNotCounted checks that the floors get columns and a ratio of their own in
// the tables they ran in, and none elsewhere, and that "delayq vs best peer" and the targets
// leave them out.
func TestFloorsAreShownNotCounted(t *testing.T) {
	rate := func(name string, v float64) bench.Metric {
		return bench.Metric{Name: name, Value: v, Unit: "jobs/s", Better: bench.Higher}
	}
	res := func(scenario, queue string, m bench.Metric) runResult {
		return runResult{Run: 1, Result: bench.Result{Scenario: scenario, Contestant: queue, Metrics: []bench.Metric{m}}}
	}
	r := &report{
		Runs:        1,
		Contestants: []string{"delayq", "asynq", "floor", "floor-pipelined"},
		Versions:    map[string]string{},
		Results: []runResult{
			res("enqueue", "delayq", rate("16 producers", 90)),
			res("enqueue", "asynq", rate("16 producers", 40)),
			res("enqueue", "floor", rate("16 producers", 100)),
			res("enqueue", "floor-pipelined", rate("16 producers", 180)),
			res("e2e", "delayq", rate("drain", 30)),
			res("e2e", "asynq", rate("drain", 10)),
		},
	}
	md := renderMarkdown(r, "charts", "")
	for _, want := range []string{
		"| metric | unit | delayq | asynq | floor: one EVALSHA per job | floor: pipelined EVALSHA | delayq vs best peer | delayq vs best floor | target | met |",
		"| 16 producers | jobs/s | 90.0 | 40.0 | 100 | 180 | 2.25× | 0.50× | ≥ 1.5× asynq | yes |",
		"| metric | unit | delayq | asynq | delayq vs best peer | target | met |",
		"| drain | jobs/s | 30.0 | 10.0 | 3.00× | ≥ 2× best peer | yes |",
		"None: delayq meets every target in this run.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}

// The summary leads the report with the figures users compare, delayq beside asynq (the better
// of its set-ups), BullMQ and the one-EVALSHA floor, and judges them by the scenario's targets.
func TestSummaryLeadsWithTheHeadlineFigures(t *testing.T) {
	r := &report{Runs: 1, Contestants: []string{"delayq", "asynq", "asynq-tuned", "bullmq", "floor"}}
	add := func(scenario, queue, metric string, v float64, better bench.Better) {
		r.Results = append(r.Results, runResult{Run: 1, Result: bench.Result{Scenario: scenario, Contestant: queue,
			Metrics: []bench.Metric{{Name: metric, Unit: "jobs/s", Value: v, Better: better}}}})
	}
	add("e2e", "delayq", "drain", 300, bench.Higher)
	add("e2e", "asynq", "drain", 100, bench.Higher)
	add("e2e", "asynq-tuned", "drain", 120, bench.Higher)
	add("e2e", "bullmq", "drain", 200, bench.Higher)
	var b strings.Builder
	r.summaryTable(&b)
	want := "| drain a backlog | jobs/s | 300 | 120 | 200 | n/a | 1.50× | ≥ 2× best peer | **no** |"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("the summary lacks %q:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "enqueue, 1 producer") {
		t.Errorf("the summary shows a row delayq has no figure for:\n%s", b.String())
	}
}
