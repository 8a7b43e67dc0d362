package scheduler

import (
	"math"
	"slices"
	"time"
)

// Window keeps the in-flight samples of the last Span and answers their
// quantiles: the summary the post's trigger reads ("tracks the inflight
// requests using a summary for percentiles", so that a short-lived spike
// does not move a high quantile). Loki's and Cortex's query schedulers
// observe the in-flight count every 250 ms into a summary whose quantiles
// cover the last minute (DefaultSampleEvery, DefaultWindow); this window
// keeps the samples themselves, so its quantiles are exact rather than
// estimated.
//
// Quantile q of n samples is the nearest-rank value: the ceil(q*n)-th
// smallest (q = 0.5 of 1, 2, 3, 4 is 2; q = 0.75 is 3). Samples older than
// Span (at or before now-Span) are dropped. Not safe for concurrent use.
type Window struct {
	Span    time.Duration
	samples []sample
	count   uint64  // every sample ever observed (the summary's _count)
	sum     float64 // their sum (the summary's _sum)
}

type sample struct {
	at time.Time
	v  float64
}

// Observe records value v taken at t. Samples must come in time order.
func (w *Window) Observe(t time.Time, v float64) {
	w.samples = append(w.samples, sample{t, v})
	w.count++
	w.sum += v
	w.prune(t)
}

func (w *Window) prune(now time.Time) {
	cut := now.Add(-w.Span)
	i := 0
	for i < len(w.samples) && !w.samples[i].at.After(cut) {
		i++
	}
	if i > 0 {
		w.samples = append(w.samples[:0], w.samples[i:]...)
	}
}

// Quantiles returns the nearest-rank quantile of the samples of the last
// Span before now for each q (0 < q <= 1), NaN for all when there are none
// (as a Prometheus summary with no observations in its window).
func (w *Window) Quantiles(now time.Time, qs ...float64) map[float64]float64 {
	w.prune(now)
	vals := make([]float64, len(w.samples))
	for i, s := range w.samples {
		vals[i] = s.v
	}
	slices.Sort(vals)
	out := make(map[float64]float64, len(qs))
	for _, q := range qs {
		if len(vals) == 0 {
			out[q] = math.NaN()
			continue
		}
		rank := int(math.Ceil(q*float64(len(vals)))) - 1
		out[q] = vals[min(max(rank, 0), len(vals)-1)]
	}
	return out
}

// Count and Sum are over every sample ever observed (a summary's _count and _sum).
func (w *Window) Count() uint64 { return w.count }

// Sum is the sum of every sample ever observed.
func (w *Window) Sum() float64 { return w.sum }
