package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// simulates reports whether the simulator runs sc: a scenario written as a
// Flow runs on the model as it does on a platform.
func simulates(sc scenarios.Scenario) bool { return sc.Flow != nil }

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

// world is the simulator's scenarios.World: a catalogue scenario's Flow
// runs on the model in virtual time, blocking the scenario's coroutine
// where a platform run would wait. The contexts are the run's (Sim.ctx):
// a wait ends on virtual time, never on a context.
type world struct{ s *scope }

var _ scenarios.World = world{}

func (w world) Profile() scenarios.Profile { return w.s.profile() }
func (w world) Phase(string)               {}
func (w world) CreateZone(_ context.Context, max int) error {
	return w.s.createZone(max)
}
func (w world) LoadProfile(_ context.Context, lp load.Profile) scenarios.WorldLoad {
	return worldLoad{w.s.startLoad(lp)}
}
func (w world) WaitFor(_ context.Context, what string, timeout time.Duration, cond func(target.Sample) bool) (target.Sample, error) {
	return w.s.waitFor(what, timeout, cond)
}
func (w world) Pause(_ context.Context, d time.Duration) error { w.s.pause(d); return nil }
func (w world) Samples() []target.Sample                       { return slices.Clone(w.s.samples) }
func (w world) Check(name string, ok bool, format string, args ...any) bool {
	return w.s.check(name, ok, format, args...)
}
func (w world) Since(t time.Time) float64 { return w.s.sinceAt(t) }
func (w world) Now() time.Time            { return w.s.sim.l.Now() }
func (w world) Times() *reports.Verdict   { return &w.s.verdict }
func (w world) Canary() bool              { return w.s.sim.cfg.Model.Canary > 0 }
func (w world) CanariesInReady() int      { return w.s.sim.cfg.Model.Canary } // discovery lists the canaries as workers (Model.Canary)

// noKeys is why a role's fact is not judged on the model.
const noKeys = "the model has no API keys: a role's refusal is judged on a platform"

// Contract is the model's: the console's zone's (scenarios.ZoneContracts
// under the model's policy and step settings: its StepConfig's cooldowns
// and low rounds, the profile's scheduler interval and max), but a
// viewer's refusal (noKeys); a fact the console declares nothing of
// applies with bound 0, as on the console.
func (w world) Contract(f target.Fact) target.Contract {
	if f == target.FactViewerRefused {
		return target.Contract{NotApplicable: noKeys}
	}
	cfg := w.s.sim.cfg
	zone := target.ConsoleSettings{UpCooldown: cfg.Step.UpCooldown, DownCooldown: cfg.Step.DownCooldown,
		Interval: cfg.Profile.SchedulerInterval, LowRounds: cfg.Step.LowRounds, Max: cfg.Profile.Max}
	if c, ok := scenarios.ZoneContracts(cfg.Policy, zone)[f]; ok {
		return c
	}
	return target.Contract{Applies: true}
}

// Applies reports the Contract's Applies, and records a fact that does not
// apply with its reason, as a platform run does.
func (w world) Applies(f target.Fact) bool {
	c := w.Contract(f)
	if !c.Applies {
		w.NotApplicable(string(f), c.NotApplicable)
	}
	return c.Applies
}

// NotApplicable records fact name not applicable, with why.
func (w world) NotApplicable(name, why string) {
	w.s.record(reports.Fact{Name: name, NotApplicable: why})
}

// ConsoleAPI is true: the model answers the console's API.
func (w world) ConsoleAPI() bool { return true }

// LowerMax is the group admin's change of the zone's max on the model.
func (w world) LowerMax(_ context.Context, to int) (string, error) {
	sim := w.s.sim
	if _, err := sim.c.Apply(sim.ctx, actorAdmin, sim.cfg.Group, w.s.zname, controller.Change{MaxCount: &to}); err != nil {
		return "", err
	}
	return "applied", nil
}

// AuditTrail is the zone's entries in the model's store.
func (w world) AuditTrail(context.Context) ([]consoleclient.AuditEntry, error) {
	return w.s.sim.audit(w.s.zname)
}

// SampleNow reads the zone at this virtual instant; unlike a platform's
// sampler it records no sample, so the model's samples stay on the
// sampling interval.
func (w world) SampleNow(context.Context) target.Sample { return w.s.readZone() }

// WatchGroup creates the group's other zone as the console's run does
// (the scenario zone's name + scenarios.SiblingSuffix, count 1, max the
// profile's + 1, no load), a model zone with workers of its own whose
// draws come from a stream apart from the scenario zones', and reads it;
// the scenario's end judges that it did not move
// (scenarios.FactSiblingUnmoved).
func (w world) WatchGroup(context.Context) error {
	s, sim := w.s, w.s.sim
	name := s.zname + scenarios.SiblingSuffix
	if sim.pf.zone(sim.cfg.Group, name) == nil {
		sim.addZone(name, siblingStreams+uint64(sim.nzones))
	}
	one, max := 1, s.profile().Max+1
	if _, err := sim.c.Apply(sim.ctx, actorAdmin, sim.cfg.Group, name, controller.Change{Count: &one, MaxCount: &max}); err != nil {
		return fmt.Errorf("create the group's other zone %s/%s with count 1, max %d: %w", sim.cfg.Group, name, max, err)
	}
	before := w.snapshotOf(name)
	if before.Err != "" {
		return fmt.Errorf("read the group's other zone %s/%s after creating it: %s", sim.cfg.Group, name, before.Err)
	}
	s.sibling = &sibling{zone: name, before: before}
	return nil
}

// sibling is the group's other zone a scenario watches, as read right
// after its creation.
type sibling struct {
	zone   string
	before scenarios.ZoneSnapshot
}

// Snapshot is the zone's count and max in the controller and its entries
// in the model's store.
func (w world) Snapshot(context.Context) scenarios.ZoneSnapshot { return w.snapshotOf(w.s.zname) }

func (w world) snapshotOf(zone string) scenarios.ZoneSnapshot {
	sim := w.s.sim
	v, err := sim.c.Zone(sim.cfg.Group, zone)
	if err != nil {
		return scenarios.ZoneSnapshot{Err: err.Error()}
	}
	out := scenarios.ZoneSnapshot{Count: v.Count, Max: v.MaxCount}
	if out.Audit, err = sim.audit(zone); err != nil {
		out.Err = "audit: " + err.Error()
	}
	return out
}

// The HTTP statuses the console's API answers a change with
// (autoscaler/console/server.go, Server.fail); the model sends no traffic,
// so it names them here rather than importing net/http.
const (
	statusOK                  = 200
	statusUnprocessableEntity = 422
)

// PutBounds is the group admin's change on the model's controller, answered
// as the console's API answers it: 422 for a *controller.ValidationError
// (a value out of its range), 200 for an applied change, and any other
// error as the error. Another role is an error (noKeys).
func (w world) PutBounds(_ context.Context, role target.Role, u consoleclient.Update) (target.Outcome, error) {
	if role != target.Admin {
		return target.Outcome{}, fmt.Errorf("a change as %s: %s", role, noKeys)
	}
	sim := w.s.sim
	_, err := sim.c.Apply(sim.ctx, actorAdmin, sim.cfg.Group, w.s.zname, controller.Change{MaxCount: u.MaxCount, Count: u.Count})
	var invalid *controller.ValidationError
	switch {
	case errors.As(err, &invalid):
		return target.Outcome{Status: statusUnprocessableEntity, Message: invalid.Error()}, nil
	case err != nil:
		return target.Outcome{}, err
	}
	return target.Outcome{Status: statusOK}, nil
}

// Trail is the zone's changes of count in the model's store since the
// scenario's start, as the console's Trail reads its audit.
func (w world) Trail(context.Context) ([]target.Change, error) {
	es, err := w.s.sim.audit(w.s.zname)
	if err != nil {
		return nil, err
	}
	return target.AuditTrail(es, Epoch.Add(w.s.start)), nil
}

// Admin is the model's group admin.
func (w world) Admin() string { return actorAdmin }

// TryOtherRoles sends nothing: the model has no API keys, so roles are
// judged on a platform only. It takes the second the platform's dozen calls
// take, so that the zone is read apart.
func (w world) TryOtherRoles(context.Context) { w.s.pause(time.Second) }

// CheckRefusalsAudited checks nothing: the model has no actors but the
// admin.
func (w world) CheckRefusalsAudited(context.Context) {}

// WatchSignal records the zone's signal for the same spike facts as a
// platform run. An hpa zone's query rounds come from the model's
// controller (its policy status, read at every sample as a platform run
// polls the console's; scenarios.JudgeRounds). A step zone's signal is the
// harness's own reading of the hpa settings' query at every sample, as a
// platform run reads it on Prometheus (scenarios.JudgeReadings); its edge
// summary and scrapes start here, with the load.
func (w world) WatchSignal(context.Context) (scenarios.Signal, error) {
	s := w.s
	g := &modelSignal{w: w, from: s.sim.l.Now()}
	if s.sim.cfg.Policy != scenarios.PolicyHPA {
		g.query = scenarios.ExpandQuery(s.sim.cfg.HPA.Query, s.sim.cfg.Group, s.zname)
		if s.z.signal == nil {
			s.recordSignal()
		}
	}
	s.rounds = g
	g.poll()
	return g, nil
}

// modelSignal keeps every query round the model's controller reports for
// the zone, oldest first (the controller keeps the last
// controller.MaxPolicyRounds; a poll every sample never misses one).
type modelSignal struct {
	w        world
	from     time.Time
	rounds   []controller.PolicyRound
	polls    int
	failed   int
	stopped  bool
	query    string                  // a step zone's: read every sample into readings
	readings []scenarios.SignalPoint // a step zone's
}

// poll reads a step zone's signal, or an hpa zone's policy status and
// keeps its new rounds.
func (g *modelSignal) poll() {
	if g.stopped {
		return
	}
	sim := g.w.s.sim
	if g.query != "" {
		g.readings = append(g.readings, g.read())
		return
	}
	v, err := sim.c.Policy(sim.cfg.Group, g.w.s.zname)
	g.polls++
	if err != nil {
		g.failed++
		return
	}
	if v.Status != nil {
		g.rounds = append(g.rounds, scenarios.NewRounds(g.rounds, v.Status.Rounds)...)
	}
}

func (g *modelSignal) Stop() {
	g.poll()
	g.stopped = true
}

// read is the query's reading now, as the harness reads it on Prometheus
// (scenarios.SumSeries with the hpa settings' ReadEmptyAsZero).
func (g *modelSignal) read() scenarios.SignalPoint {
	sim := g.w.s.sim
	v, err := scenarios.SumSeries(g.w.s.z.signal.query(sim.l.since()), sim.cfg.HPA.ReadEmptyAsZero)
	return scenarios.SignalPoint{At: sim.l.Now(), Value: v, OK: err == nil}
}

func (g *modelSignal) Judge(ctx context.Context) {
	g.Stop()
	sim := g.w.s.sim
	v, err := sim.c.Policy(sim.cfg.Group, g.w.s.zname)
	if err != nil {
		g.w.Check("the zone's policy is readable (signal facts)", false, "%v", err)
		return
	}
	if g.query != "" {
		scenarios.JudgeReadings(g.w, v, g.from, g.readings, g.query)
		return
	}
	scenarios.JudgeRounds(ctx, g.w, v, g.from, Epoch.Add(g.w.s.start), g.rounds, g.polls, g.failed)
}

// worldLoad is a model load as a scenarios.WorldLoad.
type worldLoad struct{ r *loadRun }

func (l worldLoad) Stop()                { l.r.stop() }
func (l worldLoad) Wait()                { l.r.wait() }
func (l worldLoad) Err() error           { return nil }
func (l worldLoad) Done() bool           { return l.r.ended }
func (l worldLoad) Calls() reports.Calls { return l.r.calls }
func (l worldLoad) Start() time.Time     { return Epoch.Add(l.r.t0) }
