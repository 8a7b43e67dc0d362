package scenarios

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// World is where a catalogue scenario's steps run: the console on a
// platform (*Scope) or the simulator's model of it (package sim, in
// virtual time). A scenario's Flow is written once against it, so
// `scaleproof sim` takes the same steps and judges the same facts, with the
// same bounds, as `scaleproof run`; what only a platform offers (API keys
// and roles, the workers' own /metrics) the scenario's Run adds around its
// Flow.
type World interface {
	// Profile is the run's profile.
	Profile() Profile
	// Phase names what the scenario does now (progress and logs; the
	// simulator ignores it).
	Phase(p string)
	// CreateZone creates the scenario's zone with count 1 and max max,
	// starts sampling it every SampleInterval, and returns once its first
	// worker is ready and a call through the edge is served.
	CreateZone(ctx context.Context, max int) error
	// LoadProfile starts load profile lp (the profile's work a call)
	// against the zone.
	LoadProfile(ctx context.Context, lp load.Profile) WorldLoad
	// WatchSignal starts recording what the zone's autoscaler scales on:
	// an hpa zone's query rounds as its console reports them, a step
	// zone's query as the harness reads it (on a platform from the run's
	// Prometheus, on the model from its edge summary and scrapes).
	WatchSignal(ctx context.Context) (Signal, error)
	// WaitFor waits until a good sample taken from now on satisfies cond,
	// at most timeout; the error names what was awaited and the last
	// sample.
	WaitFor(ctx context.Context, what string, timeout time.Duration, cond func(target.Sample) bool) (target.Sample, error)
	// Pause holds the scenario for d (a phase's length, never a
	// synchronisation); an error means the run was stopped.
	Pause(ctx context.Context, d time.Duration) error
	// SampleNow reads the zone now (on the model: its state at this
	// virtual instant).
	SampleNow(ctx context.Context) target.Sample
	// Samples are the zone's samples so far, oldest first.
	Samples() []target.Sample
	// Check records a fact and returns ok.
	Check(name string, ok bool, format string, args ...any) bool
	// Since is seconds from the scenario's start to t (0.1 s resolution).
	Since(t time.Time) float64
	// Now is the world's time now (the run's clock; the model's virtual
	// time), comparable with its samples' At.
	Now() time.Time
	// Times is the scenario's verdict so far: the steps set its
	// time-to-scale fields (UpToMaxS, ReadyMaxS, BackTo1S, seconds from
	// the scenario's start; -1 when not reached).
	Times() *reports.Verdict
	// Canary reports whether a canary worker serves beside the zone's
	// count (platform.Endpoints.Canary; the model's Canary > 0).
	Canary() bool
	// LowerMax sets the zone's max to to as the group admin (on the
	// console a PUT max_count, recorded for the in-request fact; on the
	// model the controller's change) and returns the answer ("HTTP 200",
	// "applied"); an error names the answer that was not a success.
	LowerMax(ctx context.Context, to int) (answer string, err error)
	// AuditTrail reads the zone's audit trail, oldest first.
	AuditTrail(ctx context.Context) ([]consoleclient.AuditEntry, error)
	// WatchGroup starts watching the group's other zone, so that a bound
	// changed on this zone and leaking to it shows when the scenario ends
	// (on the console, ensureSibling and the zone-isolation fact; the
	// model has one zone a scenario and does nothing).
	WatchGroup(ctx context.Context) error
	// Snapshot reads the zone's count, max and audit trail (on the
	// console as the super admin); Err names a read that failed.
	Snapshot(ctx context.Context) ZoneSnapshot
	// PutBounds changes the zone's max and/or count in role's name and
	// returns the answer: the console API's HTTP status (on the model, the
	// status the console answers for the controller's result: 200 applied,
	// 422 a *controller.ValidationError), a target's (target.Target's
	// SetBounds then SetCount: the last one's, with the API's message);
	// err is a call that got no answer, or a role the world has no key for
	// (the model has none but the admin's).
	PutBounds(ctx context.Context, role target.Role, u consoleclient.Update) (target.Outcome, error)
	// Trail is the zone's trail of changes of count since the scenario's
	// start, oldest first, each with its actor (the console's audit as
	// target.Target's Trail reads it; a target's own trail; the model's
	// store).
	Trail(ctx context.Context) ([]target.Change, error)
	// Admin is the group admin's actor name in the audit trail.
	Admin() string
	// TryOtherRoles sends the changes and reads each role but the group
	// admin's must be refused (the viewer's and the MCP user's changes and
	// admin-only reads, an admin's count 0) and checks each answer (the
	// console's API keys; the model has none).
	TryOtherRoles(ctx context.Context)
	// CheckRefusalsAudited checks that the audit trail names each refused
	// actor with its error tag (the console's; the model has no actors).
	CheckRefusalsAudited(ctx context.Context)
	// Contract is the world's contract for fact f: a target's as it
	// declares it (target.Contracts); on the console every fact applies,
	// with bound 0 and no text, and on its model too but a viewer's
	// refusal (it has no API keys).
	Contract(f target.Fact) target.Contract
	// Applies reports whether the world promises f; when it does not, f
	// is recorded not applicable with the world's reason.
	Applies(f target.Fact) bool
	// NotApplicable records fact name not applicable with why: a fact the
	// world promises that the scenario leaves unjudged there.
	NotApplicable(name, why string)
	// ConsoleAPI reports whether the world answers the console's own API
	// (its keys and roles, the bounds probes, the audit trail, the group's
	// other zone): the console on a platform and its model do; a
	// target (the cluster's HPA, KEDA, the console judged as a target)
	// offers only target.Target.
	ConsoleAPI() bool
	// CanariesInReady is how many canary workers a sample's Ready counts:
	// none on the console (its zone's ready count leaves the canary out),
	// every canary in the simulator's model (its discovery lists them as
	// workers).
	CanariesInReady() int
}

// WorldLoad is a load a World started.
type WorldLoad interface {
	// Stop ends the load now (calls in flight get the gracefulStop); Wait
	// waits for its end.
	Stop()
	Wait()
	// Done reports whether the load has ended.
	Done() bool
	// Err is the load engine's error (nil in the simulator).
	Err() error
	// Start is when the load's first VU started: a sharded load's agreed
	// start (its pods begin together, a lead after the call), the
	// engine's start in this process, the model's virtual time; zero
	// before it has.
	Start() time.Time
	// Calls counts the answers by class.
	Calls() reports.Calls
}

// loadFor starts the profile's constant VUs (its VUs, think time and
// gracefulStop) on w for at most d.
func loadFor(ctx context.Context, w World, d time.Duration) WorldLoad {
	return w.LoadProfile(ctx, constantVUs(w.Profile(), d))
}

// constantVUs is p's VUs for d, with its think time and gracefulStop.
func constantVUs(p Profile, d time.Duration) load.Profile {
	lp := load.ConstantVUs(p.VUs, d)
	lp.GracefulStop, lp.ThinkTime = p.GracefulStop, p.ThinkTime
	return lp
}

// record adds fact f, judged elsewhere (a Fact… function), to w.
func record(w World, f reports.Fact) bool { return w.Check(f.Name, f.Passed, "%s", f.Detail) }

// The console's Scope is a World.

// Profile is the run's profile (Env.Profile).
func (s *Scope) Profile() Profile { return s.env.Profile }

// LoadProfile is loadProfile, or a target run's startLoad (World).
func (s *Scope) LoadProfile(ctx context.Context, lp load.Profile) WorldLoad {
	if s.env.Target != nil {
		return s.startLoad(ctx, lp)
	}
	return s.loadProfile(ctx, lp)
}

// Times is the scope's verdict so far (World).
func (s *Scope) Times() *reports.Verdict { return &s.verdict }

// Canary is platform.Endpoints.Canary (World).
func (s *Scope) Canary() bool { return s.env.Endpoints.Canary }

// CanariesInReady is 0: the console's zone ready count leaves the canary
// out (World).
func (s *Scope) CanariesInReady() int { return 0 }

// ConsoleAPI reports a console run, not a target's (World).
func (s *Scope) ConsoleAPI() bool { return s.env.Target == nil }

// LowerMax is lowerMax, or a target's PutBounds, its answer as text
// (World).
func (s *Scope) LowerMax(ctx context.Context, to int) (string, error) {
	if s.env.Target != nil {
		o, err := s.setTargetMax(ctx, target.Admin, to)
		if err != nil {
			return "", err
		}
		if !o.Accepted() {
			return "", errors.New(outcome(o))
		}
		return outcome(o), nil
	}
	st, err := s.lowerMax(ctx, to)
	if err != nil || st != http.StatusOK {
		return "", errors.New(httpDetail(st, err))
	}
	return httpDetail(st, nil), nil
}

// WatchGroup is ensureSibling; a target has no group (World).
func (s *Scope) WatchGroup(ctx context.Context) error {
	if s.env.Target != nil {
		return nil
	}
	return s.ensureSibling(ctx)
}

// SampleNow is the sampler's SampleNow, or a target's reading (World).
func (s *Scope) SampleNow(ctx context.Context) target.Sample {
	if s.env.Target != nil {
		return s.sample(ctx)
	}
	return s.sampler.SampleNow(ctx)
}

// Snapshot is snapshot of the scenario's zone (World).
func (s *Scope) Snapshot(ctx context.Context) ZoneSnapshot { return s.snapshot(ctx, s.Zone) }

// PutBounds is a PUT of the zone with role's key (the group admin's, the
// viewer's); on a target, role's Target.SetBounds (the max, the min as the
// target reads it now) then SetCount, the answer the last one's (World).
func (s *Scope) PutBounds(ctx context.Context, role target.Role, u consoleclient.Update) (target.Outcome, error) {
	t := s.env.Target
	if t == nil {
		key, err := target.ConsoleKey(s.env.Endpoints.Keys, role)
		if err != nil {
			return target.Outcome{}, err
		}
		st, err := s.env.Console.PutZone(ctx, key, s.env.Endpoints.Group, s.Zone, u)
		return target.Outcome{Status: st}, err
	}
	var o target.Outcome
	if u.MaxCount != nil {
		var err error
		if o, err = s.setTargetMax(ctx, role, *u.MaxCount); err != nil || !o.Accepted() {
			return o, err
		}
	}
	if u.Count != nil {
		var err error
		if o, err = t.SetCount(ctx, role, *u.Count); err != nil {
			return o, fmt.Errorf("%s SetCount: %w", role, err)
		}
	}
	return o, nil
}

// Trail is the zone's changes of count since the scenario's start: the
// console's audit read as target.Target's Trail reads it, or the target's
// own (World).
func (s *Scope) Trail(ctx context.Context) ([]target.Change, error) {
	t := s.env.Target
	if t == nil {
		e := s.env
		t = target.NewConsole(e.Console, e.Endpoints.Keys, e.Endpoints.Group, s.Zone)
	}
	return t.Trail(ctx, s.Start)
}

// setTargetMax is role's Target.SetBounds of max to, with the min as the
// target reads it now (SetBounds takes both). An error is a read or a
// change that got no answer; a refusal is the Outcome.
func (s *Scope) setTargetMax(ctx context.Context, role target.Role, to int) (target.Outcome, error) {
	st, err := s.env.Target.State(ctx)
	if err != nil {
		return target.Outcome{}, fmt.Errorf("reading the target: %w", err)
	}
	o, err := s.env.Target.SetBounds(ctx, role, st.Min, to)
	if err != nil {
		return o, fmt.Errorf("%s SetBounds: %w", role, err)
	}
	return o, nil
}

// Admin is the group admin key's name (World).
func (s *Scope) Admin() string { return s.env.Endpoints.Keys.GroupAdmin.Name }

// outcome renders a target's answer for a fact: "HTTP 403", plus the
// API's own words when it gave them.
func outcome(o target.Outcome) string {
	if o.Message != "" {
		return fmt.Sprintf("HTTP %d (%s)", o.Status, o.Message)
	}
	return fmt.Sprintf("HTTP %d", o.Status)
}
