package local_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// TestFaultActions: the local platform's Faulter lists a zone's workers,
// freezes one (its /metrics stops answering) and thaws it (it answers
// again), kills one (the fleet replaces it), and refuses to restart a part
// it cannot with a *NotOfferedError.
func TestFaultActions(t *testing.T) {
	t.Parallel()
	r := upLocal(t, nil)
	const zone = "faults"
	r.createZone(zone, 2, 2)
	r.waitReady(zone, 2, 30*time.Second)
	ctx := context.Background()
	var f platform.Faulter = platform.FaulterOf(r.l, "")
	ws, err := f.Workers(ctx, group, zone)
	if err != nil || len(ws) != 2 || ws[0].Addr == "" || !ws[0].Ready {
		t.Fatalf("workers: %+v %v", ws, err)
	}
	if err := f.Freeze(ctx, group, zone, ws[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.workerMetrics(ws[0].Addr, time.Second); err == nil {
		t.Errorf("a frozen worker's /metrics answered")
	}
	if err := f.Thaw(ctx, group, zone, ws[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.workerMetrics(ws[0].Addr, 10*time.Second); err != nil {
		t.Errorf("a thawed worker's /metrics: %v", err)
	}
	if err := f.Thaw(ctx, group, zone, ws[0].ID); err == nil {
		t.Errorf("thawing a worker that is not frozen: no error")
	}
	if err := f.Kill(ctx, group, zone, ws[1].ID); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the fleet to replace "+ws[1].ID, 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		z := r.fleetZone(zone)
		ready := 0
		for _, ep := range z.Endpoints {
			if ep.ID == ws[1].ID {
				return false, describe(z)
			}
			if ep.Ready {
				ready++
			}
		}
		return ready == 2, describe(z)
	})
	if err := f.Kill(ctx, group, zone, "nobody"); err == nil {
		t.Errorf("killing an unknown worker: no error")
	}
	if err := f.Restart(ctx, "edge"); !errors.Is(err, platform.ErrNotOffered) {
		t.Errorf("restart the edge: %v, want not offered", err)
	}
}
