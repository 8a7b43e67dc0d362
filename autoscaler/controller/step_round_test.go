package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
)

// TestStepRoundsRecordInputsAndDecision: every round of a step zone is kept
// with what the policy read (count, max, cooldown clock, low streak before
// and after, each worker's sample and the previous sample its rate is taken
// over) and what it decided, oldest first, and GET policy shows them.
func TestStepRoundsRecordInputsAndDecision(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.Apply(ctx, "ga", "g1", "a", controller.Change{Count: ptr(2), MaxCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	created := r.clock.Now()
	for i, c := range []struct {
		at     time.Duration
		load   int
		actor  string
		action string
		streak [2]int // low streak before, after
	}{
		{10 * time.Second, 0, controller.ActorScheduler, "hold", [2]int{0, 1}},
		{20 * time.Second, 0, "ga", "hold", [2]int{1, 2}},
		{30 * time.Second, 30, controller.ActorScheduler, "up", [2]int{2, 0}},
	} {
		r.clock.Set(t0.Add(c.at))
		r.fleet.SetLoad("g1", "a", c.load, 0)
		if _, err := r.c.Round(ctx, "g1", "a", c.actor); err != nil {
			t.Fatal(err)
		}
		v, err := r.c.Policy("g1", "a")
		if err != nil {
			t.Fatal(err)
		}
		if len(v.StepRounds) != i+1 {
			t.Fatalf("after round %d: %d step rounds", i+1, len(v.StepRounds))
		}
		got := v.StepRounds[i]
		if !got.At.Equal(t0.Add(c.at)) || got.Actor != c.actor || got.Action != c.action || got.Count != 2 || got.Max != 3 ||
			!got.LastChange.Equal(created) || got.LowStreak != c.streak[0] || got.LowStreakAfter != c.streak[1] {
			t.Errorf("round %d = %+v, want at t0+%s by %s, %s, count 2 of 3, last change %s, streak %v",
				i+1, got, c.at, c.actor, c.action, created, c.streak)
		}
		if len(got.Workers) != 2 {
			t.Fatalf("round %d: %d workers, want 2", i+1, len(got.Workers))
		}
		for _, w := range got.Workers {
			if w.InFlight != c.load || w.Limit <= 0 || !w.Reachable || !w.SampledAt.Equal(t0.Add(c.at)) {
				t.Errorf("round %d: worker %+v, want %d in flight, sampled at the round", i+1, w, c.load)
			}
			if (i == 0) != (w.Prev == nil) {
				t.Errorf("round %d: worker %s prev %+v (the first round has none, the others the previous round's)", i+1, w.ID, w.Prev)
			} else if w.Prev != nil && !w.Prev.SampledAt.Equal(v.StepRounds[i-1].At) {
				t.Errorf("round %d: worker %s prev sampled at %s, want the previous round's %s", i+1, w.ID, w.Prev.SampledAt, v.StepRounds[i-1].At)
			}
		}
	}
	up := 3
	if _, err := r.c.SetPolicy("ga", "g1", "a", controller.PolicySpec{Policy: controller.PolicyHPA, HPA: &controller.HPASpec{Query: "sum(x)", Threshold: 10, MaxReplicas: &up}}); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.c.Policy("g1", "a"); len(v.StepRounds) != 0 {
		t.Errorf("an hpa zone shows %d step rounds", len(v.StepRounds))
	}
}
