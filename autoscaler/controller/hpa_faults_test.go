package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
)

// TestHPAStatusRounds: the policy status keeps each query round, what the
// policy read (no series read as 0 when read_empty_as_zero) and decided, the
// last MaxPolicyRounds of them, oldest first.
func TestHPAStatusRounds(t *testing.T) {
	r := newHPARig(t, false)
	r.zone(t, "a", 1, 5)
	h := spec(4)
	h.ReadEmptyAsZero = true
	r.setHPA(t, "a", h)
	r.metrics.set("a", fakeAnswer{vals: []float64{20}})
	if _, err := r.c.Round(context.Background(), "g", "a", "root"); err != nil {
		t.Fatal(err)
	}
	r.metrics.set("a", fakeAnswer{})
	for range controller.MaxPolicyRounds + 5 {
		r.clock.Advance(time.Second)
		if _, err := r.c.Round(context.Background(), "g", "a", "root"); err != nil {
			t.Fatal(err)
		}
	}
	p, err := r.c.Policy("g", "a")
	if err != nil {
		t.Fatal(err)
	}
	rs := p.Status.Rounds
	if len(rs) != controller.MaxPolicyRounds {
		t.Fatalf("%d rounds kept, want %d", len(rs), controller.MaxPolicyRounds)
	}
	last := rs[len(rs)-1]
	if !last.At.Equal(p.Status.LastQueryAt) || last.Value == nil || *last.Value != 0 || last.Error != "" {
		t.Fatalf("last round %+v, want value 0 (no series read as zero) at %s", last, p.Status.LastQueryAt)
	}
	for i := 1; i < len(rs); i++ {
		if !rs[i].At.After(rs[i-1].At) {
			t.Fatalf("rounds out of order at %d: %s after %s", i, rs[i].At, rs[i-1].At)
		}
	}

	// The first round, seen before the cap: value 20 over 1 pod, up 1 -> 5.
	r2 := newHPARig(t, false)
	r2.zone(t, "a", 1, 5)
	r2.setHPA(t, "a", spec(4))
	r2.metrics.set("a", fakeAnswer{vals: []float64{20}})
	d, err := r2.c.Round(context.Background(), "g", "a", "root")
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := r2.c.Policy("g", "a")
	if len(p2.Status.Rounds) != 1 {
		t.Fatalf("rounds %+v, want 1", p2.Status.Rounds)
	}
	got := p2.Status.Rounds[0]
	if got.Value == nil || *got.Value != 20 || got.Pods != 1 || got.Ready != 1 || got.Action != "up" || got.From != 1 || got.To != 5 || !got.At.Equal(d.At) {
		t.Fatalf("round %+v (value %v), want 20 over 1 pod, up 1 -> 5 at the decision's time %s", got, got.Value, d.At)
	}
	// A failed query is no value.
	r2.clock.Advance(time.Second)
	r2.metrics.set("a", fakeAnswer{})
	if _, err := r2.c.Round(context.Background(), "g", "a", "root"); err != nil {
		t.Fatal(err)
	}
	p2, _ = r2.c.Policy("g", "a")
	if f := p2.Status.Rounds[1]; f.Value != nil || f.Error != "no series" {
		t.Fatalf("failed round %+v, want no value and error no series", f)
	}
}

// TestHPAFaults: each planted bug of the hpa round changes the decision it
// is about, and only with it switched on.
func TestHPAFaults(t *testing.T) {
	for _, tc := range []struct {
		name            string
		fault           string
		count, max      int
		window          float64
		value           float64
		clean, bugs     autoscaler.Action
		cleanTo, bugsTo int
	}{
		// count 3 at 300 s of stabilization, the signal 1: the window's
		// highest recommendation (the count, recorded at the first round)
		// holds; the bug steps down at once.
		{"ignore the stabilization window", faults.HPAIgnoreStabilization, 3, 5, 300, 1, autoscaler.ActionHold, autoscaler.ActionDown, 3, 1},
		// count 2, threshold 4, signal 8.8: ratio 1.1, within the tolerance.
		{"ignore the tolerance", faults.HPAIgnoreTolerance, 2, 5, 0, 8.8, autoscaler.ActionHold, autoscaler.ActionUp, 2, 3},
		// count 1 of max 10, threshold 4, signal 32: the recommendation 8
		// is over the default scale-up limit max(1 + 4, 2 × 1) = 5; the
		// bug goes straight to 8.
		{"ignore the scale-up limit", faults.HPAIgnoreScaleUpLimit, 1, 10, 0, 32, autoscaler.ActionUp, autoscaler.ActionUp, 5, 8},
	} {
		for _, on := range []bool{false, true} {
			r := newHPARigFaults(t, on, tc.fault)
			r.zone(t, "a", tc.count, tc.max)
			h := spec(4)
			h.Behavior.ScaleDown.StabilizationWindowSeconds = fptr(tc.window)
			r.setHPA(t, "a", h)
			r.metrics.set("a", fakeAnswer{vals: []float64{tc.value}})
			d, err := r.c.Round(context.Background(), "g", "a", "root")
			if err != nil {
				t.Fatal(err)
			}
			want, wantTo := tc.clean, tc.cleanTo
			if on {
				want, wantTo = tc.bugs, tc.bugsTo
			}
			if d.Action != want || d.To != wantTo {
				t.Errorf("%s (fault on %v): %s to %d (%s), want %s to %d", tc.name, on, d.Action, d.To, d.Reason, want, wantTo)
			}
			// The spec the console shows stays as set.
			if p, _ := r.c.Policy("g", "a"); *p.HPA.Behavior.ScaleDown.StabilizationWindowSeconds != tc.window {
				t.Errorf("%s: the shown window changed to %v", tc.name, *p.HPA.Behavior.ScaleDown.StabilizationWindowSeconds)
			}
		}
	}
}

// newHPARigFaults is newHPARig with fault switched on when on.
func newHPARigFaults(t *testing.T, on bool, fault string) *hpaRig {
	t.Helper()
	r := newHPARig(t, false)
	if on {
		r.faults = faults.Set{fault: true}
		r.restart(t)
	}
	return r
}
