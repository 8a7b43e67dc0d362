package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/store"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// Actor of the scenarios' forced changes in the audit log, as the harness's
// group admin key would be.
const actorAdmin = "sim-group-admin"

// scope is one scenario's run in virtual time: its zone, its samples, its
// loads and its facts, as scenarios.Scope is on a platform.
type scope struct {
	sim   *Sim
	co    *coro
	name  string
	zname string
	z     *zone
	start time.Duration

	sampling bool
	samples  []target.Sample
	waiters  []*waiter
	loads    []*loadRun
	facts    []reports.Fact
	verdict  reports.Verdict
	rounds   *modelSignal // an hpa zone's query rounds, polled at every sample while a scenario watches them
	sibling  *sibling     // the group's other zone, when the scenario watches it (World.WatchGroup)
}

type waiter struct {
	cond     func(target.Sample) bool
	done     bool
	got      target.Sample
	timedOut bool
	wake     func()
}

func (s *scope) profile() scenarios.Profile { return s.sim.cfg.Profile }

// since is seconds from the scenario's start to virtual offset t, 0.1 s resolution.
func (s *scope) since(t time.Duration) float64 { return round1((t - s.start).Seconds()) }

func (s *scope) sinceAt(t time.Time) float64 { return s.since(t.Sub(Epoch)) }

func (s *scope) check(name string, ok bool, format string, args ...any) bool {
	s.facts = append(s.facts, reports.Fact{Name: name, Passed: ok, Detail: fmt.Sprintf(format, args...)})
	return ok
}

// record adds fact f, judged by a scenarios.Fact… function.
func (s *scope) record(f reports.Fact) { s.facts = append(s.facts, f) }

// block waits until wake is called (once; later calls do nothing).
func (s *scope) block(register func(wake func())) {
	woken := false
	register(func() {
		if !woken {
			woken = true
			s.sim.l.after(0, s.co.step)
		}
	})
	s.co.block()
}

// pause holds the script for d of virtual time.
func (s *scope) pause(d time.Duration) {
	s.block(func(wake func()) { s.sim.l.after(d, wake) })
}

// waitFor waits until a sample taken from now on satisfies cond, at most
// timeout; the error names what was awaited and the last sample.
func (s *scope) waitFor(what string, timeout time.Duration, cond func(target.Sample) bool) (target.Sample, error) {
	w := &waiter{cond: cond}
	s.block(func(wake func()) {
		w.wake = wake
		s.waiters = append(s.waiters, w)
		s.sim.l.after(timeout, func() {
			if !w.done {
				w.done, w.timedOut = true, true
				wake()
			}
		})
	})
	if w.timedOut {
		last := s.last()
		return last, fmt.Errorf("waited %s for %s in %s/%s: last sample count=%d max=%d ready=%d",
			timeout, what, s.sim.cfg.Group, s.zname, last.Count, last.Max, last.Ready)
	}
	return w.got, nil
}

func (s *scope) last() target.Sample {
	if len(s.samples) == 0 {
		return target.Sample{}
	}
	return s.samples[len(s.samples)-1]
}

// readZone reads the zone now, as a sample (not recorded).
func (s *scope) readZone() target.Sample {
	v, err := s.sim.c.ZoneLive(s.sim.ctx, s.sim.cfg.Group, s.zname)
	// min 1 and desiredReplicas the count, as the console's zone reading
	smp := target.Sample{At: s.sim.l.Now(), Count: v.Count, Max: v.MaxCount, Ready: v.Ready, Min: 1, Desired: v.Count}
	if err != nil {
		smp.Err = err.Error()
	}
	if d := v.LastDecision; d != nil && d.Action != "" {
		smp.Decision = target.DecisionText(string(d.Action), d.From, d.To, d.Reason)
	}
	if d := v.LastScale; d != nil && d.Action != "" { // as the console's zone reading (target.NewConsole's State)
		smp.Change = target.DecisionText(string(d.Action), d.From, d.To, d.Reason)
	}
	return smp
}

// sampleLoop takes a zone sample now and every SampleInterval while the
// scenario runs, as the harness's sampler reads the console.
func (s *scope) sampleLoop() {
	if !s.sampling {
		return
	}
	s.takeSample()
	s.sim.l.after(s.profile().SampleInterval, s.sampleLoop)
}

func (s *scope) takeSample() target.Sample {
	if s.rounds != nil {
		s.rounds.poll()
	}
	smp := s.readZone()
	s.samples = append(s.samples, smp)
	s.sim.write(reports.KindSampleRaw, reports.ZoneSample{Scenario: s.name, T: s.sinceAt(smp.At),
		Sample: reports.Sample{At: smp.At, Count: smp.Count, Max: smp.Max, Ready: smp.Ready, Decision: smp.Decision, Err: smp.Err}})
	for _, w := range s.waiters {
		if !w.done && smp.Err == "" && w.cond(smp) {
			w.done, w.got = true, smp
			w.wake()
		}
	}
	s.waiters = slices.DeleteFunc(s.waiters, func(w *waiter) bool { return w.done })
	return smp
}

// createZone creates the scenario's zone with count 1 and max (with
// Config.OneZone: sets count 1 and max on the run's one zone), gives it the
// run's policy, starts sampling, and waits for a first ready worker and a
// first call the edge routes (the harness's CreateZone and waitServed).
func (s *scope) createZone(maxCount int) error {
	sim := s.sim
	one := 1
	ch := controller.Change{Count: &one, MaxCount: &maxCount}
	if s.z = sim.shared; s.z == nil {
		s.z = sim.newZone(s.zname)
		if sim.cfg.OneZone {
			sim.shared = s.z
		}
	} else if v, err := sim.c.ZoneLive(sim.ctx, sim.cfg.Group, s.zname); err == nil && v.Count == 1 {
		// The run's one zone, already at 1: set the max only, as a
		// PUT {"max_count": n} does; a count PUT would restart the cooldowns.
		ch.Count = nil
	}
	if _, err := sim.c.Apply(sim.ctx, actorAdmin, sim.cfg.Group, s.zname, ch); err != nil {
		return fmt.Errorf("create zone %s with count 1, max %d: %w", s.zname, maxCount, err)
	}
	if sim.cfg.Policy == scenarios.PolicyHPA {
		if err := s.applyHPA(maxCount); err != nil {
			return err
		}
	}
	s.sampling = true
	s.sim.l.after(0, s.sampleLoop)
	p := s.profile()
	if _, err := s.waitFor("the first worker to be ready", 30*time.Second+2*p.BootDelay+2*sim.cfg.Model.NodeDelay,
		func(x target.Sample) bool { return x.Count == 1 && x.Ready >= 1 }); err != nil {
		return err
	}
	// waitServed: a probe call every 250 ms until the edge routes one.
	for range 120 {
		if s.z.routable() {
			return nil
		}
		s.pause(250 * time.Millisecond)
	}
	return fmt.Errorf("waited 30s for a first ok call through the edge to %s", s.zname)
}

// applyHPA sets the zone's hpa policy to the harness's settings (through
// the console API's shape) and starts recording its signal.
func (s *scope) applyHPA(maxCount int) error {
	sim := s.sim
	spec := sim.cfg.HPA.Spec(maxCount)
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	var hs controller.HPASpec
	if err := json.Unmarshal(b, &hs); err != nil {
		return err
	}
	if _, err := sim.c.SetPolicy(actorAdmin, sim.cfg.Group, s.zname, controller.PolicySpec{Policy: controller.PolicyHPA, HPA: &hs}); err != nil {
		return fmt.Errorf("set zone %s policy hpa: %w", s.zname, err)
	}
	s.recordSignal()
	return nil
}

// recordSignal starts the zone's signal (the edge's in-flight summary) and
// Prometheus's scrapes of it every ScrapeInterval while the scenario runs.
func (s *scope) recordSignal() {
	sim := s.sim
	s.z.signal = newSignal(sim.cfg.HPA.InflightMaxAge, sim.cfg.HPA.Window)
	var scrape func()
	scrape = func() {
		if !s.sampling {
			return
		}
		s.z.signal.scrape(sim.l.since())
		sim.l.after(sim.cfg.HPA.ScrapeInterval, scrape)
	}
	sim.l.after(0, scrape)
}

// wait blocks until the load has ended.
func (r *loadRun) wait() {
	if r.ended {
		return
	}
	r.s.block(func(wake func()) { r.onEnd(wake) })
}

// runOne runs one scenario on a fresh zone and writes its records.
func (s *Sim) runOne(sc scenarios.Scenario) (reports.Verdict, Outcome) {
	sp := &scope{sim: s, name: sc.Name, zname: sc.Name + "-sim", start: s.l.since()}
	if s.cfg.OneZone {
		sp.zname = oneZoneName
	}
	sp.co = s.main
	sp.verdict = reports.Verdict{Scenario: sc.Name, UpToMaxS: -1, ReadyMaxS: -1, BackTo1S: -1}
	s.write(reports.KindScenario, reports.ScenarioStart{Scenario: sc.Name, Title: sc.TitleUnder(s.cfg.Profile), Zone: sp.zname, Started: s.l.Now()})
	err := sc.Flow(s.ctx, world{sp})
	v := sp.finish(err)
	s.write(reports.KindVerdict, v)
	o := Outcome{Scenario: sc.Name, StartS: round1((sp.start - s.runStart).Seconds()), UpToMaxS: v.UpToMaxS, ReadyMaxS: v.ReadyMaxS,
		BackTo1S: v.BackTo1S, PeakCount: v.PeakCount, Calls: v.Calls, Passed: v.Passed}
	for i := 1; i < len(sp.samples); i++ {
		o.ReplicaS += float64(sp.samples[i-1].Count) * sp.samples[i].At.Sub(sp.samples[i-1].At).Seconds()
	}
	o.ReplicaS = round1(o.ReplicaS)
	return v, o
}

// finish stops sampling and loads, adds the run-wide facts, writes the
// per-second records and scale events, and returns the verdict.
func (s *scope) finish(runErr error) reports.Verdict {
	for _, l := range s.loads {
		l.stop()
		l.wait()
	}
	s.sampling = false
	end := s.sim.l.since()
	v := s.verdict
	v.DurationS = s.since(end)
	for _, l := range s.loads {
		v.Calls.Add(l.calls)
		v.P95ms = math.Max(v.P95ms, quantile(l.lat, 0.95))
		for _, sec := range l.secondRecords(s.samples) {
			s.sim.write(reports.KindSecond, sec)
		}
	}
	v.PeakCount = max(v.PeakCount, scenarios.PeakCount(s.samples))
	for _, ev := range s.scaleEvents() {
		s.sim.write(reports.KindEvent, ev)
	}
	if f, rec, ok := scenarios.TimeAtMax(s.name, s.zname, s.samples); ok {
		s.record(f)
		s.sim.write(scenarios.KindAtMax, rec)
	}
	if sib := s.sibling; sib != nil {
		s.record(scenarios.FactSiblingUnmoved(sib.zone, sib.before, world{s}.snapshotOf(sib.zone)))
	}
	if len(s.loads) > 0 {
		s.record(scenarios.FactNoFiveXX(v.Calls, nil)) // the model keeps no reasons
	}
	v.Facts = slices.Clone(s.facts)
	return scenarios.Decide(v, runErr)
}

// scaleEvents derives the scale events from consecutive samples by the
// harness's own rule (reports.ScaleEvents).
func (s *scope) scaleEvents() []reports.ScaleEvent {
	var okSeconds []float64
	for _, l := range s.loads {
		first := int(math.Floor((l.t0 - s.start).Seconds()))
		for i := max(first, 0); i < len(l.seconds); i++ {
			if l.seconds[i].calls.OK > 0 {
				okSeconds = append(okSeconds, float64(i))
			}
		}
	}
	slices.Sort(okSeconds)
	return reports.ScaleEvents(s.name, scenarios.CountSamples(s.samples, s.sinceAt), okSeconds)
}

// audit reads zone's audit entries from the state store: the newest 1000,
// newest first.
func (s *Sim) audit(zone string) ([]consoleclient.AuditEntry, error) {
	entries, err := s.st.Audit(store.AuditQuery{Group: s.cfg.Group, Zone: zone, Limit: 1000})
	out := make([]consoleclient.AuditEntry, len(entries))
	for i, e := range entries {
		out[i] = consoleclient.AuditEntry(e)
	}
	return out, err
}
