package main

import (
	"fmt"
	"strings"

	"github.com/delayq/delayq/cmd/delayq/internal/bench"
)

// headline is one row of the report's summary: a figure a user compares queues by, taken from
// one metric of one scenario.
type headline struct {
	name, scenario, metric string
}

// headlines are the summary's rows, in order.
var headlines = []headline{
	{"enqueue, 1 producer", "enqueue", "1 producer"},
	{"enqueue, 16 producers", "enqueue", "16 producers"},
	{"enqueue, batches of 1000", "enqueue", "batch 1000"},
	{"end-to-end", "e2e", "end-to-end"},
	{"drain a backlog", "e2e", "drain"},
	{"burst of 100k due at once: all delivered", "burst", "all delivered"},
	{"lateness p99, library (receipt)", "precision", "p99 (receipt)"},
	{"lateness p99 under load (Redis clock)", "precision-load", "p99 (Redis clock)"},
	{"memory per pending job at 100k", "memory", "at 100k jobs"},
	{"HTTP: 1 job a request, 64 connections, vs the library", "http", "enqueue 1 job/request, 64 conns vs library"},
	{"HTTP: p99 at half that rate", "http", "enqueue 1 job/request, 64 conns at half that rate: p99 latency"},
}

// summaryTable writes the figures of headlines side by side: delayq, asynq (the better of its
// two set-ups), BullMQ and the one-EVALSHA floor, delayq's ratio to the best peer, and the
// target. Rows without a delayq figure are left out.
func (r *report) summaryTable(b *strings.Builder) {
	b.WriteString("| figure | unit | delayq | asynq | BullMQ | floor: one EVALSHA | delayq vs best peer | target | met |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---|---|\n")
	for _, h := range headlines {
		d, ok := r.summarize(h.scenario, "delayq", h.metric)
		if !ok || d.na || d.n == 0 {
			continue
		}
		peers, floors := map[string]float64{}, map[string]float64{}
		cells := map[string]summary{}
		for _, q := range r.queuesIn(h.scenario) {
			s, ok := r.summarize(h.scenario, q, h.metric)
			if !ok || s.na || s.n == 0 || q == "delayq" {
				continue
			}
			cells[q] = s
			if isFloor(q) {
				floors[q] = s.med
			} else {
				peers[q] = s.med
			}
		}
		asynq := cells["asynq"]
		if t, ok := cells["asynq-tuned"]; ok && (asynq.n == 0 || better(t, asynq)) {
			asynq = t
		}
		cell := func(s summary) string {
			if s.n == 0 {
				return "n/a"
			}
			return s.String()
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |", h.name, d.unit, d, cell(asynq), cell(cells["bullmq"]), cell(cells["floor"]), ratio(d, peers))
		t, ok := targets[h.scenario][h.metric]
		switch {
		case !ok:
			b.WriteString(" | |\n")
		case t.met(d.med, peers, floors):
			fmt.Fprintf(b, " %s | yes |\n", t.text)
		default:
			fmt.Fprintf(b, " %s | **no** |\n", t.text)
		}
	}
	b.WriteString("\n")
}

// better tells whether a is a better figure than b (higher or lower, as the metric says).
func better(a, b summary) bool {
	switch a.better {
	case bench.Higher:
		return a.med > b.med
	case bench.Lower:
		return a.med < b.med
	}
	return false
}
