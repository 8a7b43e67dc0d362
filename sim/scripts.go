package sim

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/store"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// scripts are the scenarios in virtual time, step for step as the harness
// runs them on a platform (scenarios/five.go, spike.go). The facts judged
// from samples and calls are the catalogue's own functions
// (scenarios.FactCountAlwaysOne, FactRefusedAtMaxOne, FactNeverLeftOne,
// FactCountWithin, FactScaledUnderSpikes), so both judge them by the
// same code. What needs a real console (API
// keys, roles, HTTP status) is left to the platform runs. Each is keyed by
// the catalogue's own name, which is defined there alone.
var scripts = map[string]func(*scope) error{
	scenarios.ViewerRefused().Name:     viewerRefused,
	scenarios.MaxOneNeverScales().Name: maxOne,
	scenarios.Sustained().Name:         sustained,
	scenarios.Burst().Name:             burst,
	scenarios.MaxLowered().Name:        maxLowered,
	scenarios.Spike().Name:             spike,
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

func maxOne(s *scope) error {
	p := s.profile()
	if err := s.createZone(1); err != nil {
		return err
	}
	l := s.load(p.MaxOneLoad)
	l.wait()
	s.record(scenarios.FactCountAlwaysOne(s.samples))
	if f, judged := scenarios.FactRefusedAtMaxOne(l.calls, s.z.m.Canary > 0, p); judged {
		s.record(f)
	}
	s.check("calls served", l.calls.OK > 0, "%d calls ok", l.calls.OK)
	return nil
}

// loadUntilMax applies load and waits until the count reaches max, then
// until all max workers are ready; it records both times.
func loadUntilMax(s *scope, d time.Duration) *loadRun {
	p := s.profile()
	l := s.load(d)
	reach, err := s.waitFor(fmt.Sprintf("count to reach %d", p.Max), p.UpTimeout, func(x target.Sample) bool { return x.Count >= p.Max })
	if !s.check(fmt.Sprintf("count reaches %d under load", p.Max), err == nil, "%s", errOr(err, "at %.0f s", s.sinceAt(reach.At))) {
		return l
	}
	s.verdict.UpToMaxS = s.sinceAt(reach.At)
	// Discovery lists the canaries too (Model.Canary): all max workers are
	// ready when max + canaries endpoints are.
	ready, err := s.waitFor(fmt.Sprintf("%d workers ready", p.Max), p.UpTimeout, func(x target.Sample) bool { return x.Ready >= p.Max+s.z.m.Canary })
	if s.check(fmt.Sprintf("all %d workers ready", p.Max), err == nil, "%s", errOr(err, "at %.0f s", s.sinceAt(ready.At))) {
		s.verdict.ReadyMaxS = s.sinceAt(ready.At)
	}
	return l
}

func waitBackTo1(s *scope) {
	if f, left := scenarios.FactNeverLeftOne(s.samples); !left {
		s.record(f)
		return
	}
	back, err := s.waitFor("count back to 1", s.profile().DownTimeout, func(x target.Sample) bool { return x.Count == 1 })
	if s.check("count back to 1 after the load", err == nil, "%s", errOr(err, "at %.0f s", s.sinceAt(back.At))) {
		s.verdict.BackTo1S = s.sinceAt(back.At)
	}
}

func checkBounds(s *scope, maxCount int) { s.record(scenarios.FactCountWithin(s.samples, maxCount)) }

func sustained(s *scope) error {
	p := s.profile()
	if err := s.createZone(p.Max); err != nil {
		return err
	}
	l := loadUntilMax(s, p.UpTimeout+p.SustainHold)
	if s.verdict.UpToMaxS < 0 {
		return nil
	}
	s.pause(p.SustainHold)
	l.stop()
	l.wait()
	waitBackTo1(s)
	checkBounds(s, p.Max)
	return nil
}

func burst(s *scope) error {
	p := s.profile()
	if err := s.createZone(p.Max); err != nil {
		return err
	}
	l := s.load(p.Burst)
	l.wait()
	peak := 0
	for _, smp := range s.samples {
		peak = max(peak, smp.Count)
	}
	s.check("burst registered", l.calls.OK > 0, "peak count %d, %d calls ok", peak, l.calls.OK)
	waitBackTo1(s)
	checkBounds(s, p.Max)
	return nil
}

func maxLowered(s *scope) error {
	p := s.profile()
	sim := s.sim
	if err := s.createZone(p.Max); err != nil {
		return err
	}
	l := loadUntilMax(s, p.UpTimeout+p.LoweredHold)
	if s.verdict.UpToMaxS < 0 {
		return nil
	}
	one := 1
	_, err := sim.c.Apply(sim.ctx, actorAdmin, sim.cfg.Group, s.zname, controller.Change{MaxCount: &one})
	s.check("admin PUT max_count 1 is 200", err == nil, "%s", errOr(err, "applied"))
	next, err := s.waitFor("the next sample", 2*p.SampleInterval+5*time.Second, func(target.Sample) bool { return true })
	s.check("count is 1 at the next sample", err == nil && next.Count == 1 && next.Max == 1,
		"count %d max %d%s", next.Count, next.Max, errSuffix(err))
	entries, err := s.audit()
	want := strconv.Itoa(p.Max)
	found := slices.ContainsFunc(entries, func(e store.AuditEntry) bool {
		return e.Action == controller.AuditMaxCount && e.Tags["from"] == want && e.Tags["to"] == "1"
	})
	s.check(fmt.Sprintf("audit shows workers.max_count from:%s to:1", want), err == nil && found, "%d entries%s", len(entries), errSuffix(err))
	s.pause(p.LoweredHold)
	l.stop()
	l.wait()
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
	waitBackTo1(s)
	checkBounds(s, scenarios.SpikeMax)
	return nil
}

func errOr(err error, format string, args ...any) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf(format, args...)
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}
