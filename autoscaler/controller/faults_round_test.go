package controller

import (
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
)

// TestFaultyPolicy: each policy fault turns one decision of the step policy
// into the planted bug, and no fault leaves the decision alone.
func TestFaultyPolicy(t *testing.T) {
	cfg := autoscaler.DefaultStepConfig()
	t0 := time.Unix(1_000_000, 0)
	now := t0.Add(10 * time.Minute) // every cooldown over
	w := func(id string, in int, calls uint64, at time.Time) autoscaler.WorkerSample {
		return autoscaler.WorkerSample{ID: id, Reachable: true, Ready: true, InFlight: in, Limit: 32, CallsTotal: calls, SampledAt: at}
	}
	// One worker at 75 calls/s (1500 calls in 20 s) and 1 call in flight.
	rated := func(count int) (autoscaler.ZoneState, autoscaler.Observation) {
		st := autoscaler.ZoneState{Count: count, Max: 3, LastChange: t0, LowStreak: 5, Prev: map[string]autoscaler.WorkerSample{}}
		var obs autoscaler.Observation
		for i := range count {
			id := string(rune('a' + i))
			st.Prev[id] = w(id, 0, 0, now.Add(-20*time.Second))
			obs.Workers = append(obs.Workers, w(id, 1, uint64(1500/count), now))
		}
		return st, obs
	}
	upSt, upObs := rated(1)
	downSt, downObs := rated(2)
	outSt := autoscaler.ZoneState{Count: 2, Max: 3, LastChange: t0, LowStreak: 5}
	outObs := autoscaler.Observation{Workers: []autoscaler.WorkerSample{w("a", 0, 0, now), {ID: "b", SampledAt: now}}}

	for _, tc := range []struct {
		name          string
		on            faults.Set
		st            autoscaler.ZoneState
		obs           autoscaler.Observation
		clean, faulty autoscaler.Action
	}{
		{"ignore-rate: no step up on the rate", faults.Set{faults.IgnoreRate: true}, upSt, upObs, autoscaler.ActionUp, autoscaler.ActionHold},
		{"down-under-rate: a step down 1 worker could not carry", faults.Set{faults.DownUnderRate: true}, downSt, downObs, autoscaler.ActionHold, autoscaler.ActionDown},
		{"down-under-rate keeps the step up", faults.Set{faults.DownUnderRate: true}, upSt, upObs, autoscaler.ActionUp, autoscaler.ActionUp},
		{"scale-in-unreachable: an unreachable worker looks idle", faults.Set{faults.ScaleInUnreachable: true}, outSt, outObs, autoscaler.ActionHold, autoscaler.ActionDown},
		{"a fault of another server changes nothing", faults.Set{faults.NoDrain: true}, downSt, downObs, autoscaler.ActionHold, autoscaler.ActionHold},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clean, _ := StepPolicy(cfg)(tc.st, tc.obs, now)
			got, _ := FaultyPolicy(StepPolicy(cfg), tc.on)(tc.st, tc.obs, now)
			if clean.Action != tc.clean || got.Action != tc.faulty {
				t.Errorf("clean %s (%s), with the fault %s (%s); want %s and %s", clean.Action, clean.Reason, got.Action, got.Reason, tc.clean, tc.faulty)
			}
		})
	}
}
