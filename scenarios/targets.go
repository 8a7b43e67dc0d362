package scenarios

// The target scenarios judge an autoscaler that is not the reference
// console's (the cluster's HorizontalPodAutoscaler, KEDA) through the small
// interface of scenarios/target: they read the scale target's count, ready
// replicas, desiredReplicas and bounds every sample, change the bounds and
// the count in a role's name, read the trail of changes, and judge each
// fact on the contract the target declares for it (target.Contracts): the
// contract's text goes beside the fact, and a fact the target does not
// promise is reported not applicable with the target's reason, never
// silently passed.
//
//	viewer-refused      viewer refused, a count set by hand (kept or put back), the trail names the actor
//	sustained           load until the count reaches 3: scales up within the bound, count within min and max, every change in the trail
//	max-lowered         at 3 under load an admin lowers max to 1: applies within the bound; admin allowed and puts it back
//	spike               the k6 stages of Grafana's post: up, within bounds, no early scale-down, back to min; the timeline
//	outage              a frozen worker at count 2 never scales in (where the platform can freeze one)
//
// Every wait goes through the scope's sampler, which reads the target and
// the load's in-flight every sample interval on the env's clock and writes
// a "timeline" record, so a test drives a whole scenario on a fake clock.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// TargetQuick is the profile for kind in CI: the controller syncs every
// 15 s, the metric's resolution is 15 s and the scale-down stabilization
// window 60 s (the kind overlay's settings); each scenario takes at most
// about 3 minutes: the spike's stages at 1/5 (90 s of load). 12 VUs of
// 200 ms calls, not the published 64: on a 2-core kind node the worker
// workload's CPU cost (50 m a call in flight) then asks for 6 pods, its
// max, and the queue workload's for 3 queriers at the post's threshold of
// 4 in flight, while the node keeps its own control plane served. Max is
// the count max-lowered's load must reach before the max is lowered (the
// target's own max is the target's).
func TargetQuick() Profile {
	return Profile{
		Name: "quick", Max: targetLoadedCount, SyncPeriod: 15 * time.Second, MetricResolution: 15 * time.Second, Stabilization: 60 * time.Second,
		VUs: 12, WorkMS: 200, GracefulStop: 5 * time.Second, SampleInterval: time.Second,
		SustainHold: 30 * time.Second, LoweredHold: 20 * time.Second, CountHold: 20 * time.Second,
		UpTimeout: 90 * time.Second, SettleTimeout: 2 * time.Minute, SpikeScale: 0.2, SpikeVUScale: 0.2, OutageHold: 60 * time.Second,
	}
}

// TargetPublished is the upstream defaults: sync period 15 s, metrics-server
// resolution 60 s, the default scale-down stabilization window of 300 s,
// and the post's k6 stages at full length.
func TargetPublished() Profile {
	return Profile{
		Name: "published", Max: targetLoadedCount, SyncPeriod: 15 * time.Second, MetricResolution: 60 * time.Second, Stabilization: 300 * time.Second,
		VUs: 64, WorkMS: 200, GracefulStop: 30 * time.Second, SampleInterval: time.Second,
		SustainHold: 120 * time.Second, LoweredHold: 60 * time.Second, CountHold: 60 * time.Second,
		UpTimeout: 5 * time.Minute, SettleTimeout: 10 * time.Minute, SpikeScale: 1, OutageHold: 6 * time.Minute,
	}
}

// targetLoadedCount is the count a target scenario's load must reach
// (Profile.Max of a target run): the queue workload's 3 queriers under the
// kind profile's load.
const targetLoadedCount = 3

// TargetProfileByName is quick or published.
func TargetProfileByName(name string) (Profile, error) {
	switch name {
	case "quick":
		return TargetQuick(), nil
	case "published":
		return TargetPublished(), nil
	}
	return Profile{}, fmt.Errorf("profile %q: a target run has the profiles quick and published", name)
}

// TargetSettings renders a target run's profile for the results file (the
// keys a target run has always written; Settings is the console run's).
func (p Profile) TargetSettings() map[string]string {
	return map[string]string{
		"sync_period": p.SyncPeriod.String(), "metric_resolution": p.MetricResolution.String(),
		"stabilization": p.Stabilization.String(), "vus": fmt.Sprint(p.VUs), "work_ms": fmt.Sprint(p.WorkMS),
		"sample_interval": p.SampleInterval.String(), "spike_scale": fmt.Sprint(p.SpikeScale), "spike_vu_scale": fmt.Sprint(p.SpikeVUScale),
	}
}

// TargetLoad is one load of a target scenario, as the scenarios see it: a
// WorldLoad (Stop, Wait, Err, Calls) that also shows what it does now and
// what it did per second.
type TargetLoad interface {
	WorldLoad
	// InFlight is the calls started and not yet answered now; VUs the
	// VUs alive now.
	InFlight() int64
	VUs() int
	// Done reports whether the load has ended.
	Done() bool
	// Seconds are its per-second buckets for the results, T from start;
	// P95ms its 95th-percentile latency in milliseconds.
	Seconds(scenario string, start time.Time) []reports.Second
	P95ms() float64
}

// LoadStarter starts a load with profile lp.
type LoadStarter func(ctx context.Context, lp load.Profile) TargetLoad

// NewTargetEnv builds the env of a target run (Env.Target set) against
// ref's load URL.
func NewTargetEnv(t target.Target, ref *platform.TargetRef, p Profile, w *reports.Writer, log *slog.Logger) *Env {
	if log == nil {
		log = slog.Default()
	}
	e := &Env{Target: t, Profile: p, Results: w, Log: log, HTTP: loadClient()}
	if ref != nil {
		e.LoadURL, e.Namespace, e.Deployment = ref.LoadURL, ref.Namespace, ref.Deployment
	}
	return e
}

// ConsoleTarget makes the zone the target scenarios judge on the console
// of the env (a console Env, NewEnv; its profile is the console's): it turns
// the auto-rebalance scheduler on at the profile's interval (as Run does),
// creates zone targets-<RunTag> of the group with count 1 and the profile's
// max, takes the step policy's settings from the console
// (contractSettings: GET /api/v1/config/autoscale, else the profile's),
// and waits (at most 30 s + twice the boot delay) until the zone answers a
// call through the edge (WaitServed). The ref addresses the zone's workers
// for the fault actions as namespace = the group, deployment = the zone,
// and sends the load to {EdgeURL}/g/{group}/z/{zone}. say reports the
// zone and its settings.
func (e *Env) ConsoleTarget(ctx context.Context, say func(string, ...any)) (target.Target, *platform.TargetRef, target.ConsoleSettings, error) {
	var no target.ConsoleSettings
	if err := e.enableAutorebalance(ctx); err != nil {
		return nil, nil, no, err
	}
	zone, group, maxCount := "targets-"+e.RunTag, e.Endpoints.Group, e.Profile.Max
	if err := e.createZone(ctx, zone, maxCount); err != nil {
		return nil, nil, no, err
	}
	cs := e.contractSettings(ctx)
	s := target.ConsoleSettings{UpCooldown: cs.UpCooldown, DownCooldown: cs.DownCooldown, Interval: cs.Interval, LowRounds: cs.LowRounds, Max: maxCount}
	say("console zone %s/%s, max %d: scheduler every %s, cooldowns up %s / down %s, %d low rounds (from %s)",
		group, zone, maxCount, s.Interval, s.UpCooldown, s.DownCooldown, s.LowRounds, cs.Source)
	t := target.NewConsoleWith(e.Console, e.Endpoints.Keys, group, zone, s)
	ref := &platform.TargetRef{Kind: string(target.Console), Workload: "worker", Namespace: group, Deployment: zone,
		LoadURL: strings.TrimRight(e.Endpoints.EdgeURL, "/") + "/g/" + group + "/z/" + zone}
	if err := WaitServed(ctx, &http.Client{Timeout: 5 * time.Second}, ref.LoadURL+"/mcp", 30*time.Second+2*e.Profile.BootDelay); err != nil {
		return nil, nil, no, fmt.Errorf("zone %s/%s: %w", group, zone, err)
	}
	return t, ref, s, nil
}

// TargetScenarios returns the target scenarios in run order:
// viewer-refused first (it changes nothing under load), the spike last.
func TargetScenarios() []Scenario {
	return []Scenario{ViewerRefused(), Sustained(), MaxLowered(), Spike(), Outage()}
}

// SelectTargets returns the target scenarios named (all when names is
// empty); an unknown name is an error listing the known ones.
func SelectTargets(names []string) ([]Scenario, error) {
	if len(names) == 0 {
		return TargetScenarios(), nil
	}
	return selectNamed(TargetScenarios(), func(s Scenario) string { return s.Name }, names, "", nil, ", or targets for all of them")
}

// runTargets is Run on a target (Env.Target): a target whose contracts are
// incomplete is judged on nothing: every verdict carries the error.
func (e *Env) runTargets(ctx context.Context, list []Scenario) []reports.Verdict {
	var out []reports.Verdict
	if err := e.Target.Contracts().Check(); err != nil {
		for _, sc := range list {
			v := reports.Verdict{Scenario: sc.Name, Error: "the target's contracts: " + err.Error()}
			e.write(reports.KindVerdict, v)
			out = append(out, v)
		}
		return out
	}
	for _, sc := range list {
		if ctx.Err() != nil {
			break
		}
		out = append(out, e.RunOne(ctx, sc))
	}
	return out
}

// Contract is the target's contract for f (a missing one is not
// applicable: Contracts.Check has refused such a target before the run).
// On the console's own zone it is ZoneContracts' under the zone's policy
// (every fact applies, with bound 0, before Run has read the settings, and
// for a fact the console declares nothing of); Check leaves its text off
// the console's own facts, which its scenarios name by the console's rules
// (World).
func (s *Scope) Contract(f target.Fact) target.Contract {
	if s.env.Target == nil {
		zs, read := s.env.zoneSettings()
		if !read {
			return target.Contract{Applies: true}
		}
		if c, ok := ZoneContracts(cmp.Or(s.policy.Policy, s.env.Policy), zs)[f]; ok {
			return c
		}
		return target.Contract{Applies: true}
	}
	c, ok := s.contracts[f]
	if !ok {
		return target.Contract{NotApplicable: "the target declares no contract for it"}
	}
	return c
}

// Applies reports whether the target promises f; when it does not, the
// fact is recorded not applicable with the target's reason (World).
func (s *Scope) Applies(f target.Fact) bool {
	c := s.Contract(f)
	if c.Applies {
		return true
	}
	s.mu.Lock()
	s.facts = append(s.facts, reports.Fact{Name: string(f), Contract: c.Text, NotApplicable: c.NotApplicable})
	s.mu.Unlock()
	return false
}

// check records fact f, judged on the target's contract, and returns ok.
func (s *Scope) check(f target.Fact, ok bool, format string, args ...any) bool {
	c := s.Contract(f)
	if s.env.Target == nil {
		c.Text = "" // the console's own facts carry no contract text (Contract)
	}
	rf := reports.Fact{Name: string(f), Passed: ok, Detail: fmt.Sprintf(format, args...), Contract: c.Text}
	s.mu.Lock()
	s.facts = append(s.facts, rf)
	s.mu.Unlock()
	if !ok {
		s.env.Log.Warn("fact failed", "scenario", s.Name, "fact", rf.Name, "detail", rf.Detail, "contract", c.Text)
	}
	return ok
}

// sample reads the target once, records the reading and its timeline
// point, and returns it.
func (s *Scope) sample(ctx context.Context) target.Sample {
	st, err := s.env.Target.State(ctx)
	s.mu.Lock()
	l := s.tload
	s.mu.Unlock()
	smp := target.SampleOf(st)
	if smp.At.IsZero() {
		smp.At = s.Now()
	}
	if l != nil {
		smp.InFlight, smp.VUs = l.InFlight(), l.VUs()
	}
	if err != nil {
		smp.Err = err.Error()
	}
	s.mu.Lock()
	s.tsamples = append(s.tsamples, smp)
	s.mu.Unlock()
	s.env.write(reports.KindTimeline, reports.TimelinePoint{Scenario: s.Name, T: s.Since(smp.At), InFlight: smp.InFlight, VUs: smp.VUs,
		Count: st.Count, Ready: st.Ready, Desired: st.Desired, Min: st.Min, Max: st.Max, Metric: st.Metric, HasMetric: st.HasMetric, Err: smp.Err})
	s.progress()
	return smp
}

// errTimeout is what waitFor returns when its condition did not hold in
// time.
var errTimeout = errors.New("timed out")

// waitFor samples every sample interval until cond holds on a good
// reading (returned) or timeout has passed (errTimeout wrapped with what),
// at most timeout ÷ interval + 2 readings. The first reading is taken at
// once.
func (s *Scope) waitFor(ctx context.Context, what string, timeout time.Duration, cond func(target.Sample) bool) (target.Sample, error) {
	start := s.Now()
	iv := s.env.Profile.SampleInterval
	n := int(timeout/iv) + 2
	var last target.Sample
	for i := 0; i < n; i++ {
		last = s.sample(ctx)
		if last.Err == "" && cond(last) {
			return last, nil
		}
		if s.Now().Sub(start) >= timeout {
			break
		}
		if err := s.env.clock().Sleep(ctx, iv); err != nil {
			return last, err
		}
	}
	return last, fmt.Errorf("%w after %s waiting for %s (last reading: count %d, ready %d, desired %d, min %d, max %d%s)",
		errTimeout, timeout, what, last.Count, last.Ready, last.Desired, last.Min, last.Max, suffix(last.Err))
}

// hold samples for d (every sample interval), or until stop returns true.
func (s *Scope) hold(ctx context.Context, d time.Duration, stop func() bool) error {
	_, err := s.waitFor(ctx, "the hold's end", d, func(target.Sample) bool { return stop != nil && stop() })
	if errors.Is(err, errTimeout) {
		return nil
	}
	return err
}

// startLoad starts lp against the target's load URL (or the env's
// StartLoad) and makes it the load whose in-flight the timeline records.
func (s *Scope) startLoad(ctx context.Context, lp load.Profile) TargetLoad {
	start := s.env.StartLoad
	if start == nil {
		start = func(ctx context.Context, lp load.Profile) TargetLoad {
			return EngineLoad(ctx, s.env.HTTP, s.env.LoadURL, lp, s.env.Profile.WorkMS)
		}
	}
	l := start(ctx, lp)
	s.mu.Lock()
	s.tloads = append(s.tloads, l)
	s.tload = l
	s.mu.Unlock()
	return l
}

// settle waits, unjudged, until the count is at min with no load, so that
// a scenario starts from rest.
func (s *Scope) settle(ctx context.Context) error {
	s.Phase("waiting for the count to settle at min")
	// as long as the contract allows the count to come back to min (a
	// trigger whose query looks back minutes holds it up that long)
	wait := s.env.Profile.SettleTimeout
	if c := s.Contract(target.FactBackToMin); c.Applies {
		wait = max(wait, c.Bound+backMargin(s.env.Profile))
	}
	_, err := s.waitFor(ctx, "the count to settle at min before the scenario", wait,
		func(x target.Sample) bool { return x.Count == x.Min })
	return err
}

// forceTargetCount asks the target for count n in the admin's name
// (Target.SetCount) and waits, at most the profile's UpTimeout (30 s and
// four boot delays at least), until n replicas are counted and ready. It
// returns the time of the target's answer; a refusal is the error.
func (s *Scope) forceTargetCount(ctx context.Context, n int) (time.Time, error) {
	o, err := s.env.Target.SetCount(ctx, target.Admin, n)
	at := s.Now()
	if err != nil || !o.Accepted() {
		return at, fmt.Errorf("admin count %d: %s", n, errOr(err, "HTTP %d %s", o.Status, o.Message))
	}
	wait := max(30*time.Second+4*s.env.Profile.BootDelay, s.env.Profile.UpTimeout)
	_, err = s.waitFor(ctx, fmt.Sprintf("%d replicas ready", n), wait, func(x target.Sample) bool { return x.Count == n && x.Ready >= n })
	return at, err
}

// workersOf is how the platform's fault actions address the scenario's
// workers: the console's group and zone, or a target's namespace and
// Deployment.
func (s *Scope) workersOf() (group, zone string) {
	if s.env.Target != nil {
		return s.env.Namespace, s.env.Deployment
	}
	return s.env.Endpoints.Group, s.Zone
}

// goodIn returns the samples that did not fail taken in [from, to], in
// their order; a zero from or to leaves that end open.
func goodIn(samples []target.Sample, from, to time.Time) []target.Sample {
	var out []target.Sample
	for _, x := range samples {
		if x.Err == "" && !x.At.Before(from) && (to.IsZero() || !x.At.After(to)) {
			out = append(out, x)
		}
	}
	return out
}

// isTimeout reports a waitFor that ran out of time (not a stopped run).
func isTimeout(err error) bool { return errors.Is(err, errTimeout) }
