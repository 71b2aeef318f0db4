package main

import (
	"strings"
	"testing"

	"github.com/delayq/delayq/internal/bench"
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
