package scenarios

import (
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// The contract facts judged over a scenario's readings on any world, as pure
// functions: readings (good ones, oldest first), the target's trail and the
// contract's bound in, the failures out (one line each; none: the fact
// holds). Times in the lines are since's: seconds from the scenario's start
// (World.Since).

// outOfBounds lists the readings whose count is outside the bounds that
// reading shows (FactWithinBounds: min <= count <= max at every reading).
func outOfBounds(samples []target.Sample, since func(time.Time) float64) []string {
	var bad []string
	for _, x := range samples {
		if x.Count < x.Min || x.Count > x.Max {
			bad = append(bad, fmt.Sprintf("t=%.1fs count %d outside [%d, %d]", since(x.At), x.Count, x.Min, x.Max))
		}
	}
	return bad
}

// countChange is a change of the count between two readings.
type countChange struct {
	Before, Seen time.Time // the reading before the change, the reading that saw it
	From, To     int
}

// countChanges are the changes of the count the readings saw.
func countChanges(samples []target.Sample) []countChange {
	var out []countChange
	for i := 1; i < len(samples); i++ {
		if p, x := samples[i-1], samples[i]; x.Count != p.Count {
			out = append(out, countChange{Before: p.At, Seen: x.At, From: p.Count, To: x.Count})
		}
	}
	return out
}

// missingFromTrail lists the changes that have no trail entry to the same
// count within bound of when they happened (between the reading before and
// the reading that saw it), FactTrail. An entry whose From the trail does
// not know (-1, an HPA Event's "New size: N") matches on To alone.
func missingFromTrail(changes []countChange, trail []target.Change, bound time.Duration, since func(time.Time) float64) []string {
	var bad []string
	for _, c := range changes {
		found := false
		for _, e := range trail {
			if e.To == c.To && (e.From < 0 || e.From == c.From) && !e.At.Before(c.Before.Add(-bound)) && !e.At.After(c.Seen.Add(bound)) {
				found = true
				break
			}
		}
		if !found {
			bad = append(bad, fmt.Sprintf("%d->%d seen at t=%.1fs", c.From, c.To, since(c.Seen)))
		}
	}
	return bad
}

// loadDrops are the times the VU target of lp, started at start, starts
// to fall: the start of every stage whose target is below the one before it.
func loadDrops(start time.Time, lp load.Profile) []time.Time {
	var out []time.Time
	prev, at := lp.StartVUs, start
	for _, st := range lp.Stages {
		if st.Target < prev {
			out = append(out, at)
		}
		prev, at = st.Target, at.Add(st.Duration)
	}
	return out
}

// earlyScaleDowns lists the steps down (a reading below the one before)
// that came before bound had passed since the latest drop of the load at or
// before them, or before any drop at all (FactNoEarlyScaleDown). A step is
// timed at the reading that saw it, the latest it can have happened, so a
// step is never called early by the sampling's delay.
func earlyScaleDowns(samples []target.Sample, drops []time.Time, bound time.Duration, since func(time.Time) float64) []string {
	var bad []string
	for _, c := range countChanges(samples) {
		if c.To >= c.From {
			continue
		}
		var last time.Time
		for _, d := range drops {
			if !d.After(c.Seen) {
				last = d
			}
		}
		switch {
		case last.IsZero():
			bad = append(bad, fmt.Sprintf("%d->%d at t=%.1fs before the load dropped", c.From, c.To, since(c.Seen)))
		case c.Seen.Before(last.Add(bound)):
			bad = append(bad, fmt.Sprintf("%d->%d at t=%.1fs, %.1f s after the load dropped at t=%.1fs (window %s)",
				c.From, c.To, since(c.Seen), c.Seen.Sub(last).Seconds(), since(last), bound))
		}
	}
	return bad
}

// upTolerance is the HPA's default tolerance: a ratio of metric to target
// within 1 ± 0.1 asks for no change (kube-controller-manager
// --horizontal-pod-autoscaler-tolerance).
const upTolerance = 0.1

// metricOver is the first reading at or after t whose metric, as the
// autoscaler itself read it (the HPA's status.currentMetrics), is above its
// target by more than upTolerance: the moment a scale-up is asked for,
// which the contracts count their bound from. ok is false when no reading
// shows a metric and its target (the console shows none).
func metricOver(samples []target.Sample, t time.Time) (target.Sample, bool) {
	for _, x := range samples {
		if !x.At.Before(t) && x.HasMetric && x.MetricTarget > 0 && x.Metric > x.MetricTarget*(1+upTolerance) {
			return x, true
		}
	}
	return target.Sample{}, false
}

// scaleUpFrom is when a scale-up's bound starts: the first reading of the
// metric above its target at or after t when the target shows one, no
// later than up (the reading that saw the count rise), else t itself. what
// says which, for the fact's detail.
func scaleUpFrom(samples []target.Sample, t time.Time, up target.Sample) (time.Time, string) {
	if m, ok := metricOver(samples, t); ok && !m.At.After(up.At) {
		return m.At, fmt.Sprintf("the autoscaler read its metric above its target (%.4g > %.4g)", m.Metric, m.MetricTarget)
	}
	return t, ""
}
