package controller_test

import (
	"context"
	"errors"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// TestWorkersReadsWithoutDeciding: Workers scrapes the zone's workers now
// and changes nothing (no decision, no decision count, no audit entry).
func TestWorkersReadsWithoutDeciding(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	two, three := 2, 3
	if _, err := r.c.Apply(ctx, "root", "g", "z", controller.Change{Count: &two, MaxCount: &three}); err != nil {
		t.Fatal(err)
	}
	r.fleet.SetLoad("g", "z", 30, 10)
	r.fleet.Update("g", "z", func(w *controllertest.Worker) {
		if w.Endpoint.ID == "g-z-2" {
			w.Unreachable = true
		}
	})
	before, _ := r.c.Zone("g", "z")
	audits := r.audit(t, store.AuditQuery{Limit: 1000})
	counts := r.c.DecisionCounts()

	ws, err := r.c.Workers(ctx, "g", "z")
	if err != nil || len(ws) != 2 {
		t.Fatalf("Workers: %v, %v; want two samples", ws, err)
	}
	if w := ws[0]; !w.Reachable || !w.Ready || w.InFlight != 30 || w.Limit != controllertest.DefaultLimit || w.CallsTotal != 10 || !w.SampledAt.Equal(t0) {
		t.Errorf("first worker %+v", w)
	}
	if w := ws[1]; w.Reachable || w.Ready {
		t.Errorf("the unreachable worker reads %+v", w)
	}
	after, _ := r.c.Zone("g", "z")
	if after.LastDecision == nil || !after.LastDecision.At.Equal(before.LastDecision.At) || after.LastDecision.Action != before.LastDecision.Action || after.Count != 2 {
		t.Errorf("Workers changed the zone: %+v -> %+v", before, after)
	}
	if got := r.audit(t, store.AuditQuery{Limit: 1000}); len(got) != len(audits) {
		t.Errorf("Workers audited: %d entries -> %d", len(audits), len(got))
	}
	if got := r.c.DecisionCounts(); len(got) != len(counts) || got["hold"] != counts["hold"] {
		t.Errorf("Workers counted a decision: %v -> %v", counts, got)
	}

	if _, err := r.c.Workers(ctx, "g", "nope"); !errors.Is(err, controller.ErrNotFound) {
		t.Errorf("unknown zone: %v, want ErrNotFound", err)
	}
	r.fleet.SetDiscoveryError(errors.New("apiserver away"))
	if _, err := r.c.Workers(ctx, "g", "z"); !errors.Is(err, controller.ErrDiscovery) {
		t.Errorf("discovery down: %v, want ErrDiscovery", err)
	}
}
