package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

var colors = map[string]string{
	"delayq":          "#2563eb",
	"asynq":           "#dc2626",
	"asynq-tuned":     "#f97316",
	"bullmq":          "#16a34a",
	"floor":           "#6b7280",
	"floor-pipelined": "#9ca3af",
}

func colorOf(q string) string {
	if c, ok := colors[q]; ok {
		return c
	}
	return "#6b7280"
}

// axisCharts are the charts of one axis each, by the scenario whose section shows them: file
// name, title and the bars (scenario and metric name prefix).
var axisCharts = map[string]struct {
	file, title string
	bars        [][2]string
}{
	"enqueue": {"enqueue.svg", "Enqueue, jobs/s (median of runs; whiskers: min–max)", [][2]string{
		{"enqueue", "1 producer"}, {"enqueue", "16 producers"}, {"enqueue", "batch 100"}, {"enqueue", "batch 1000"}}},
	"memory": {"memory.svg", "Redis memory per pending job, bytes (lower is better)", [][2]string{
		{"memory", "at 100k"}, {"memory", "at 1M"}}},
	"e2e": {"consume.svg", "End-to-end and drain, jobs/s (median of runs; whiskers: min–max)", [][2]string{
		{"e2e", "end-to-end"}, {"e2e", "drain"}}},
	"burst": {"burst.svg", "A burst of jobs due at once, ms after the due time (lower is better)", [][2]string{
		{"burst", "all delivered"}, {"burst", "all acked"}}},
	"precision-load": {"lateness-load.svg", "Lateness under load, ms (lower is better)", [][2]string{
		{"precision-load", "p50 (receipt)"}, {"precision-load", "p99 (receipt)"}, {"precision-load", "max (receipt)"}}},
	"http": {"http.svg", "delayq server: enqueue, jobs/s (median of runs; whiskers: min–max)", [][2]string{
		{"http", "enqueue 1 job/request, 1 conn"}, {"http", "enqueue 1 job/request, 64 conns"},
		{"http", "enqueue 100 jobs/request, 1 conn"}, {"http", "enqueue 100 jobs/request, 64 conns"}}},
}

// writeCharts writes lateness.svg, throughput.svg and the charts of axisCharts into dir.
func writeCharts(r *report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "lateness.svg"), []byte(latenessChart(r)), 0o644); err != nil {
		return err
	}
	for _, c := range axisCharts {
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(barChart(r, c.title, c.bars)), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "throughput.svg"), []byte(throughputChart(r)), 0o644)
}

// symlog maps milliseconds onto a scale that is logarithmic both ways from zero, so that
// deliveries 1 s early and 2 ms late both show.
func symlog(v float64) float64 {
	if v < 0 {
		return -math.Log10(1 - v)
	}
	return math.Log10(1 + v)
}

type svg struct{ strings.Builder }

func newSVG(w, h int) *svg {
	s := &svg{}
	fmt.Fprintf(s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(s, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	return s
}

func (s *svg) text(x, y float64, anchor, fill, format string, args ...any) {
	fmt.Fprintf(s, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="%s">%s</text>`+"\n", x, y, anchor, fill, escape(fmt.Sprintf(format, args...)))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, width float64) {
	fmt.Fprintf(s, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"/>`+"\n", x1, y1, x2, y2, stroke, width)
}

func (s *svg) end() string { return s.String() + "</svg>\n" }

func escape(t string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(t)
}

// latenessChart draws the cumulative distribution of the precision scenario's lateness by
// receipt time, every run pooled, one line per queue.
func latenessChart(r *report) string {
	const w, h, left, right, top, bottom = 820, 470, 60, 30, 40, 120
	samples := map[string][]float64{}
	lo, hi := 0.0, 1.0
	for _, q := range r.Contestants {
		for _, res := range r.results("precision", q) {
			samples[q] = append(samples[q], res.Samples["lateness_ms"]...)
		}
		slices.Sort(samples[q])
		if n := len(samples[q]); n > 0 {
			lo, hi = math.Min(lo, samples[q][0]), math.Max(hi, samples[q][n-1])
		}
	}
	ticks := []float64{-10000, -1000, -100, -10, -1, 0, 1, 10, 100, 1000, 10000}
	x0, x1 := symlog(ticks[0]), symlog(ticks[len(ticks)-1])
	for _, t := range ticks {
		if t <= lo {
			x0 = symlog(t)
		}
	}
	for _, t := range slices.Backward(ticks) {
		if t >= hi {
			x1 = symlog(t)
		}
	}
	px := func(v float64) float64 { return left + (symlog(v)-x0)/(x1-x0)*(w-left-right) }
	py := func(p float64) float64 { return top + (1-p)*(h-top-bottom) }
	s := newSVG(w, h)
	s.text(w/2, 22, "middle", "#111", "Lateness of jobs by receipt time (precision scenario, all runs), cumulative")
	for _, p := range []float64{0, 0.25, 0.5, 0.75, 1} {
		s.line(left, py(p), w-right, py(p), "#e5e7eb", 1)
		s.text(left-6, py(p)+4, "end", "#374151", "%g%%", p*100)
	}
	for _, t := range ticks {
		if symlog(t) < x0-1e-9 || symlog(t) > x1+1e-9 {
			continue
		}
		s.line(px(t), top, px(t), h-bottom, "#e5e7eb", 1)
		s.text(px(t), h-bottom+16, "middle", "#374151", "%g", t)
	}
	s.line(px(0), top, px(0), h-bottom, "#9ca3af", 1.5)
	s.text(w/2, h-bottom+34, "middle", "#111", "ms after the due time (negative: early); logarithmic both ways from 0")
	i := 0
	for _, q := range r.Contestants {
		v := samples[q]
		if len(v) == 0 {
			continue
		}
		var pts []string
		steps := min(len(v), 600)
		for k := 0; k <= steps; k++ {
			idx := min(len(v)-1, k*len(v)/steps)
			p := float64(idx+1) / float64(len(v))
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(v[idx]), py(p)))
		}
		fmt.Fprintf(s, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colorOf(q), strings.Join(pts, " "))
		p50, p99 := v[len(v)/2], v[min(len(v)-1, int(math.Ceil(0.99*float64(len(v))))-1)]
		y := float64(h - bottom + 60 + 18*i)
		s.line(left+12, y-4, left+36, y-4, colorOf(q), 3)
		s.text(left+42, y, "start", "#111", "%s: p50 %.1f ms, p99 %.1f ms, min %.1f ms, max %.1f ms", label(q), p50, p99, v[0], v[len(v)-1])
		i++
	}
	return s.end()
}

// throughputBars are the rates the throughput chart shows: scenario and metric name prefix.
var throughputBars = [][2]string{
	{"enqueue", "1 producer"}, {"enqueue", "16 producers"}, {"enqueue", "batch 100"}, {"enqueue", "batch 1000"},
	{"e2e", "end-to-end"}, {"e2e", "drain"}, {"scaling", "with "},
}

// throughputChart draws the median rates as grouped horizontal bars, one bar for each queue or
// floor that ran the scenario.
func throughputChart(r *report) string {
	return barChart(r, "Throughput, jobs/s (median of runs; whiskers: min–max)", throughputBars)
}

// barChart draws the medians of bars (scenario and metric name prefix) as grouped horizontal
// bars, one bar for each queue or floor that ran the scenario.
func barChart(r *report, title string, bars0 [][2]string) string {
	type bar struct {
		label  string
		queues []string
		vals   map[string]summary
	}
	var bars []bar
	maxV := 1.0
	for _, tb := range bars0 {
		name := ""
		for _, m := range r.metricNames(tb[0]) {
			if strings.HasPrefix(m, tb[1]) {
				name = m
				break
			}
		}
		if name == "" {
			continue
		}
		b := bar{label: tb[0] + ": " + name, vals: map[string]summary{}}
		for _, q := range r.queuesIn(tb[0]) {
			if s, ok := r.summarize(tb[0], q, name); ok {
				b.queues = append(b.queues, q)
				b.vals[q] = s
				if !s.na && s.n > 0 {
					maxV = math.Max(maxV, s.hi)
				}
			}
		}
		bars = append(bars, b)
	}
	const w, left, right, top, barH, gap = 820, 210, 90, 50, 14, 14
	h := top + 30
	for _, b := range bars {
		h += barH*len(b.queues) + gap
	}
	s := newSVG(w, h)
	s.text(w/2, 22, "middle", "#111", "%s", title)
	x := 20.0
	for _, q := range r.Contestants {
		fmt.Fprintf(s, `<rect x="%.1f" y="30" width="12" height="10" fill="%s"/>`+"\n", x, colorOf(q))
		s.text(x+16, 39, "start", "#111", "%s", label(q))
		x += 16 + 7*float64(len(label(q))) + 14
	}
	scale := func(v float64) float64 { return v / maxV * (w - left - right) }
	y0 := float64(top)
	for _, b := range bars {
		s.text(left-8, y0+float64(barH*len(b.queues))/2+4, "end", "#111", "%s", b.label)
		for i, q := range b.queues {
			y := y0 + float64(i*barH)
			v := b.vals[q]
			if v.na || v.n == 0 {
				s.text(left+4, y+barH-3, "start", "#6b7280", "%s: n/a", label(q))
				continue
			}
			// A negative figure (a job early) draws no bar, only its value.
			fmt.Fprintf(s, `<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y+1, math.Max(0, scale(v.med)), barH-2, colorOf(q))
			s.line(left+math.Max(0, scale(v.lo)), y+barH/2, left+math.Max(0, scale(v.hi)), y+barH/2, "#111", 1)
			s.text(left+math.Max(0, scale(v.hi))+4, y+barH-3, "start", "#111", "%s", bench.FormatValue(bench.Metric{Value: v.med}))
		}
		y0 += float64(barH*len(b.queues) + gap)
	}
	return s.end()
}
