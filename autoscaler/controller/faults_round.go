package controller

import (
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
)

// FaultyPolicy wraps p with the planted bugs of set that live in a round's
// decision (autoscaler/faults; only the self-test and tests switch them on):
//
//   - scale-in-unreachable: a worker that did not answer its scrape is
//     taken for a ready one with nothing in flight (its limit the largest
//     of the others'), so an outage looks idle;
//   - ignore-rate: the policy sees no previous samples, so it never has a
//     calls-per-second rate (no rate trigger, no rate check on a DOWN);
//   - down-under-rate: when p holds, the round is decided again without
//     the rate, and a DOWN of that second decision is taken.
//
// With none of them on, p is returned unchanged.
func FaultyPolicy(p Policy, set faults.Set) Policy {
	unreachable, noRate, downUnderRate := set.On(faults.ScaleInUnreachable), set.On(faults.IgnoreRate), set.On(faults.DownUnderRate)
	if !unreachable && !noRate && !downUnderRate {
		return p
	}
	return func(st autoscaler.ZoneState, obs autoscaler.Observation, now time.Time) (autoscaler.Decision, autoscaler.ZoneState) {
		if unreachable {
			obs = unreachableAsIdle(obs)
		}
		if noRate {
			st.Prev = nil
		}
		d, next := p(st, obs, now)
		if downUnderRate && d.Action == autoscaler.ActionHold {
			blind := st
			blind.Prev = nil
			if d2, next2 := p(blind, obs, now); d2.Action == autoscaler.ActionDown {
				next2.Prev = next.Prev // keep the real samples for the next round's rate
				return d2, next2
			}
		}
		return d, next
	}
}

func unreachableAsIdle(obs autoscaler.Observation) autoscaler.Observation {
	limit := 0
	for _, w := range obs.Workers {
		limit = max(limit, w.Limit)
	}
	if limit == 0 {
		return obs
	}
	ws := make([]autoscaler.WorkerSample, len(obs.Workers))
	for i, w := range obs.Workers {
		if !w.Reachable {
			w.Reachable, w.Ready, w.Starting, w.InFlight, w.Limit = true, true, false, 0, limit
		}
		ws[i] = w
	}
	obs.Workers = ws
	return obs
}
