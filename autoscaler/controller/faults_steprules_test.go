package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
)

// TestStepRuleFaults: each step-rule fault turns one script of rounds of the
// step policy into the planted bug, and the same script runs clean without
// it. Rounds are 10 s apart, long after every cooldown; each entry of a
// script is the in-flight of each worker (limit 32) in one round.
func TestStepRuleFaults(t *testing.T) {
	cfg := autoscaler.DefaultStepConfig()
	t0 := time.Unix(1_000_000, 0)
	run := func(p Policy, count, maxCount int, rounds [][]int) string {
		st := autoscaler.ZoneState{Count: count, Max: maxCount, LastChange: t0}
		var out []string
		for i, in := range rounds {
			now := t0.Add(10*time.Minute + time.Duration(i)*10*time.Second)
			var obs autoscaler.Observation
			for j, n := range in {
				obs.Workers = append(obs.Workers, autoscaler.WorkerSample{ID: fmt.Sprint("w", j), Reachable: true, Ready: true,
					InFlight: n, Limit: 32, CallsTotal: 100, SampledAt: now})
			}
			d, next := p(st, obs, now)
			out = append(out, fmt.Sprintf("%s %d->%d", d.Action, d.From, d.To))
			st = next
			if d.Action != autoscaler.ActionHold {
				st.LastChange = now
			}
		}
		return strings.Join(out, " ")
	}
	idle, busy := []int{0, 0}, []int{12, 0} // busy: one worker at 37.5 % (not low), the mean 18.75 %
	for _, tc := range []struct {
		name          string
		fault         string
		count, max    int
		rounds        [][]int
		clean, faulty string
	}{
		{"streak-not-reset: a busy round after 2 low rounds", faults.StreakNotReset, 2, 3,
			[][]int{idle, idle, busy, idle, idle, idle},
			"hold 2->2 hold 2->2 hold 2->2 hold 2->2 hold 2->2 down 2->1", "hold 2->2 hold 2->2 hold 2->2 down 2->1 hold 1->1 hold 1->1"},
		{"streak-not-reset: 3 low rounds in a row step down either way", faults.StreakNotReset, 2, 3,
			[][]int{busy, idle, idle, idle}, "hold 2->2 hold 2->2 hold 2->2 down 2->1", "hold 2->2 hold 2->2 hold 2->2 down 2->1"},
		{"busiest-worker: one worker at 65.6 %, the mean 32.8 %", faults.BusiestWorker, 2, 3,
			[][]int{{21, 0}}, "hold 2->2", "up 2->3"},
		{"busiest-worker: the busiest under 50 % changes nothing", faults.BusiestWorker, 2, 3,
			[][]int{{15, 0}}, "hold 2->2", "hold 2->2"},
		{"busiest-worker: at the max it holds", faults.BusiestWorker, 2, 2,
			[][]int{{21, 0}}, "hold 2->2", "hold 2->2"},
		{"busiest-worker: a mean over 50 % steps up either way", faults.BusiestWorker, 2, 4,
			[][]int{{20, 14}}, "up 2->3", "up 2->3"},
		{"another fault changes nothing here", faults.Linger, 2, 3,
			[][]int{idle, idle, busy, idle, {21, 0}}, "hold 2->2 hold 2->2 hold 2->2 hold 2->2 hold 2->2", "hold 2->2 hold 2->2 hold 2->2 hold 2->2 hold 2->2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := faults.Lookup(tc.fault); !ok {
				t.Fatalf("fault %s not in the catalogue", tc.fault)
			}
			if got := run(StepPolicyWithFaults(cfg, nil), tc.count, tc.max, tc.rounds); got != tc.clean {
				t.Errorf("clean: %s, want %s", got, tc.clean)
			}
			if got := run(StepPolicyWithFaults(cfg, faults.Set{tc.fault: true}), tc.count, tc.max, tc.rounds); got != tc.faulty {
				t.Errorf("with %s: %s, want %s", tc.fault, got, tc.faulty)
			}
		})
	}
}
