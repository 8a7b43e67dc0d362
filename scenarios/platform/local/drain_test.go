package local_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
)

// TestScaleInDrainsUnderLoad is issue 6's "scale-in drains": 12 VUs of 2 s
// calls over 3 workers, the policy's own DOWNs take the zone to 2 and then 1
// under that load, and no call fails around them. For each DOWN it checks
// that the fleet removed the first victim the policy named (fewest in
// flight, ties newest: the order itself is proven in autoscaler and
// autoscaler/controller), that the worker left the endpoints first and got
// no new call after one discovery interval, that SIGTERM came only after the
// preStop delay, and that the worker finished its in-flight calls before it
// exited.
func TestScaleInDrainsUnderLoad(t *testing.T) {
	t.Parallel()
	const preStop = time.Second
	r := upLocal(t, func(c *local.Config) {
		c.DownCooldown = 3 * time.Second
		c.Worker.PreStop = preStop
	})
	const zone = "drain"
	r.createZone(zone, 3, 3)
	eps := r.waitReady(zone, 3, 30*time.Second)

	l := r.startLoad(zone, 12, 2000, 2*time.Minute, 5*time.Second)
	r.waitServing(eps, 20*time.Second)
	// 4 of 32 in flight per worker is low: after 3 low rounds and the down
	// cooldown the policy steps down, and again at 2 (6 of 32 each, and 12
	// on one worker stays under the up thresholds), then holds at 1.
	r.scheduler(true, 500*time.Millisecond)

	for _, n := range []int{2, 1} {
		rep := r.watchScaleIn(zone, eps, preStop)
		t.Logf("DOWN to %d: removed %s with %d in flight; it got its last call %.2fs, SIGTERM %.2fs and exited %.2fs after leaving the endpoints",
			n, rep.victim.ID, rep.inFlightAtRemoval, rep.lastAdmission.Seconds(), rep.sigterm.Seconds(), rep.exited.Seconds())
		eps = slices.DeleteFunc(eps, func(ep fleet.Endpoint) bool { return ep.ID == rep.victim.ID })
	}
	downs := autoscales(r.audit(zone), "down")
	if len(downs) != 2 {
		t.Errorf("audit has %d DOWNs, want 2: %+v", len(downs), downs)
	}

	l.Stop()
	l.Wait(t, time.Minute)
	tot := l.m.Totals()
	t.Logf("calls: %v", tot)
	if bad := failed(l.Results()); len(bad) > 0 || tot[load.Class429] > 0 {
		t.Errorf("%d calls failed around the scale-ins (want none; 429: %d): first %+v", len(bad), tot[load.Class429], bad[0:min(len(bad), 3)])
	}
	if tot[load.ClassOK] == 0 {
		t.Error("no call succeeded")
	}
	edge := r.logOf("edge")
	for _, ln := range edge {
		if strings.Contains(ln.Msg, "unreachable") || strings.Contains(ln.Msg, "failed after the call was sent") {
			t.Errorf("the edge tried a removed worker: %s", ln.Raw)
		}
	}
}

type scaleInReport struct {
	victim            fleet.Endpoint
	inFlightAtRemoval int
	lastAdmission     time.Duration // from leaving the endpoints to the last call the victim admitted
	sigterm, exited   time.Duration // from leaving the endpoints
}

// watchScaleIn waits for the zone to lose one of eps, then watches that
// worker until it exits and checks the drain.
func (r *rig) watchScaleIn(zone string, eps []fleet.Endpoint, preStop time.Duration) scaleInReport {
	t := r.t
	t.Helper()
	var rep scaleInReport
	waitUntil(t, fmt.Sprintf("a DOWN from %d workers", len(eps)), 60*time.Second, 20*time.Millisecond, func() (bool, string) {
		z := r.fleetZone(zone)
		for _, ep := range eps {
			if !slices.ContainsFunc(z.Endpoints, func(x fleet.Endpoint) bool { return x.ID == ep.ID }) {
				rep.victim = ep
				return true, ""
			}
		}
		return false, describe(z)
	})
	removed := time.Now()

	// Watch the victim's own counters until its listener closes (SIGTERM).
	type sample struct {
		at              time.Time
		inFlight, calls int
		admitted        int
	}
	var samples []sample
	every := time.NewTicker(20 * time.Millisecond) // the sampling rate of the victim's counters
	defer every.Stop()
	for time.Since(removed) < 30*time.Second {
		m, err := r.workerMetrics(rep.victim.Addr, 10*time.Second) // an error ends the watch: only a closed listener may
		if err != nil {
			break
		}
		samples = append(samples, sample{at: time.Now(), inFlight: m.InFlight, calls: int(m.CallsTotal), admitted: m.InFlight + int(m.CallsTotal)})
		<-every.C
	}
	if len(samples) == 0 {
		t.Fatalf("victim %s did not answer /metrics right after it left the endpoints", rep.victim.ID)
	}
	rep.inFlightAtRemoval = samples[0].inFlight
	if rep.inFlightAtRemoval == 0 {
		t.Errorf("victim %s had no call in flight when removed: the drain proves nothing", rep.victim.ID)
	}
	// The last admission is the first sample at the final admitted count:
	// it must come before SIGTERM (the end of the preStop delay), since the
	// edge drops the worker at its next discovery refresh.
	final := samples[len(samples)-1].admitted
	rep.lastAdmission = samples[0].at.Sub(removed)
	for i, s := range samples {
		if s.admitted == final {
			if i > 0 {
				rep.lastAdmission = s.at.Sub(removed)
			}
			break
		}
	}
	if rep.lastAdmission >= preStop-100*time.Millisecond {
		t.Errorf("victim %s still got calls %s after it left the endpoints (preStop %s, discovery every %s)",
			rep.victim.ID, rep.lastAdmission, preStop, r.cfg.Discovery)
	}
	if last := samples[len(samples)-1]; last.at.Sub(removed) < preStop-150*time.Millisecond {
		t.Errorf("victim %s stopped listening %s after it left the endpoints, before the preStop delay %s", rep.victim.ID, last.at.Sub(removed), preStop)
	}

	// It drains: SIGTERM, then every in-flight call finishes, then it exits 0.
	var logs []logLine
	waitUntil(t, "worker "+rep.victim.ID+" to drain and exit", r.cfg.Worker.Drain+10*time.Second, 50*time.Millisecond, func() (bool, string) {
		logs = r.logOf(rep.victim.ID)
		return hasMsg(logs, "drained, exiting"), fmt.Sprintf("%d log lines", len(logs))
	})
	for _, ln := range logs {
		switch ln.Msg {
		case "signal received, draining":
			rep.sigterm = ln.Time.Sub(removed)
		case "drained, exiting":
			rep.exited = ln.Time.Sub(removed)
		case "work call interrupted":
			t.Errorf("victim %s cut a call short: %s", rep.victim.ID, ln.Raw)
		}
	}
	if rep.sigterm < preStop-100*time.Millisecond {
		t.Errorf("victim %s got SIGTERM %s after it left the endpoints, before the preStop delay %s", rep.victim.ID, rep.sigterm, preStop)
	}

	// The policy named it: the first victim of the DOWN's audit entry.
	var downs []string
	waitUntil(t, "the DOWN's audit entry", 10*time.Second, 100*time.Millisecond, func() (bool, string) {
		downs = downs[:0]
		for _, e := range autoscales(r.audit(zone), "down") {
			downs = append(downs, e.Tags["victims"])
		}
		for _, v := range downs {
			if strings.HasPrefix(v+",", rep.victim.ID+",") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("DOWN victims %q", downs)
	})
	if !slices.ContainsFunc(r.logOf("console"), func(l logLine) bool {
		return l.Msg == "autoscale" && strings.Contains(l.Raw, `"action":"down"`)
	}) {
		t.Errorf("console logged no %q line for the DOWN", "autoscale")
	}
	return rep
}
