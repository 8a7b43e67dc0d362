package local_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/worker"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
)

// TestReadinessSignals: the signals the platform sends are the ones the
// reference worker handles.
func TestReadinessSignals(t *testing.T) {
	if local.SignalFailReadiness != worker.SignalFailReadiness || local.SignalPassReadiness != worker.SignalPassReadiness {
		t.Errorf("platform signals %v/%v, the worker handles %v/%v", local.SignalFailReadiness, local.SignalPassReadiness,
			worker.SignalFailReadiness, worker.SignalPassReadiness)
	}
	var nf platform.Faulter = platform.NoFaults{Platform: "external", Reason: "no access"}
	if _, err := nf.FailReadiness(context.Background(), "g", "z", "w"); !errors.Is(err, platform.ErrNotOffered) {
		t.Errorf("NoFaults.FailReadiness: %v, want not offered", err)
	}
	if err := nf.PassReadiness(context.Background(), "g", "z", "w"); !errors.Is(err, platform.ErrNotOffered) {
		t.Errorf("NoFaults.PassReadiness: %v, want not offered", err)
	}
}

// TestFailReadiness: the fault action turns a worker's /readyz to 503
// while it still answers calls, the fleet lists it not ready within its
// failure threshold of probes, and PassReadiness lists it ready again.
func TestFailReadiness(t *testing.T) {
	t.Parallel()
	r := upLocal(t, nil)
	const zone = "readiness"
	r.createZone(zone, 2, 2)
	r.waitReady(zone, 2, 30*time.Second)
	ctx := ctxFor(t, time.Minute)
	f := platform.FaulterOf(r.l, "")
	ws, err := f.Workers(ctx, group, zone)
	if err != nil || len(ws) != 2 {
		t.Fatalf("workers: %+v %v", ws, err)
	}
	victim := ws[0]
	rd, err := f.FailReadiness(ctx, group, zone, victim.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rd.ProbePeriod != r.cfg.ProbeInterval || rd.FailureThreshold != 3 || rd.RouteInterval != r.cfg.Discovery {
		t.Errorf("readiness %+v, want probe %s × 3, route %s", rd, r.cfg.ProbeInterval, r.cfg.Discovery)
	}
	if st := r.get("http://" + victim.Addr + "/readyz"); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz of a worker failing readiness: %d, want 503", st)
	}
	res := load.MCPToolCall(r.hc, "http://"+victim.Addr+"/mcp", "work", map[string]any{"ms": 0}, nil)(ctx, 0, 0)
	if res.Class != load.ClassOK {
		t.Errorf("a call straight to a worker failing readiness: %s %d %s, want ok", res.Class, res.Status, res.Err)
	}
	listed := func(ready bool) func() (bool, string) {
		return func() (bool, string) {
			z := r.fleetZone(zone)
			for _, ep := range z.Endpoints {
				if ep.ID == victim.ID {
					return ep.Ready == ready, describe(z)
				}
			}
			return false, describe(z)
		}
	}
	waitUntil(t, victim.ID+" listed not ready", 10*time.Second, 20*time.Millisecond, listed(false))
	if err := f.PassReadiness(ctx, group, zone, victim.ID); err != nil {
		t.Fatal(err)
	}
	if st := r.get("http://" + victim.Addr + "/readyz"); st != http.StatusOK {
		t.Errorf("/readyz after PassReadiness: %d, want 200", st)
	}
	waitUntil(t, victim.ID+" listed ready again", 10*time.Second, 20*time.Millisecond, listed(true))
	if _, err := f.FailReadiness(ctx, group, zone, "nobody"); err == nil {
		t.Errorf("failing the readiness of an unknown worker: no error")
	}
}

// get answers url's status (0 when it does not answer).
func (r *rig) get(url string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := r.hc.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
