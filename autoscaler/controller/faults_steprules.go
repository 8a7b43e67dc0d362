package controller

import (
	"slices"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
)

// withStepRuleFaults wraps p, the step policy of cfg, with the planted bugs
// of fs in how the controller applies the step rules (autoscaler/faults,
// steprules.go; only the self-test and tests switch them on):
//
//   - streak-not-reset: a round that is not all low leaves the zone's low
//     streak as it was instead of resetting it to 0 (only a change of the
//     count resets it), so low rounds before a busy round still count
//     towards a step down after it;
//   - busiest-worker: when p holds, the round is decided again as if every
//     ready worker carried the busiest ready worker's in-flight share, and
//     a step up of that second decision is taken: the mean trigger (and the
//     proportional step) read the busiest worker instead of the mean;
//   - canary-not-capacity: the policy reads the round without its canary
//     workers (the rounds the console keeps still list them, as its
//     scrape read them).
//
// autoscaler.Step itself stays faultless. With neither on, p is returned
// unchanged.
func withStepRuleFaults(fs faults.Set, p Policy) Policy {
	notReset, busiest, noCanary := fs.On(faults.StreakNotReset), fs.On(faults.BusiestWorker), fs.On(faults.CanaryNotCapacity)
	if !notReset && !busiest && !noCanary {
		return p
	}
	return func(st autoscaler.ZoneState, obs autoscaler.Observation, now time.Time) (autoscaler.Decision, autoscaler.ZoneState) {
		if noCanary {
			obs.Workers = slices.DeleteFunc(slices.Clone(obs.Workers), func(w autoscaler.WorkerSample) bool { return w.Canary })
		}
		d, next := p(st, obs, now)
		if busiest && d.Action == autoscaler.ActionHold {
			if flat, ok := asBusiest(obs); ok {
				if d2, next2 := p(st, flat, now); d2.Action == autoscaler.ActionUp {
					next2.Prev = next.Prev // the real samples for the next round's rate
					d, next = d2, next2
				}
			}
		}
		if notReset && d.Action == autoscaler.ActionHold && next.LowStreak == 0 {
			next.LowStreak = max(st.LowStreak, 0)
		}
		return d, next
	}
}

// asBusiest returns obs with every ready worker (reachable, ready, limit >
// 0) carrying the busiest ready worker's share of its limit, rounded down;
// ok is false when no ready worker has a call in flight.
func asBusiest(obs autoscaler.Observation) (autoscaler.Observation, bool) {
	var bIn, bLimit int // the busiest share bIn/bLimit
	for _, w := range obs.Workers {
		if !w.Reachable || !w.Ready || w.Limit <= 0 || w.InFlight <= 0 {
			continue
		}
		if bLimit == 0 || int64(w.InFlight)*int64(bLimit) > int64(bIn)*int64(w.Limit) {
			bIn, bLimit = w.InFlight, w.Limit
		}
	}
	if bLimit == 0 {
		return obs, false
	}
	ws := make([]autoscaler.WorkerSample, len(obs.Workers))
	for i, w := range obs.Workers {
		if w.Reachable && w.Ready && w.Limit > 0 {
			w.InFlight = int(int64(bIn) * int64(w.Limit) / int64(bLimit))
		}
		ws[i] = w
	}
	obs.Workers = ws
	return obs, true
}
