package controller_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// Each fault of the bounds changes one forced change, and nothing without
// it: the same script runs clean and with the fault.
func TestBoundsFaults(t *testing.T) {
	ctx := context.Background()
	apply := func(t *testing.T, r *rig, zone string, ch controller.Change) error {
		t.Helper()
		_, err := r.c.Apply(ctx, "ga", "g1", zone, ch)
		return err
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	zone := func(t *testing.T, r *rig, z string) string {
		t.Helper()
		v, err := r.c.Zone("g1", z)
		must(t, err)
		s, _ := r.store.Zone("g1", z)
		return fmt.Sprintf("%s count %d max %d (stored %d)", z, v.Count, v.MaxCount, s.MaxCount)
	}
	cases := []struct {
		fault         string
		run           func(t *testing.T, r *rig) string
		clean, faulty string
	}{
		{faults.MaxLeaksToGroup, func(t *testing.T, r *rig) string {
			must(t, apply(t, r, "a", controller.Change{Count: ptr(1), MaxCount: ptr(3)}))
			must(t, apply(t, r, "b", controller.Change{Count: ptr(1), MaxCount: ptr(2)}))
			must(t, apply(t, r, "a", controller.Change{MaxCount: ptr(1)}))
			if _, err := r.c.Apply(ctx, "root", "g2", "c", controller.Change{Count: ptr(1), MaxCount: ptr(4)}); err != nil {
				t.Fatal(err)
			}
			gc, _ := r.c.Zone("g2", "c")
			return zone(t, r, "b") + fmt.Sprintf("; g2/c max %d", gc.MaxCount)
		}, "b count 1 max 2 (stored 2); g2/c max 4", "b count 1 max 1 (stored 1); g2/c max 4"},
		{faults.CountAboveMaxAccepted, func(t *testing.T, r *rig) string {
			must(t, apply(t, r, "a", controller.Change{Count: ptr(1), MaxCount: ptr(3)}))
			err := apply(t, r, "a", controller.Change{Count: ptr(4)})
			var ve *controller.ValidationError
			return fmt.Sprintf("refused %v; %s", errors.As(err, &ve), zone(t, r, "a"))
		}, "refused true; a count 1 max 3 (stored 3)", "refused false; a count 4 max 3 (stored 3)"},
		{faults.AuditForcedAsScheduler, func(t *testing.T, r *rig) string {
			must(t, apply(t, r, "a", controller.Change{Count: ptr(1), MaxCount: ptr(3)}))
			must(t, apply(t, r, "a", controller.Change{Count: ptr(2)}))
			out := ""
			for _, e := range r.audit(t, store.AuditQuery{Action: controller.AuditCount}) {
				out += fmt.Sprintf("%s:%s->%s ", e.Actor, e.Tags["from"], e.Tags["to"])
			}
			return out
		}, "ga:1->2 ga:0->1 ", "scheduler:1->2 scheduler:0->1 "},
	}
	for _, c := range cases {
		t.Run(c.fault, func(t *testing.T) {
			if f, ok := faults.Lookup(c.fault); !ok || f.Component != faults.ComponentConsole {
				t.Fatalf("fault %s not in the catalogue as a console fault", c.fault)
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
