package local_test

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
)

// TestOutageNeverScalesIn is issue 6's "outage never scales in" on real
// processes. A zone of 3 idle workers would step down after 3 low rounds
// and a 2 s cooldown; with one worker frozen (SIGSTOP) it holds, saying the
// worker is down, for rounds well past the point where it would have
// stepped down. Under load the other workers still scale the zone UP. A
// worker killed (SIGKILL) meanwhile is replaced by the fleet and the count
// does not drop. Thawed (SIGCONT) and idle, the zone steps down again: the
// outage was the only thing holding it.
func TestOutageNeverScalesIn(t *testing.T) {
	t.Parallel()
	r := upLocal(t, func(c *local.Config) {
		c.DownCooldown = 2 * time.Second
		c.UpCooldown = time.Second
		c.StartupGrace = 3 * time.Second
		c.Worker.MaxInflight = 4
		c.Worker.PreStop = 500 * time.Millisecond
	})
	const zone = "outage"
	r.createZone(zone, 3, 4)
	eps := r.waitReady(zone, 3, 30*time.Second)
	samp := r.sampler(zone)
	frozen := eps[0]
	if err := r.l.SignalWorker(frozen.ID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := r.l.SignalWorker(frozen.ID, syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT %s: %v", frozen.ID, err)
			}
		}
	}
	t.Cleanup(thaw)
	frozeAt := time.Now()
	r.scheduler(true, 500*time.Millisecond)

	ctx := ctxFor(t, 3*time.Minute)
	s, err := samp.WaitFor(ctx, "a hold that names the frozen worker down", 30*time.Second, func(x observe.Sample) bool {
		return strings.HasPrefix(x.Decision, "hold") && strings.Contains(x.Decision, frozen.ID) && strings.Contains(x.Decision, "no scale-in")
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("frozen %s: %q after %.1fs", frozen.ID, s.Decision, time.Since(frozeAt).Seconds())
	// Idle, the zone would step down 3 low rounds after the 2 s cooldown.
	// Wait for 6 more rounds (a frozen worker makes each scrape wait its 2 s
	// timeout) and require that every one of them held.
	holds0 := r.consoleDecisions()["hold"]
	waitUntil(t, "6 more scheduler rounds with the worker frozen", 60*time.Second, 100*time.Millisecond, func() (bool, string) {
		d := r.consoleDecisions()
		return d["hold"] >= holds0+6, fmt.Sprint(d)
	})
	if d := r.consoleDecisions(); d["down"] > 0 {
		t.Errorf("the console stepped down with a worker frozen: decisions %v", d)
	}
	for _, x := range samp.Samples() {
		if x.Err == "" && x.Count != 3 {
			t.Fatalf("count %d with a worker frozen, want 3 (decision %q)", x.Count, x.Decision)
		}
	}
	t.Logf("%.0f rounds held with %s frozen for %.1fs", r.consoleDecisions()["hold"], frozen.ID, time.Since(frozeAt).Seconds())

	// UP still works for the rest: 8 VUs of 2 s calls make the 2 ready
	// workers (4 in flight each, limit 4) high.
	l := r.startLoad(zone, 8, 2000, 2*time.Minute, 10*time.Second)
	up, err := samp.WaitFor(ctx, "an UP with the worker still frozen", 30*time.Second, func(x observe.Sample) bool { return x.Count == 4 })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("UP with %s frozen: %q", frozen.ID, up.Decision)
	if ups := autoscales(r.audit(zone), "up"); len(ups) != 1 || ups[0].Tags["to"] != "4" {
		t.Errorf("audit UPs %+v, want one to 4", ups)
	}
	r.waitListed(zone, 4, 3, 30*time.Second)

	// A worker killed under load is replaced; the count does not drop.
	var victim fleet.Endpoint
	for _, ep := range r.fleetZone(zone).Endpoints {
		if ep.ID != frozen.ID && ep.Ready {
			victim = ep
			break
		}
	}
	if err := r.l.SignalWorker(victim.ID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	waitUntil(t, "the fleet to replace the killed worker "+victim.ID, 30*time.Second, 50*time.Millisecond, func() (bool, string) {
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
		return z.Replicas == 4 && len(z.Endpoints) == 4 && ready == 3, describe(z)
	})
	t.Logf("killed %s: replaced in %.1fs", victim.ID, time.Since(killedAt).Seconds())

	thaw()
	l.Stop()
	l.Wait(t, time.Minute)
	for _, x := range samp.Samples() {
		if x.Err == "" && x.Count < 3 {
			t.Errorf("count %d during the outage (decision %q)", x.Count, x.Decision)
		}
	}
	if downs := autoscales(r.audit(zone), "down"); len(downs) > 0 {
		t.Errorf("DOWN during the outage: %+v", downs)
	}
	t.Logf("calls during the outage: %v", l.m.Totals())

	// Thawed and idle, the zone steps down: only the outage held it.
	down, err := samp.WaitFor(ctx, "a DOWN once every worker answers", 60*time.Second, func(x observe.Sample) bool { return x.Count < 4 })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the thaw: %q", down.Decision)
}

// TestWholeZoneUnreachable: every worker of a zone frozen, then killed. The
// console holds with a reason that says so, keeps serving (/readyz 200, no
// panic in its log), and the count stays.
func TestWholeZoneUnreachable(t *testing.T) {
	t.Parallel()
	r := upLocal(t, func(c *local.Config) {
		c.DownCooldown = time.Second
		c.StartupGrace = 2 * time.Second
	})
	const zone = "dark"
	r.createZone(zone, 2, 3)
	eps := r.waitReady(zone, 2, 30*time.Second)
	samp := r.sampler(zone)
	for _, ep := range eps {
		if err := r.l.SignalWorker(ep.ID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.l.SignalWorker(ep.ID, syscall.SIGCONT) })
	}
	r.scheduler(true, 500*time.Millisecond)
	ctx := ctxFor(t, 2*time.Minute)
	s, err := samp.WaitFor(ctx, "a hold for a zone with no ready worker", 30*time.Second, func(x observe.Sample) bool {
		return x.Decision == "hold 2->2: no ready worker (2 down)"
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("all frozen: %q", s.Decision)
	r.consoleStillServes(zone, 2)

	// Killed instead of frozen: the fleet replaces both.
	for _, ep := range eps {
		if err := r.l.SignalWorker(ep.ID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "the fleet to replace both killed workers", 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		z := r.fleetZone(zone)
		for _, ep := range z.Endpoints {
			if ep.ID == eps[0].ID || ep.ID == eps[1].ID || !ep.Ready {
				return false, describe(z)
			}
		}
		return len(z.Endpoints) == 2, describe(z)
	})
	r.consoleStillServes(zone, 2)
	for _, x := range samp.Samples() {
		if x.Err == "" && x.Count != 2 {
			t.Errorf("count %d, want 2 (decision %q)", x.Count, x.Decision)
		}
	}
	for _, ln := range r.logOf("console") {
		if strings.Contains(strings.ToLower(ln.Raw), "panic") || ln.Msg == "policy decision out of bounds, holding" {
			t.Errorf("console: %s", ln.Raw)
		}
	}
}

// waitListed waits until the fleet lists n workers of zone, ready of them ready.
func (r *rig) waitListed(zone string, n, ready int, timeout time.Duration) {
	r.t.Helper()
	waitUntil(r.t, fmt.Sprintf("%d workers listed, %d ready, in %s", n, ready, zone), timeout, 50*time.Millisecond, func() (bool, string) {
		z := r.fleetZone(zone)
		k := 0
		for _, ep := range z.Endpoints {
			if ep.Ready {
				k++
			}
		}
		return len(z.Endpoints) == n && k == ready, describe(z)
	})
}

// consoleStillServes checks /readyz, /livez and the zone's count.
func (r *rig) consoleStillServes(zone string, count int) {
	r.t.Helper()
	ctx := ctxFor(r.t, 10*time.Second)
	if st, err := r.cc.Readyz(ctx); err != nil || st != http.StatusOK {
		r.t.Errorf("console /readyz: HTTP %d %v", st, err)
	}
	z, st, err := r.cc.GetZone(ctx, r.admin(), group, zone)
	if err != nil || st != http.StatusOK || z.Count != count {
		r.t.Errorf("GET %s: HTTP %d count %d %v, want count %d", zone, st, z.Count, err, count)
	}
}
