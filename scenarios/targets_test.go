package scenarios

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	refworker "github.com/scaleproof/scaleproof/autoscaler/worker"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// TestTargetScenarios: every target scenario passes on the correct fake
// HPA, each fact on its contract, and each planted bug fails the fact
// meant to catch it. The console-like fake is judged on the console's
// contracts (a lowered max in the request, a count set by hand kept), and
// the HPA-like fake fails those (and the reverse).
func TestTargetScenarios(t *testing.T) {
	for _, tc := range []struct {
		name, broken string
		console      bool // the fake and its contracts are the console's
		hpaOnConsole bool // an HPA-like fake judged on the console's contracts
		scenario     Scenario
		fails        target.Fact // "": the scenario passes
	}{
		{name: "roles", scenario: ViewerRefused()},
		{name: "roles console", console: true, scenario: ViewerRefused()},
		{name: "roles viewer allowed", broken: brokenViewerAllowed, scenario: ViewerRefused(), fails: target.FactViewerRefused},
		{name: "roles count kept on an HPA", broken: brokenCountKept, scenario: ViewerRefused(), fails: target.FactCountSet},
		{name: "roles count put back on the console's contract", hpaOnConsole: true, scenario: ViewerRefused(), fails: target.FactCountSet},
		{name: "roles no actor", broken: brokenNoActor, scenario: ViewerRefused(), fails: target.FactTrailActor},
		{name: "sustained", scenario: Sustained()},
		{name: "sustained never up", broken: brokenFrozen, scenario: Sustained(), fails: target.FactScalesUp},
		{name: "sustained over max", broken: brokenOvershoot, scenario: Sustained(), fails: target.FactWithinBounds},
		{name: "sustained no trail", broken: brokenNoTrail, scenario: Sustained(), fails: target.FactTrail},
		{name: "max lowered", scenario: MaxLowered()},
		{name: "max lowered console", console: true, scenario: MaxLowered()},
		{name: "max lowered ignored", broken: brokenIgnoreMax, scenario: MaxLowered(), fails: target.FactLoweredMax},
		{name: "max lowered within a sync, not in the request", hpaOnConsole: true, scenario: MaxLowered(), fails: target.FactLoweredMax},
		{name: "max lowered admin refused", broken: brokenAdminRefused, scenario: MaxLowered(), fails: target.FactAdminAllowed},
		{name: "spike", scenario: Spike()},
		{name: "spike never up", broken: brokenFrozen, scenario: Spike(), fails: target.FactScalesUp},
		{name: "spike over max", broken: brokenOvershoot, scenario: Spike(), fails: target.FactWithinBounds},
		{name: "spike no stabilization", broken: brokenNoStabilize, scenario: Spike(), fails: target.FactNoEarlyScaleDown},
		{name: "spike never down", broken: brokenStuck, scenario: Spike(), fails: target.FactBackToMin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClock()
			h := newFakeHPA(c, tc.broken, tc.console)
			e := fakeEnv(h)
			contracts := h.Contracts()
			if tc.hpaOnConsole {
				contracts = consoleContracts(h.sync, h.window)
				e.Target = withContracts{h, contracts}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			v := e.RunOne(ctx, tc.scenario)
			if v.Error != "" || v.Skipped != "" {
				t.Fatalf("error %q, skipped %q; facts %+v", v.Error, v.Skipped, v.Facts)
			}
			got := map[string]reports.Fact{}
			for _, f := range v.Facts {
				got[f.Name] = f
				if want := contracts[target.Fact(f.Name)].Text; f.Contract != want {
					t.Errorf("fact %q: contract %q, want the target's %q", f.Name, f.Contract, want)
				}
			}
			for _, f := range tc.scenario.Facts {
				if _, ok := got[string(f)]; !ok {
					t.Errorf("fact %q not judged (facts: %+v)", f, v.Facts)
				}
			}
			if tc.fails == "" {
				if !v.Passed {
					t.Errorf("verdict failed on the correct fake: %+v", v.Facts)
				}
				return
			}
			if f := got[string(tc.fails)]; !f.Failed() {
				t.Errorf("%s: fact %q did not fail: %+v", tc.broken, tc.fails, f)
			}
			if v.Passed {
				t.Errorf("verdict passed with %q", tc.broken)
			}
		})
	}
}

// TestOutageOnATarget: the one outage scenario on a target: on a target
// that promises the outage fact and keeps a count set by hand, a count set
// to 2 holds while a worker is frozen and steps down to min once it is
// thawed (both facts pass, judged on the target's contracts); a target
// that scales in anyway fails the outage fact; one that puts a count set
// by hand back is judged from its count at rest; without fault actions the scenario is skipped with the
// reason before it changes anything; a target that does not promise it is
// skipped with the target's reason.
func TestOutageOnATarget(t *testing.T) {
	promises := func(h *fakeHPA) target.Contracts {
		c := hpaContracts(h.sync, h.window)
		c[target.FactOutageHolds] = target.Contract{Applies: true, Text: "a frozen replica holds the count", Source: "fake"}
		return c
	}
	for _, tc := range []struct {
		name, broken string
		noFaults     bool
		hpa          bool // the HPA's own contracts: the outage fact n/a
		putsBack     bool // an HPA-like fake (the count set by hand put back) that promises the outage fact
		pass         []string
		from         int // the count the freeze starts from
		fail, skip   string
	}{
		{name: "holds", pass: []string{string(target.FactOutageHolds), factStepsDownAgain}, from: 2},
		{name: "scales in", broken: brokenOutageScaleIn, fail: string(target.FactOutageHolds), from: 2},
		{name: "puts a count set by hand back", putsBack: true, pass: []string{string(target.FactOutageHolds), factStepsDownAgain}, from: 1},
		{name: "no fault actions", noFaults: true, skip: "no fault actions"},
		{name: "not promised", hpa: true, skip: "does not look at whether pods answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHPA(newFakeClock(), tc.broken, !tc.hpa && !tc.putsBack)
			e := fakeEnv(h)
			if !tc.hpa {
				c := promises(h)
				if h.console {
					c[target.FactCountSet] = consoleContracts(h.sync, h.window)[target.FactCountSet]
				}
				e.Target = withContracts{h, c}
			}
			if !tc.noFaults {
				e.Faults = fakeFaults{h}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			v := e.RunOne(ctx, Outage())
			if v.Error != "" {
				t.Fatalf("error %q; facts %+v", v.Error, v.Facts)
			}
			if tc.skip != "" {
				if !strings.Contains(v.Skipped, tc.skip) || v.Passed {
					t.Errorf("skipped %q, passed %v; want skipped with %q", v.Skipped, v.Passed, tc.skip)
				}
				if len(h.trail) != 0 {
					t.Errorf("a skipped outage changed the target: %+v", h.trail)
				}
				return
			}
			got := map[string]reports.Fact{}
			for _, f := range v.Facts {
				got[f.Name] = f
			}
			for _, n := range tc.pass {
				if f, ok := got[n]; !ok || !f.Passed {
					t.Errorf("fact %q: %+v, want passed", n, f)
				}
			}
			if f := got[string(target.FactOutageHolds)]; f.Contract != "a frozen replica holds the count" {
				t.Errorf("outage fact's contract %q, want the target's", f.Contract)
			}
			if v.PeakCount != tc.from {
				t.Errorf("peak count %d, want the freeze to start at count %d", v.PeakCount, tc.from)
			}
			if tc.fail != "" && !got[tc.fail].Failed() {
				t.Errorf("fact %q did not fail: %+v", tc.fail, got[tc.fail])
			}
			if v.Passed != (tc.fail == "") {
				t.Errorf("passed %v; facts %+v", v.Passed, v.Facts)
			}
		})
	}
}

// withContracts is a target judged on other contracts than its own.
type withContracts struct {
	*fakeHPA
	c target.Contracts
}

func (w withContracts) Contracts() target.Contracts { return w.c }

// TestTargetRunNotApplicable: a run of every target scenario on the
// correct fake writes a timeline point per reading (the spike's with the
// load's in-flight), reports the outage fact not applicable (the scenario
// skipped: nothing judged) and a fact the target does not promise as n/a
// with its reason, never a pass, in a scenario that still passes on the
// rest; a target with an incomplete contract is judged on nothing.
func TestTargetRunNotApplicable(t *testing.T) {
	c := newFakeClock()
	h := newFakeHPA(c, brokenNone, false)
	path := filepath.Join(t.TempDir(), "results.jsonl")
	w, err := reports.Create(path, reports.RunMeta{RunID: "r", Platform: "fake", Profile: "quick"})
	if err != nil {
		t.Fatal(err)
	}
	contracts := hpaContracts(h.sync, h.window)
	const reason = "this HPA keeps no Events"
	contracts[target.FactTrail] = target.Contract{NotApplicable: reason}
	e := fakeEnv(h)
	e.Target, e.Results = withContracts{h, contracts}, w
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vs := e.Run(ctx, TargetScenarios())
	if err := w.Close(reports.End{}); err != nil {
		t.Fatal(err)
	}
	byName := map[string]reports.Verdict{}
	for _, v := range vs {
		byName[v.Scenario] = v
	}
	for _, n := range []string{"viewer-refused", "sustained", "max-lowered", "spike"} {
		if v := byName[n]; !v.Passed {
			t.Errorf("%s: %+v", n, v)
		}
	}
	sus := byName["sustained"]
	var na *reports.Fact
	for i, f := range sus.Facts {
		if f.Name == string(target.FactTrail) {
			na = &sus.Facts[i]
		}
	}
	if na == nil || na.NotApplicable != reason || na.Passed || na.Failed() {
		t.Errorf("trail fact on a target that does not promise it: %+v", na)
	}
	out := byName["outage"]
	if out.Passed || out.Skipped == "" || !strings.Contains(out.Skipped, "does not look at whether pods answer") ||
		len(out.Facts) != 1 || out.Facts[0].NotApplicable == "" {
		t.Errorf("outage: %+v", out)
	}
	res, err := reports.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	tl := res.TimelineOf("spike")
	peak, desired := int64(0), 0
	for _, p := range tl {
		peak, desired = max(peak, p.InFlight), max(desired, p.Desired)
	}
	// the post's stages peak at 100 VUs; the fake asks for ceil(100 / 20) = 5, clamped to max 4
	if len(tl) < 80 || peak != 100 || desired != 4 {
		t.Errorf("spike timeline: %d points, peak in-flight %d, peak desired %d", len(tl), peak, desired)
	}
	if len(res.Verdicts) != len(vs) {
		t.Errorf("results: %d verdicts, want %d", len(res.Verdicts), len(vs))
	}

	broken := hpaContracts(h.sync, h.window)
	delete(broken, target.FactScalesUp)
	e.Target, e.Results = withContracts{h, broken}, nil
	for _, v := range e.Run(ctx, TargetScenarios()[:2]) {
		if v.Passed || !strings.Contains(v.Error, "no contract") {
			t.Errorf("incomplete contracts: %+v", v)
		}
	}
}

// TestTargetProfiles: quick keeps each scenario within about 3 minutes
// on the kind settings (sync 15 s, resolution 15 s, stabilization 60 s).
func TestTargetProfiles(t *testing.T) {
	q := TargetQuick()
	if q.SyncPeriod != 15*time.Second || q.MetricResolution != 15*time.Second || q.Stabilization != time.Minute {
		t.Errorf("quick: %+v", q)
	}
	for _, sc := range TargetScenarios() {
		if d := sc.Expected(q, target.Contracts{}); d > 200*time.Second {
			t.Errorf("%s: expected %s on quick", sc.Name, d)
		}
	}
	// the spike's expected length follows the target's back-to-min bound
	// (a KEDA trigger's lookback makes it minutes longer than the window)
	spike := Spike()
	long := target.Contracts{target.FactBackToMin: {Applies: true, Text: "x", Bound: 195 * time.Second}}
	if a, b := spike.Expected(q, target.Contracts{}), spike.Expected(q, long); b-a != 195*time.Second-q.Stabilization {
		t.Errorf("spike expected %s without a back-to-min contract, %s with a 195 s bound: want the bound in place of the window", a, b)
	}
	if d := spikeProfile(TargetPublished()).TotalDuration(); d != 7*time.Minute {
		t.Errorf("published spike stages: %s, want the post's 7 min", d)
	}
	if _, err := TargetProfileByName("selftest"); err == nil {
		t.Error("selftest is no target profile")
	}
	if _, err := SelectTargets([]string{"burst"}); err == nil || !strings.Contains(err.Error(), "spike") {
		t.Errorf("SelectTargets(burst): %v", err)
	}
}

// TestEngineLoad: the target scenarios' load runs through the load engine
// against a reference worker on loopback: its in-flight counts the calls
// the worker holds, and the calls are counted once answered.
func TestEngineLoad(t *testing.T) {
	release := make(chan struct{})
	wk := refworker.New(refworker.Config{ID: "w1", MaxInflight: 8, Wait: func(ctx context.Context, _ time.Duration) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	srv := httptest.NewServer(wk.Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lp := load.ConstantVUs(4, 15*time.Second)
	lp.GracefulStop = 5 * time.Second
	l := EngineLoad(ctx, srv.Client(), srv.URL, lp, 10)
	seen, held := int64(0), 0
	for i := 0; i < 4000 && (seen < 4 || held < 4) && ctx.Err() == nil; i++ { // bounded: 4000 × 2.5 ms
		seen, held = l.InFlight(), wk.InFlight()
		_ = SystemClock().Sleep(ctx, 2500*time.Microsecond)
	}
	close(release)
	l.Stop()
	l.Wait()
	if seen != 4 || held != 4 {
		t.Errorf("in flight: load %d, worker %d, want 4", seen, held)
	}
	if c := l.Calls(); c.OK < 4 || c.Server5xx != 0 {
		t.Errorf("calls: %+v", c)
	}
	if l.Err() != nil || !l.Done() || len(l.Seconds("x", time.Now().Add(-time.Minute))) == 0 {
		t.Errorf("err %v done %v", l.Err(), l.Done())
	}
}

// TestScaleUpFrom: the scale-up bound counts from the first reading of the
// metric above its target by more than the tolerance, when the target
// shows one no later than the rise; otherwise from the given time.
func TestScaleUpFrom(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int, m, tg float64, count int) target.Sample {
		return target.Sample{At: t0.Add(time.Duration(s) * time.Second), Count: count, Min: 1, Metric: m, MetricTarget: tg, HasMetric: tg > 0}
	}
	for _, c := range []struct {
		name    string
		samples []target.Sample
		up      int
		want    int
	}{
		{"no metric: from the load's start", []target.Sample{at(0, 0, 0, 1), at(5, 0, 0, 1), at(9, 0, 0, 2)}, 9, 0},
		{"within the tolerance is not over", []target.Sample{at(0, 105, 100, 1), at(12, 160, 100, 1), at(20, 160, 100, 3)}, 20, 12},
		{"metric read late: from that reading", []target.Sample{at(0, 0, 100, 1), at(30, 300, 100, 1), at(40, 300, 100, 4)}, 40, 30},
		{"metric over only after the rise: from the start", []target.Sample{at(0, 0, 4, 1), at(10, 0, 4, 2), at(15, 9, 4, 2)}, 10, 0},
	} {
		var up target.Sample
		for _, x := range c.samples {
			if x.At.Equal(t0.Add(time.Duration(c.up) * time.Second)) {
				up = x
			}
		}
		got, _ := scaleUpFrom(c.samples, t0, up)
		if want := t0.Add(time.Duration(c.want) * time.Second); !got.Equal(want) {
			t.Errorf("%s: from %s, want %s", c.name, got.Sub(t0), want.Sub(t0))
		}
	}
}

// TestSustainedOnTargetShapes: sustained on targets unlike the kind
// profile's: a min at the count the load must reach (at 3 at rest, it must
// still rise above min under the load), and a scale-up bound longer than the
// profile's wait (a 100 s sync: the waits last the bound), both pass; a max
// below 3 is an error before any load.
func TestSustainedOnTargetShapes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shape  func(*fakeHPA)
		errHas string
	}{
		{"min 3", func(h *fakeHPA) { h.min, h.count, h.desired = 3, 3, 3 }, ""},
		{"a 100 s sync", func(h *fakeHPA) { h.sync = 100 * time.Second }, ""},
		{"max 2", func(h *fakeHPA) { h.max = 2 }, "the target's max 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHPA(newFakeClock(), "", false)
			tc.shape(h)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			v := fakeEnv(h).RunOne(ctx, Sustained())
			if tc.errHas != "" {
				if !strings.Contains(v.Error, tc.errHas) || v.Passed {
					t.Errorf("error %q, passed %v; want an error with %q", v.Error, v.Passed, tc.errHas)
				}
				return
			}
			if v.Error != "" || !v.Passed || len(v.Facts) == 0 {
				t.Errorf("error %q, passed %v: %+v", v.Error, v.Passed, v.Facts)
			}
		})
	}
}
