package sim

import (
	"time"

	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/load"
)

// A catalogue scenario with a Flow (max-1, sustained, burst, max-lowered)
// runs that very code on the model (world): the same steps, facts and
// bounds as on a platform. scripts are the others in virtual time, still
// written here step for step as the harness runs them on a platform
// (scenarios/five.go, spike.go), with the catalogue's steps and facts where
// they have them (scenarios.WaitBackTo1, CheckBounds,
// FactScaledUnderSpikes); what needs a real console (API keys, roles, HTTP
// status) is left to the platform runs. Each is keyed by the catalogue's
// own name, which is defined there alone.
var scripts = map[string]func(*scope) error{
	scenarios.ViewerRefused().Name: viewerRefused,
	scenarios.Spike().Name:         spike,
}

// simulates reports whether the simulator runs sc: its Flow, or a script.
func simulates(sc scenarios.Scenario) bool { return sc.Flow != nil || scripts[sc.Name] != nil }

// simulated names the catalogue scenarios the simulator runs.
func simulated() []string {
	var out []string
	for _, sc := range append(scenarios.All(), scenarios.Spike()) {
		if simulates(sc) {
			out = append(out, sc.Name)
		}
	}
	return out
}

// run runs sc on the scope: its Flow on the model, else its script.
func (s *scope) run(sc scenarios.Scenario) error {
	if sc.Flow != nil {
		return sc.Flow(s.sim.ctx, world{s})
	}
	return scripts[sc.Name](s)
}

// viewerRefused: roles are the console's, not the model's; in virtual time
// the zone is created and must not change while nobody loads it.
func viewerRefused(s *scope) error {
	if err := s.createZone(s.profile().Max); err != nil {
		return err
	}
	before := s.last()
	s.pause(time.Second) // the harness's ten API calls
	after := s.last()
	s.check("count and max unchanged", after.Count == before.Count && after.Max == before.Max,
		"before count %d max %d, after count %d max %d (roles and HTTP answers are checked on a platform only)",
		before.Count, before.Max, after.Count, after.Max)
	return nil
}

// spike runs the staged spike profile of the hpa load test (scenarios.SpikeStages, scaled like
// the profile's other times) against a zone with max scenarios.SpikeMax.
func spike(s *scope) error {
	p := s.profile()
	if err := s.createZone(scenarios.SpikeMax); err != nil {
		return err
	}
	f := float64(p.SchedulerInterval) / float64(scenarios.Published().SchedulerInterval)
	lp := load.RampingVUs(scenarios.SpikeStartVUs, scenarios.SpikeStages()...).Scale(f)
	lp.GracefulStop, lp.GracefulRampDown, lp.ThinkTime = p.GracefulStop, p.GracefulStop, p.ThinkTime
	l := s.startLoad(lp)
	l.wait()
	s.record(scenarios.FactScaledUnderSpikes(s.samples))
	scenarios.WaitBackTo1(s.sim.ctx, world{s})
	scenarios.CheckBounds(world{s}, scenarios.SpikeMax)
	return nil
}
