package sim

import (
	"context"
	"slices"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

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
func (w world) LoadFor(_ context.Context, d time.Duration) scenarios.WorldLoad {
	return worldLoad{w.s.load(d)}
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
func (w world) Times() *reports.Verdict   { return &w.s.verdict }
func (w world) Canary() bool              { return w.s.sim.cfg.Model.Canary > 0 }
func (w world) CanariesInReady() int      { return w.s.sim.cfg.Model.Canary } // discovery lists the canaries as workers (Model.Canary)

// worldLoad is a model load as a scenarios.WorldLoad.
type worldLoad struct{ r *loadRun }

func (l worldLoad) Stop()                { l.r.stop() }
func (l worldLoad) Wait()                { l.r.wait() }
func (l worldLoad) Err() error           { return nil }
func (l worldLoad) Calls() reports.Calls { return l.r.calls }
