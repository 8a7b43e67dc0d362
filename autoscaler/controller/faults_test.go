package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// Each console fault changes what the controller does in one situation, and
// nothing without it: the same script runs clean and with the fault.
func TestConsoleFaults(t *testing.T) {
	ctx := context.Background()
	// rounds runs a round at each offset (seconds since t0) with inFlight per
	// worker and returns "action from->to" of each, space-separated.
	rounds := func(t *testing.T, r *rig, inFlight int, offsets ...int) string {
		t.Helper()
		var out []string
		for _, s := range offsets {
			r.clock.Set(t0.Add(time.Duration(s) * time.Second))
			r.fleet.SetLoad("g1", "a", inFlight, 0)
			d, err := r.c.Round(ctx, "g1", "a", controller.ActorScheduler)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %d->%d", d.Action, d.From, d.To))
		}
		return strings.Join(out, " ")
	}
	create := func(t *testing.T, r *rig, count, maxCount int) {
		t.Helper()
		if _, err := r.c.Apply(ctx, "ga", "g1", "a", controller.Change{Count: ptr(count), MaxCount: ptr(maxCount)}); err != nil {
			t.Fatal(err)
		}
	}
	holdsAudited := func(t *testing.T, r *rig) int {
		n := 0
		for _, e := range r.audit(t, store.AuditQuery{Action: controller.AuditAutoscale}) {
			if e.Tags["action"] == "hold" {
				n++
			}
		}
		return n
	}
	cases := []struct {
		fault         string
		run           func(t *testing.T, r *rig) string
		clean, faulty string
	}{
		{faults.IgnoreUpCooldown, func(t *testing.T, r *rig) string { create(t, r, 1, 3); return rounds(t, r, 30, 10) },
			"hold 1->1", "up 1->2"},
		{faults.PlusOneSteps, func(t *testing.T, r *rig) string { create(t, r, 2, 6); return rounds(t, r, 32, 40) },
			"up 2->4", "up 2->3"},
		{faults.DropToOne, func(t *testing.T, r *rig) string { create(t, r, 3, 3); return rounds(t, r, 0, 200, 210, 220) },
			"hold 3->3 hold 3->3 down 3->2", "hold 3->3 hold 3->3 down 3->1"},
		{faults.IgnoreDownCooldown, func(t *testing.T, r *rig) string { create(t, r, 3, 3); return rounds(t, r, 0, 1, 2, 3) },
			"hold 3->3 hold 3->3 hold 3->3", "hold 3->3 hold 3->3 down 3->2"},
		{faults.DownTooEarly, func(t *testing.T, r *rig) string { create(t, r, 3, 3); return rounds(t, r, 0, 200) },
			"hold 3->3", "down 3->2"},
		{faults.Linger, func(t *testing.T, r *rig) string {
			create(t, r, 3, 3)
			return rounds(t, r, 0, 200, 201, 202, 203, 204, 205)
		}, "hold 3->3 hold 3->3 down 3->2 hold 2->2 hold 2->2 hold 2->2", "hold 3->3 hold 3->3 hold 3->3 hold 3->3 hold 3->3 down 3->2"},
		{faults.AuditHolds, func(t *testing.T, r *rig) string {
			create(t, r, 1, 1)
			rounds(t, r, 32, 10, 20)
			return fmt.Sprint(holdsAudited(t, r), " holds audited")
		}, "0 holds audited", "2 holds audited"},
		{faults.LoweredMaxLazy, func(t *testing.T, r *rig) string {
			create(t, r, 3, 3)
			v, err := r.c.SetMax(ctx, "ga", "g1", "a", 1)
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("put count %d, then %s", v.Count, rounds(t, r, 32, 100))
			z, _ := r.store.Zone("g1", "a")
			return got + fmt.Sprintf(", count %d", z.Count)
		}, "put count 1, then hold 1->1, count 1", "put count 3, then set 3->1, count 1"},
	}
	for _, c := range cases {
		t.Run(c.fault, func(t *testing.T) {
			if _, ok := faults.Lookup(c.fault); !ok {
				t.Fatalf("fault %s not in the catalogue", c.fault)
			}
			if got := c.run(t, newRig(t)); got != c.clean {
				t.Errorf("clean: %s, want %s", got, c.clean)
			}
			if got := c.run(t, newRigWith(t, faults.Set{c.fault: true})); got != c.faulty {
				t.Errorf("with %s: %s, want %s", c.fault, got, c.faulty)
			}
		})
	}
}

// A worker whose /metrics lacks the in-flight limit counts as down (no
// scale-in), and the decision's reason says exactly that.
func TestNoInflightLimitIsDown(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.Apply(ctx, "ga", "g1", "a", controller.Change{Count: ptr(2), MaxCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	first := true
	r.fleet.Update("g1", "a", func(w *controllertest.Worker) {
		w.NoLimitMetric = first
		first = false
	})
	var d autoscaler.Decision
	for _, s := range []int{200, 210, 220, 230} { // long after the cooldowns: idle rounds
		r.clock.Set(t0.Add(time.Duration(s) * time.Second))
		var err error
		if d, err = r.c.Round(ctx, "g1", "a", controller.ActorScheduler); err != nil {
			t.Fatal(err)
		}
	}
	if d.Action != autoscaler.ActionHold || !strings.Contains(d.Reason, controller.DownNoInflightLimit) ||
		!strings.Contains(d.Reason, "no scale-in") {
		t.Fatalf("decision %s %d->%d %q, want a hold naming the missing in-flight limit", d.Action, d.From, d.To, d.Reason)
	}
}
