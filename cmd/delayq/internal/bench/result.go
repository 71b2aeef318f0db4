package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Better says which direction of a metric is an improvement.
type Better string

// Directions of improvement.
const (
	Higher Better = "higher"
	Lower  Better = "lower"
)

// Metric is one figure of a scenario.
type Metric struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Better Better  `json:"better"`
	// NA is set when the queue cannot do what the metric measures; Value is then meaningless.
	NA bool `json:"na,omitempty"`
}

// Result is what one scenario measured for one contestant.
type Result struct {
	Scenario   string   `json:"scenario"`
	Contestant string   `json:"contestant"`
	Metrics    []Metric `json:"metrics"`
	// Notes explain the figures: settings, caveats, what a queue cannot do.
	Notes []string `json:"notes,omitempty"`
	// Error is set when the scenario failed; the metrics measured before the failure remain.
	Error string `json:"error,omitempty"`
	// Stages list the Redis commands each stage of the scenario ran, costliest first.
	Stages []Stage `json:"stages,omitempty"`
	// Samples holds raw figures for charts, such as "lateness_ms": every job's lateness.
	Samples map[string][]float64 `json:"samples,omitempty"`
	// Seconds is how long the scenario took.
	Seconds float64 `json:"seconds"`
}

// Stage is the Redis-side profile of one stage of a scenario.
type Stage struct {
	Name     string         `json:"name"`
	Commands []CommandDelta `json:"commands"`
	// Slowest is the longest command SLOWLOG recorded during the stage, when it was watched.
	Slowest *SlowEntry `json:"slowest,omitempty"`
}

// Metric returns the metric called name, and whether there is one.
func (r Result) Metric(name string) (Metric, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

func (r *Result) add(name string, value float64, unit string, better Better) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Value: value, Unit: unit, Better: better})
}

func (r *Result) na(name, unit string, better Better, why string) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Unit: unit, Better: better, NA: true})
	prefix := "not measured (" + why + "): "
	for i, n := range r.Notes {
		if strings.HasPrefix(n, prefix) {
			r.Notes[i] += ", " + name
			return
		}
	}
	r.Notes = append(r.Notes, prefix+name)
}

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// WriteJSON writes results as one indented JSON array.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// WriteTable writes results as an aligned text table, one line per metric, with each result's
// notes, errors and Redis profile below it.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tQUEUE\tMETRIC\tVALUE\tUNIT")
	for _, r := range results {
		for _, m := range r.Metrics {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Scenario, r.Contestant, m.Name, FormatValue(m), m.Unit)
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\tERROR\t%s\t\n", r.Scenario, r.Contestant, r.Error)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		var lines []string
		for _, n := range r.Notes {
			lines = append(lines, "  note: "+n)
		}
		for _, s := range r.Stages {
			lines = append(lines, "  redis, "+s.Name+": "+formatStage(s))
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s / %s (%.1fs):\n%s\n", r.Scenario, r.Contestant, r.Seconds, strings.Join(lines, "\n"))
		}
	}
	return nil
}

func formatStage(s Stage) string {
	var parts []string
	for i, c := range s.Commands {
		if i == 4 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d calls %.1fµs/call", c.Command, c.Calls, c.UsecPerCall))
	}
	out := strings.Join(parts, "; ")
	if s.Slowest != nil {
		out += fmt.Sprintf("; slowest %s %.1fms", strings.Join(firstN(s.Slowest.Args, 2), " "), ms(s.Slowest.Duration))
	}
	return out
}

func firstN(s []string, n int) []string { return s[:min(n, len(s))] }

// FormatValue renders a metric's value with sensible precision, or "n/a".
func FormatValue(m Metric) string {
	if m.NA {
		return "n/a"
	}
	v := m.Value
	switch {
	case v == 0:
		return "0"
	case v >= 1000 || v <= -1000:
		return groupThousands(strconv.FormatFloat(v, 'f', 0, 64))
	case v >= 100 || v <= -100:
		if v == math.Trunc(v) {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 10 || v <= -10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// groupThousands puts commas between groups of three digits of an integer string.
func groupThousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return sign + b.String()
}
