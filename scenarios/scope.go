package scenarios

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// Scope is one scenario's run: its zone, its facts, its sampler and loads.
type Scope struct {
	Name  string
	Zone  string
	Start time.Time

	env      *Env
	expected time.Duration
	sampler  *observe.Zone
	stopSamp func() // ends the sampler (goUntilStopped)

	mu       sync.Mutex
	phase    string
	facts    []reports.Fact
	loads    []*loadRun
	verdict  reports.Verdict
	policy   consoleclient.PolicyView // the zone's policy as the console resolved it (policy.go)
	outages  [][2]time.Time           // console outages the scenario caused (contract_scenarios.go)
	noFiveXX bool                     // the scenario judges its failed calls itself
	// maxCount is the max the zone was created with; lowered the max
	// lowerings and what the harness saw right after each (contract.go).
	maxCount int
	lowered  []MaxLowering
	watch    *inflightWatch // the workers' in-flight while a load runs (imbalance.go)
	sibling  *sibling       // the group's other zone, when the scenario changes a bound (bounds.go)
	// steps records a step zone's rounds; stopSteps ends it (steprounds.go).
	steps     *roundRecorder
	stopSteps func()

	// A target run's (Env.Target): the target's contracts, its readings,
	// its loads and the one running now (its in-flight goes in the
	// timeline). targets.go.
	contracts target.Contracts
	tsamples  []target.Sample
	tloads    []TargetLoad
	tload     TargetLoad
}

func newScope(e *Env, sc Scenario) *Scope {
	s := &Scope{Name: sc.Name, Zone: sc.Name + "-" + e.RunTag, Start: e.clock().Now(), env: e}
	if e.Target != nil { // a target run judges the target's scale target, not a zone of its own
		s.Zone, s.contracts = e.Target.Name(), e.Target.Contracts()
	}
	if sc.Expected != nil {
		s.expected = sc.Expected(e.Profile, s.contracts)
	}
	s.verdict = reports.Verdict{Scenario: sc.Name, UpToMaxS: -1, ReadyMaxS: -1, BackTo1S: -1}
	return s
}

// Since is seconds from the scenario's start to t.
func (s *Scope) Since(t time.Time) float64 { return math.Round(t.Sub(s.Start).Seconds()*10) / 10 }

// Now is the run's clock's time (Env.Clock; World).
func (s *Scope) Now() time.Time { return s.env.clock().Now() }

// Phase names what the scenario is doing now (progress, logs).
func (s *Scope) Phase(p string) {
	s.mu.Lock()
	s.phase = p
	s.mu.Unlock()
	s.env.Log.Info("phase", "scenario", s.Name, "phase", p)
	s.progress()
}

// Check records a fact and returns ok.
func (s *Scope) Check(name string, ok bool, format string, args ...any) bool {
	if c, promised := s.contracts[target.Fact(name)]; promised && c.Applies && s.env.Target != nil {
		return s.check(target.Fact(name), ok, format, args...)
	}
	f := reports.Fact{Name: name, Passed: ok, Detail: fmt.Sprintf(format, args...)}
	s.mu.Lock()
	s.facts = append(s.facts, f)
	s.mu.Unlock()
	if !ok {
		s.env.Log.Warn("fact failed", "scenario", s.Name, "fact", name, "detail", f.Detail)
	}
	return ok
}

// NotApplicable records fact name as not judged, with why: it neither
// passes nor fails (reports.Fact.NotApplicable).
func (s *Scope) NotApplicable(name, why string) {
	s.mu.Lock()
	s.facts = append(s.facts, reports.Fact{Name: name, NotApplicable: why})
	s.mu.Unlock()
	s.env.Log.Info("fact not applicable", "scenario", s.Name, "fact", name, "why", why)
}

func (s *Scope) progress() {
	if s.env.Progress == nil {
		return
	}
	st := Status{Scenario: s.Name, Elapsed: s.Now().Sub(s.Start), Expected: s.expected, Shards: s.env.Shards}
	s.mu.Lock()
	st.Phase = s.phase
	loads := append([]*loadRun(nil), s.loads...)
	tl, last := s.tload, target.Sample{}
	if n := len(s.tsamples); n > 0 {
		last = s.tsamples[n-1]
	}
	s.mu.Unlock()
	for _, l := range loads {
		vus, calls := l.snapshot()
		st.VUs += vus
		st.Calls.Add(calls)
	}
	if tl != nil {
		st.VUs += tl.VUs()
		st.Calls.Add(tl.Calls())
	}
	if s.env.Target != nil {
		st.Count, st.Max, st.Ready = last.Count, last.Max, last.Ready
	}
	if s.sampler != nil {
		last := s.sampler.Last()
		st.Count, st.Max, st.Ready, st.Decision = last.Count, last.Max, last.Ready, last.Decision
	}
	s.env.Progress(st)
}

// admin is the group admin's key (the scenarios act as an admin of their group).
func (s *Scope) admin() string { return s.env.Endpoints.Keys.GroupAdmin.Key }

// CreateZone creates the scenario's zone with count 1 and the given max,
// starts sampling it every SampleInterval, and waits until one worker is ready.
// A target run's scale target exists already: CreateZone waits, unjudged,
// for its count to settle at min with no load (settle).
func (s *Scope) CreateZone(ctx context.Context, max int) error {
	e := s.env
	if e.Target != nil {
		return s.settle(ctx)
	}
	if err := e.createZone(ctx, s.Zone, max); err != nil {
		return err
	}
	s.mu.Lock()
	s.maxCount = max
	s.mu.Unlock()
	if _, err := s.applyPolicy(ctx, max); err != nil {
		return err
	}
	s.startStepRounds(ctx)
	zone := target.NewConsoleWith(e.Console, e.Endpoints.Keys, e.Endpoints.Group, s.Zone, target.ConsoleSettings{}, target.ReadAs(e.Endpoints.Keys.SuperAdmin.Key))
	s.sampler = observe.NewZone(zone.State, e.Endpoints.Group+"/"+s.Zone, e.Profile.SampleInterval)
	s.sampler.OnSample = func(smp observe.Sample) {
		e.write(reports.KindSampleRaw, map[string]any{"scenario": s.Name, "t": s.Since(smp.At), "sample": smp})
		s.progress()
	}
	s.stopSamp = goUntilStopped(context.WithoutCancel(ctx), s.sampler.Run)
	_, err := s.sampler.WaitFor(ctx, "the first worker to be ready", 30*time.Second+e.Profile.BootDelay*2,
		func(x observe.Sample) bool { return x.Count == 1 && x.Ready >= 1 })
	if err != nil {
		return err
	}
	return s.waitServed(ctx, 30*time.Second)
}

// MCPURL is where the scenario's calls go: the edge's route to the zone,
// {EdgeURL}/g/{group}/z/{zone}/mcp.
func (s *Scope) MCPURL() string {
	e := s.env
	return e.Endpoints.EdgeURL + "/g/" + e.Endpoints.Group + "/z/" + s.Zone + "/mcp"
}

// goUntilStopped runs run in a goroutine on a child of ctx and returns
// stop, which cancels that child and waits for run to return; later calls
// of stop return at once.
func goUntilStopped(ctx context.Context, run func(context.Context)) (stop func()) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); run(rctx) }()
	return sync.OnceFunc(func() { cancel(); <-done })
}

// waitServed waits (at most timeout) until the edge serves a call to the
// scope's zone (WaitServed).
func (s *Scope) waitServed(ctx context.Context, timeout time.Duration) error {
	return WaitServed(ctx, s.env.HTTP, s.MCPURL(), timeout)
}

// WaitServed sends single `work {"ms": 0}` calls to the MCP endpoint url
// (an edge's route to a zone, {EdgeURL}/g/{group}/z/{zone}/mcp) until one is
// ok: the console can see a ready worker up to one discovery interval
// before the edge routes to it, and a load must not start in that window
// (the edge would answer 503). These probe calls are not counted in any
// scenario's calls. Bounded by timeout; between tries it waits the
// answer's Retry-After, at least 50 ms and at most 250 ms. The error names
// the last answer.
func WaitServed(ctx context.Context, client *http.Client, url string, timeout time.Duration) error {
	call := load.MCPToolCall(client, url, "work", map[string]any{"ms": 0}, nil)
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last load.Result
	for i := int64(0); ; i++ {
		last = call(ctx, 0, i)
		if last.Class == load.ClassOK {
			return nil
		}
		if err := (systemClock{}).Sleep(ctx, min(max(last.RetryAfter, 50*time.Millisecond), 250*time.Millisecond)); err != nil {
			return fmt.Errorf("%s for a first ok call through the edge to %s: last answer %s %d %s",
				observe.Waited(time.Since(start), timeout, err), url, last.Class, last.Status, last.Err)
		}
	}
}

// WaitFor waits on the zone's samples (see observe.Zone.WaitFor); on a
// target it reads the target every sample interval (waitFor).
func (s *Scope) WaitFor(ctx context.Context, what string, timeout time.Duration, cond func(observe.Sample) bool) (observe.Sample, error) {
	if s.env.Target != nil {
		return s.waitFor(ctx, what, timeout, cond)
	}
	return s.sampler.WaitFor(ctx, what, timeout, cond)
}

// Load starts the profile's constant VUs of tools/call through the edge
// against the scenario's zone, for at most d; Stop ends it earlier (with
// gracefulStop).
func (s *Scope) Load(ctx context.Context, d time.Duration) *loadRun {
	return s.loadProfile(ctx, constantVUs(s.env.Profile, d))
}

// loadProfile starts a load with profile lp against the scenario's zone and
// counts it in the scenario's calls.
func (s *Scope) loadProfile(ctx context.Context, lp load.Profile) *loadRun {
	return s.loadWork(ctx, lp, s.env.Profile.WorkMS)
}

// loadWork is loadProfile with calls of workMS milliseconds each.
func (s *Scope) loadWork(ctx context.Context, lp load.Profile, workMS int) *loadRun {
	return s.track(ctx, startLoad(ctx, s.env, s, lp, workMS))
}

// loadArrival starts open-model load ap (k6's arrival-rate executors) of
// workMS-millisecond calls against the scenario's zone, always in this
// process (an arrival rate a scenario needs is far under one process's
// reach), and counts it in the scenario's calls.
func (s *Scope) loadArrival(ctx context.Context, ap load.ArrivalProfile, workMS int) *loadRun {
	return s.track(ctx, startArrivalAt(ctx, s.env, s, ap, s.MCPURL(), workMS))
}

// track counts load l in the scenario's calls and watches its in-flight.
func (s *Scope) track(ctx context.Context, l *loadRun) *loadRun {
	s.addLoad(l)
	s.startInflightWatch(ctx)
	return l
}

// addLoad counts load l in the scenario's calls (no in-flight watch: see track).
func (s *Scope) addLoad(l *loadRun) *loadRun {
	s.mu.Lock()
	s.loads = append(s.loads, l)
	s.mu.Unlock()
	return l
}

// Samples returns every zone sample so far (a target's readings on a
// target run).
func (s *Scope) Samples() []observe.Sample {
	if s.env.Target != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.Clone(s.tsamples)
	}
	if s.sampler == nil {
		return nil
	}
	return s.sampler.Samples()
}

// finish stops sampling and loads, writes the loads' seconds, and builds
// the verdict (Decide). On the console it first adds the run-wide facts
// (5xx, /readyz, the contract's, the sibling zone's, the canary's), derives
// scale events, and judges the workers' in-flight for imbalance (a flag,
// never a failed fact: reports.Imbalance); a target run judges only what
// its scenario checked.
func (s *Scope) finish(runErr error) reports.Verdict {
	s.mu.Lock()
	loads := append([]*loadRun(nil), s.loads...)
	tloads := append([]TargetLoad(nil), s.tloads...)
	s.mu.Unlock()
	for _, l := range loads {
		l.Stop()
		l.Wait()
	}
	for _, l := range tloads {
		l.Stop()
		l.Wait()
	}
	if s.stopSamp != nil {
		s.stopSamp()
	}
	end := s.Now()
	v := s.verdict
	v.Imbalance = s.stopInflightWatch()
	if warn := v.Imbalance.Warning(); warn != "" {
		s.env.Log.Warn("imbalance", "scenario", s.Name, "warning", warn)
	}
	v.DurationS = s.Since(end)
	var p95s []float64
	for _, l := range loads {
		v.Calls.Add(l.Calls())
		p95s = append(p95s, l.P95ms())
		for _, sec := range l.seconds() {
			s.env.write(reports.KindSecond, sec)
		}
	}
	for _, l := range tloads {
		v.Calls.Add(l.Calls())
		p95s = append(p95s, l.P95ms())
		for _, sec := range l.Seconds(s.Name, s.Start) {
			s.env.write(reports.KindSecond, sec)
		}
	}
	for _, p := range p95s {
		v.P95ms = math.Max(v.P95ms, p)
	}
	samples := s.Samples()
	v.PeakCount = max(v.PeakCount, PeakCount(samples))
	if s.env.Target != nil {
		return s.verdictOf(v, runErr)
	}
	for _, ev := range scaleEvents(s, samples, loads) {
		s.env.write(reports.KindEvent, ev)
	}
	s.reportAtMax()
	jctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	s.judgeContract(jctx, end)
	cancel()
	s.mu.Lock()
	stopSteps := s.stopSteps
	s.mu.Unlock()
	if stopSteps != nil {
		stopSteps() // judged in judgeContract; stopped here when it was not
	}
	s.judgeSibling()
	if len(loads) > 0 && !s.noFiveXX {
		var reasons []load.ErrorCount
		for _, l := range loads {
			reasons = append(reasons, l.reasons(load.Class5xx)...)
		}
		record(s, FactNoFiveXX(v.Calls, reasons))
	}
	if s.env.Endpoints.Canary && len(loads) > 0 {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v.Canary = s.canaryShare(cctx)
		cancel()
		if f := FactCanaryTookCalls(v.Canary); f != nil {
			record(s, *f)
		}
	}
	if s.env.readyz != nil {
		_, fails := s.env.readyz.Stats()
		var mine []string
		timedOut, non200, other, planned := 0, 0, 0, 0
		for _, f := range fails {
			if !f.At.Before(s.Start) && !f.At.After(end) {
				if s.inPlannedOutage(f.At) {
					planned++
					continue
				}
				mine = append(mine, fmt.Sprintf("t=%.0fs %s %s", s.Since(f.At), f.Kind(), f.Err))
				switch {
				case f.TimedOut:
					timedOut++
				case f.Status != 0:
					non200++
				default:
					other++
				}
			}
		}
		p := s.env.Profile
		detail := fmt.Sprintf("%d failed polls (%d timed out after %s, %d answered but not 200, %d other errors; polled every %s) %s",
			len(mine), timedOut, p.ReadyzTimeout, non200, other, p.ReadyzInterval, strings.Join(mine, "; "))
		if planned > 0 {
			detail += fmt.Sprintf(" (%d more during the console restart the scenario made, not counted)", planned)
		}
		s.Check("console /readyz stayed 200", len(mine) == 0, "%s", detail)
	}
	return s.verdictOf(v, runErr)
}

// verdictOf is v with the scope's facts, decided (Decide).
func (s *Scope) verdictOf(v reports.Verdict, runErr error) reports.Verdict {
	s.mu.Lock()
	v.Facts = append([]reports.Fact(nil), s.facts...)
	s.mu.Unlock()
	return Decide(v, runErr)
}

// scaleEvents derives the scenario's scale events from its samples and the
// seconds its loads served an ok call (reports.ScaleEvents).
func scaleEvents(s *Scope, samples []observe.Sample, loads []*loadRun) []reports.ScaleEvent {
	var okSeconds []float64
	for _, l := range loads {
		for _, sec := range l.seconds() {
			if sec.Calls.OK > 0 {
				okSeconds = append(okSeconds, float64(sec.T))
			}
		}
	}
	return reports.ScaleEvents(s.Name, CountSamples(samples, s.Since), okSeconds)
}

// CountSamples are a zone's samples as reports.ScaleEvents reads them, on
// every world: T is since(sample time) in seconds from the scenario's
// start, a failed reading is marked Failed, and each good one carries the
// reason its count differs from the good one before it (changeReason).
func CountSamples(samples []observe.Sample, since func(time.Time) float64) []reports.CountSample {
	cs := make([]reports.CountSample, 0, len(samples))
	prev := -1
	for _, smp := range samples {
		c := reports.CountSample{T: since(smp.At), Count: smp.Count, Ready: smp.Ready, Failed: smp.Err != ""}
		if !c.Failed {
			c.Reason = changeReason(smp, prev)
			prev = smp.Count
		}
		cs = append(cs, c)
	}
	return cs
}

// changeReason is why a sample's count differs from prev: the zone's last
// change when it names this step (a forced change keeps its own cause and
// actor even after a hold), else the last decision.
func changeReason(smp observe.Sample, prev int) string {
	if smp.Change != "" && strings.Contains(smp.Change, fmt.Sprintf(" %d->%d:", prev, smp.Count)) {
		return smp.Change
	}
	return smp.Decision
}

// reasonsText is ": " and the three most frequent reasons with their
// counts ("502 Bad Gateway: worker w-2 failed: EOF ×1"), "" when none.
func reasonsText(in []load.ErrorCount) string {
	var rs []load.ErrorCount // one row a reason, the loads' counts added
	for _, r := range in {
		if i := slices.IndexFunc(rs, func(x load.ErrorCount) bool { return x.Err == r.Err }); i >= 0 {
			rs[i].N += r.N
		} else {
			rs = append(rs, r)
		}
	}
	slices.SortStableFunc(rs, func(a, b load.ErrorCount) int { return cmp.Compare(b.N, a.N) })
	var parts []string
	for i, r := range rs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(rs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", r.Err, r.N))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}
