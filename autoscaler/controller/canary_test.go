package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
)

// A zone with a canary: the count is the stable workers (the canary is never
// "missing" and never counted in Ready), the canary is capacity for the step
// policy, a down canary blocks every scale-in, and the canary is never a
// victim (Ramen 0.7.5: "The canary counts as capacity"; "A worker that does
// not answer counts as down, never as low, so an outage never scales a zone
// in").
func TestCanaryRounds(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.Apply(ctx, "root", "g1", "a", controller.Change{Count: ptr(1), MaxCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	canary := r.fleet.AddCanary("g1", "a")

	// Count 1 and the canary at 10 in flight each: 20/64 = 31.25 %, not an
	// UP (alone, 20/32 = 62.5 % would be). Nothing is missing.
	r.clock.Advance(time.Minute)
	r.fleet.SetLoad("g1", "a", 10, 0)
	d, err := r.c.Round(ctx, "g1", "a", controller.ActorScheduler)
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != autoscaler.ActionHold || !strings.Contains(d.Reason, "mean in-flight 31.3%") || strings.Contains(d.Reason, "missing") {
		t.Fatalf("count 1 with the canary at 10+10: %s %q, want a hold at 31.3%% and nothing missing", d.Action, d.Reason)
	}
	v, _ := r.c.Zone("g1", "a")
	if v.Ready != 1 || len(v.Workers) != 2 {
		t.Fatalf("view: ready %d, workers %+v; want 1 stable ready and 2 listed", v.Ready, v.Workers)
	}
	if c := v.Workers[1]; c.ID != canary || !c.Canary || !c.Ready || c.InFlight != 10 || c.Limit != 32 || v.Workers[0].Canary {
		t.Fatalf("workers %+v: want the second to be the canary, ready, 10/32", v.Workers)
	}
	live, err := r.c.ZoneLive(ctx, "g1", "a")
	if err != nil || live.Ready != 1 || len(live.Workers) != 2 || !live.Workers[1].Canary || live.Workers[1].InFlight != 10 {
		t.Fatalf("live view %+v, %v: want 1 stable ready and the canary marked with its last in-flight", live, err)
	}

	// Both full: 64/64, ceil(2 × 100 %/50 %) = 4, at most the max 3.
	r.fleet.SetLoad("g1", "a", 32, 0)
	d, err = r.c.Round(ctx, "g1", "a", controller.ActorScheduler)
	if err != nil || d.Action != autoscaler.ActionUp || d.To != 3 {
		t.Fatalf("count 1 with the canary at 32+32: %+v, %v; want up to 3", d, err)
	}
	if got := r.fleet.Replicas("g1", "a"); got != 3 {
		t.Fatalf("fleet runs %d stable workers, want 3", got)
	}

	// Idle, but the canary does not answer: down, so no scale-in however long.
	r.fleet.SetLoad("g1", "a", 0, 0)
	r.fleet.Update("g1", "a", func(w *controllertest.Worker) { w.Unreachable = w.Endpoint.Canary })
	for i := range 6 {
		r.clock.Advance(time.Minute)
		d, err := r.c.Round(ctx, "g1", "a", controller.ActorScheduler)
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != autoscaler.ActionHold || !strings.Contains(d.Reason, "1 of 4 workers down ("+canary+")") {
			t.Fatalf("round %d with the canary down: %s %q, want a hold naming it down", i, d.Action, d.Reason)
		}
	}

	// The canary answers again: after 3 low rounds and the cooldown, DOWN
	// by one, and its victims never name the canary.
	r.fleet.Update("g1", "a", func(w *controllertest.Worker) { w.Unreachable = false })
	var downs int
	for range 12 {
		r.clock.Advance(3 * time.Minute)
		d, err := r.c.Round(ctx, "g1", "a", controller.ActorScheduler)
		if err != nil {
			t.Fatal(err)
		}
		if d.Action == autoscaler.ActionDown {
			downs++
			if slices.Contains(d.Victims, canary) || len(d.Victims) != d.From {
				t.Fatalf("down %d->%d victims %v: want every stable worker, never the canary %s", d.From, d.To, d.Victims, canary)
			}
		}
	}
	if downs != 2 || r.fleet.Replicas("g1", "a") != 1 {
		t.Fatalf("%d downs, %d stable workers; want 2 downs back to 1", downs, r.fleet.Replicas("g1", "a"))
	}
	eps, _ := r.fleet.Endpoints(ctx, "g1", "a")
	if len(eps) != 2 || eps[1].ID != canary {
		t.Fatalf("endpoints %+v: want one stable worker and the canary still there", eps)
	}
	for _, sc := range r.fleet.Scales() {
		if slices.Contains(sc.Victims, canary) {
			t.Fatalf("scale call %+v names the canary", sc)
		}
	}
}
