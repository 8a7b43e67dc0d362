package local_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
)

// TestWorkerCrashUnderLoad is issue 6's "worker crash under load": a worker
// killed (SIGKILL) under 12 VUs of 300 ms calls. Only the calls it had in
// flight fail (the edge answers 502 for them; calls it had not yet sent go to
// another worker), they all end within one health interval of the kill, the
// load's per-second buckets put them in the second of the kill, the edge
// stops trying the dead worker within one discovery interval, and the fleet
// replaces it without the count dropping.
func TestWorkerCrashUnderLoad(t *testing.T) {
	t.Parallel()
	r := upLocal(t, func(c *local.Config) { c.Worker.PreStop = 500 * time.Millisecond })
	const zone = "crash"
	r.createZone(zone, 3, 3)
	eps := r.waitReady(zone, 3, 30*time.Second)
	samp := r.sampler(zone)

	l := r.startLoad(zone, 12, 300, 2*time.Minute, 5*time.Second)
	r.waitServing(eps, 20*time.Second)
	// Kill a quarter into a second of the load's clock, so that the second
	// of the kill is unambiguous.
	start := l.m.Start()
	next := start.Add(time.Duration(time.Since(start)/time.Second+1)*time.Second + 250*time.Millisecond)
	tm := time.NewTimer(time.Until(next)) // when to inject the fault, not a synchronisation
	<-tm.C
	victim := eps[1]
	if err := r.l.SignalWorker(victim.ID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	killSecond := int(killed.Sub(start) / time.Second)

	waitUntil(t, "the fleet to replace "+victim.ID, 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		z := r.fleetZone(zone)
		ready := 0
		for _, ep := range z.Endpoints {
			if ep.ID == victim.ID {
				return false, describe(z)
			}
			if ep.Ready {
				ready++
			}
		}
		return z.Replicas == 3 && ready == 3, describe(z)
	})
	replaced := time.Since(killed)
	// Keep the load on past the replacement, so calls after the kill are seen.
	calls := l.m.Completed()
	waitUntil(t, "100 more calls after the replacement", 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		n := l.m.Completed()
		return n >= calls+100, fmt.Sprint(n - calls)
	})
	l.Stop()
	l.Wait(t, time.Minute)

	health := max(r.cfg.ProbeInterval, r.cfg.Discovery)
	bad := failed(l.Results())
	if len(bad) == 0 {
		t.Fatal("no call failed: the killed worker had nothing in flight, the test proves nothing")
	}
	for _, res := range bad {
		end := res.Start.Add(res.Latency)
		if res.Class != load.Class5xx || res.Status != 502 {
			t.Errorf("failed call %+v: want 502 from the edge", res)
		}
		if end.Before(killed.Add(-50*time.Millisecond)) || end.After(killed.Add(health+250*time.Millisecond)) {
			t.Errorf("failed call ended %s after the kill, outside one health interval (%s): %+v", end.Sub(killed), health, res)
		}
	}
	var perSecond []string
	for _, sec := range l.m.Seconds() {
		n := sec.Classes[load.Class5xx] + sec.Classes[load.ClassTransport] + sec.Classes[load.ClassBadResponse] + sec.Classes[load.ClassJSONRPCError]
		if n > 0 {
			perSecond = append(perSecond, fmt.Sprintf("second %d: %d", sec.Offset, n))
			if sec.Offset != killSecond {
				t.Errorf("%d errors attributed to second %d, the kill was in second %d", n, sec.Offset, killSecond)
			}
		}
	}

	// The edge tried the dead worker (a dial failure, retried elsewhere) only
	// until its next discovery refresh.
	var dials []string
	for _, ln := range r.logOf("edge") {
		if strings.Contains(ln.Raw, victim.ID) && strings.Contains(ln.Msg, "unreachable") {
			dials = append(dials, fmt.Sprintf("%.3fs", ln.Time.Sub(killed).Seconds()))
			// A dial failure marks the worker skipped until the next refresh;
			// the refresh after the fleet dropped it ends the attempts.
			if ln.Time.After(killed.Add(2*r.cfg.Discovery + 250*time.Millisecond)) {
				t.Errorf("edge still dialled %s %s after the kill (discovery every %s)", victim.ID, ln.Time.Sub(killed), r.cfg.Discovery)
			}
		}
	}
	for _, x := range samp.Samples() {
		if x.Err == "" && x.Count != 3 {
			t.Errorf("console count %d after a crash, want 3", x.Count)
		}
	}
	if !strings.Contains(readFile(t, r.work+"/harness.log"), "worker exited on its own; replacing it") {
		t.Error("the fleet did not log the replacement")
	}
	t.Logf("killed %s in load second %d: %d calls failed (%s), edge dial failures at %v, replaced in %.1fs; calls %v",
		victim.ID, killSecond, len(bad), strings.Join(perSecond, ", "), dials, replaced.Seconds(), l.m.Totals())
}
