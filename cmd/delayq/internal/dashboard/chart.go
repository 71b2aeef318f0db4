package dashboard

import (
	"math"
	"strconv"
	"strings"
)

// A chart is a small line chart drawn as inline SVG by the "chart" template: one polyline per
// series over the last historySpan, newest on the right.
type chart struct {
	Title string
	Note  string // a line under the chart on what it measures; may be empty
	Top   string // the value at the top of the chart, with its unit
	Lines []chartLine
	Steps int // steps sampled so far
}

// chartLine is one series of a chart.
type chartLine struct {
	Name   string
	Class  string // its colour, in the style sheet
	Points string // the polyline's points, "x,y x,y ..."
	Last   string // its newest value, with its unit
}

// The chart's drawing area, in SVG user units.
const chartW, chartH = 360.0, 80.0

// series is one line to draw: its values, oldest first, NaN where there is none.
type series struct {
	name, class string
	values      []float64
}

// newChart scales the lines to their common maximum over slots steps, the newest on the right.
func newChart(title, unit string, scale float64, slots int, lines []series) chart {
	top := 0.0
	for _, l := range lines {
		for _, v := range l.values {
			if !math.IsNaN(v) {
				top = max(top, v*scale)
			}
		}
	}
	c := chart{Title: title, Top: formatValue(top) + unit}
	for _, l := range lines {
		c.Steps = max(c.Steps, len(l.values))
		c.Lines = append(c.Lines, chartLine{Name: l.name, Class: l.class,
			Points: points(l.values, scale, top, slots), Last: lastValue(l.values, scale) + unit})
	}
	return c
}

// points places values, scaled, in the chart's area: slots steps across, top at the top.
func points(values []float64, scale, top float64, slots int) string {
	var b strings.Builder
	offset := slots - len(values)
	for i, v := range values {
		if math.IsNaN(v) {
			continue
		}
		x := chartW * float64(offset+i) / float64(max(slots-1, 1))
		y := chartH
		if top > 0 {
			y = chartH - chartH*v*scale/top
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64))
	}
	return b.String()
}

func lastValue(values []float64, scale float64) string {
	for i := len(values) - 1; i >= 0; i-- {
		if !math.IsNaN(values[i]) {
			return formatValue(values[i] * scale)
		}
	}
	return "—"
}

// formatValue writes a chart value with up to three significant digits.
func formatValue(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// rateChart charts a topic's (or every topic's) rates.
func rateChart(title string, r rates, slots int) chart {
	return newChart(title, "/s", 1, slots, []series{
		{"enqueue", "c-enqueue", r[0]}, {"deliver", "c-deliver", r[1]}, {"ack", "c-ack", r[2]}, {"fail", "c-fail", r[3]},
	})
}

// latenessChart charts the deliveries' lateness, in ms.
func latenessChart(p50, p99 []float64, slots int) chart {
	c := newChart("Delivery lateness", " ms", 1000, slots, []series{{"p50", "c-p50", p50}, {"p99", "c-p99", p99}})
	c.Note = "From when each job was due to when a consumer leased it, including the time it waited for a free consumer."
	return c
}

// overallCharts are the overview's charts; nil without a history.
func (h *history) overallCharts() []chart {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return []chart{rateChart("Jobs per second, all topics", h.total, h.keep), latenessChart(h.p50, h.p99, h.keep)}
}

// topicCharts are a topic page's charts; nil without a history.
func (h *history) topicCharts(topic string) []chart {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := rates{}
	if got := h.topics[topic]; got != nil {
		r = *got
	}
	return []chart{rateChart("Jobs per second", r, h.keep)}
}

// recentSteps is how many steps the overview's rates average: the last minute.
const recentSteps = 6

// recentRates are a topic's rates over the last minute, per second, and its lateness p50 and
// p99 over the last hour, formatted.
type recentRates struct{ Enqueue, Ack, Fail, LateP50, LateP99 string }

// recent returns topic's rates over the last recentSteps; nil without a history.
func (h *history) recent(topic string) *recentRates {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p50, p99 := h.topicQuantiles(topic)
	r := h.topics[topic]
	if r == nil {
		return &recentRates{"0", "0", "0", millis(p50), millis(p99)}
	}
	avg := func(v []float64) string {
		v = keepLast(v, recentSteps)
		sum := 0.0
		for _, x := range v {
			sum += x
		}
		return formatValue(sum / float64(max(len(v), 1)))
	}
	return &recentRates{Enqueue: avg(r[0]), Ack: avg(r[2]), Fail: avg(r[3]), LateP50: millis(p50), LateP99: millis(p99)}
}
