package bench

import (
	"math"
	"slices"
	"time"
)

// Lateness summarises how late jobs were handed out after their due time.
type Lateness struct {
	P50, P99, Max time.Duration
	// Early counts deliveries before the due time by more than the clock's uncertainty.
	Early int
	// Samples are every job's lateness in milliseconds, sorted, for charts.
	Samples []float64
}

// summarize sorts the latenesses and summarises them; a lateness below -tolerance is early.
func summarize(late []time.Duration, tolerance time.Duration) Lateness {
	var s Lateness
	if len(late) == 0 {
		return s
	}
	slices.Sort(late)
	s.P50 = percentile(late, 0.50)
	s.P99 = percentile(late, 0.99)
	s.Max = late[len(late)-1]
	s.Samples = make([]float64, len(late))
	for i, d := range late {
		if d < -tolerance {
			s.Early++
		}
		s.Samples[i] = math.Round(ms(d)*1000) / 1000 // whole microseconds
	}
	return s
}

// percentile returns the q-quantile of sorted values by the nearest-rank method.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rate returns n per second of d.
func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Median returns the median of values (the mean of the middle two for an even count), and
// their minimum and maximum.
func Median(values []float64) (median, lo, hi float64) {
	if len(values) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	v := slices.Clone(values)
	slices.Sort(v)
	n := len(v)
	median = v[n/2]
	if n%2 == 0 {
		median = (v[n/2-1] + v[n/2]) / 2
	}
	return median, v[0], v[n-1]
}
