package sim

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// tightWorld is a World whose profile no autoscaler can meet: the count
// must reach max and come back to 1 within a millisecond, and max-1's load
// lasts no time at all, so no call is served.
type tightWorld struct{ scenarios.World }

func (w tightWorld) Profile() scenarios.Profile {
	p := w.World.Profile()
	p.UpTimeout, p.DownTimeout, p.MaxOneLoad = time.Millisecond, time.Millisecond, 0
	return p
}

// TestSimRunsTheCatalogueFlow: the simulator runs a catalogue scenario's
// own Flow, the code a platform run runs on the console's Scope
// (scenarios.Scenario.Flow; TestRunOneRunsTheFlow there), not a copy: the
// same scenario passes on the model, and with its bounds tightened in the
// Flow it fails there on the fact those bounds decide.
func TestSimRunsTheCatalogueFlow(t *testing.T) {
	cfg := NewConfig(scenarios.Quick())
	for _, tc := range []struct {
		sc   scenarios.Scenario
		fact string // the fact the tightened bound fails
	}{
		{scenarios.MaxOneNeverScales(), "calls served"},
		{scenarios.Sustained(), "count reaches 3 under load"},
		{scenarios.Burst(), "count back to 1 after the load"},
		{scenarios.MaxLowered(), "count reaches 3 under load"},
		{scenarios.Spike(), "count back to 1 after the load"},
	} {
		t.Run(tc.sc.Name, func(t *testing.T) {
			if tc.sc.Flow == nil {
				t.Fatalf("%s has no Flow", tc.sc.Name)
			}
			rep, err := run(context.Background(), cfg, []scenarios.Scenario{tc.sc}, nil)
			if err != nil || len(rep.Verdicts) != 1 || !rep.Verdicts[0].Passed {
				t.Fatalf("as in the catalogue: %v %+v; want a pass", err, rep)
			}
			tight := tc.sc
			tight.Flow = func(ctx context.Context, w scenarios.World) error { return tc.sc.Flow(ctx, tightWorld{w}) }
			rep, err = run(context.Background(), cfg, []scenarios.Scenario{tight}, nil)
			if err != nil || len(rep.Verdicts) != 1 {
				t.Fatalf("tightened: %v %+v", err, rep)
			}
			v := rep.Verdicts[0]
			failed := slices.ContainsFunc(v.Facts, func(f reports.Fact) bool { return f.Name == tc.fact && !f.Passed && f.NotApplicable == "" })
			if v.Passed || !failed {
				t.Errorf("tightened: passed %v, facts %+v; want %q failed", v.Passed, v.Facts, tc.fact)
			}
		})
	}
}

// TestSimCatchesPlantedBugs: a controller with a planted bug fails the
// simulator's verdict on the fact a platform run catches it with
// (cmd/scaleproof's caughtBy), the same fact code, and passes without it.
func TestSimCatchesPlantedBugs(t *testing.T) {
	for _, tc := range []struct {
		fault  string
		policy string
		sc     scenarios.Scenario
		fact   string // the failing fact's name's beginning
	}{
		{faults.CountAboveMaxAccepted, scenarios.PolicyStep, scenarios.ViewerRefused(), "an admin's count above the max"},
		{faults.CountAboveMaxAccepted, scenarios.PolicyStep, scenarios.ViewerRefused(), "count and max unchanged"},
		{faults.CountAboveMaxAccepted, scenarios.PolicyStep, scenarios.MaxLowered(), "an admin's count above the max"},
		{faults.MaxLeaksToGroup, scenarios.PolicyStep, scenarios.MaxLowered(), "the group's other zone did not move"},
		{faults.HPAIgnoreStabilization, scenarios.PolicyHPA, scenarios.Spike(), "no scale-down before the"},
	} {
		t.Run(tc.fault+"/"+tc.sc.Name, func(t *testing.T) {
			cfg := NewConfig(scenarios.Quick())
			cfg.Policy = tc.policy
			for _, fs := range []faults.Set{nil, {tc.fault: true}} {
				cfg.Faults = fs
				rep, err := run(context.Background(), cfg, []scenarios.Scenario{tc.sc}, nil)
				if err != nil || len(rep.Verdicts) != 1 {
					t.Fatalf("faults %v: %v %+v", fs, err, rep)
				}
				v := rep.Verdicts[0]
				failed := slices.ContainsFunc(v.Facts, func(f reports.Fact) bool { return strings.HasPrefix(f.Name, tc.fact) && f.Failed() })
				if want := fs != nil; v.Passed == want || failed != want {
					t.Errorf("faults %v: passed %v, %q failed %v; facts %+v", fs, v.Passed, tc.fact, failed, v.Facts)
				}
			}
		})
	}
}

// TestSimViewerRefusedTargetFacts: viewer-refused judges the target
// scenarios' three facts on the model as the console's own run does: "the
// trail names the actor" on the model's store, and "viewer is refused"
// (the model has no API keys) and "a count set by hand" (the console's own
// run leaves the count alone) not applicable, each with its reason, never
// silently passed.
func TestSimViewerRefusedTargetFacts(t *testing.T) {
	rep, err := run(context.Background(), NewConfig(scenarios.Quick()), []scenarios.Scenario{scenarios.ViewerRefused()}, nil)
	if err != nil || len(rep.Verdicts) != 1 {
		t.Fatalf("%v %+v", err, rep)
	}
	v := rep.Verdicts[0]
	facts := map[string]reports.Fact{}
	for _, f := range v.Facts {
		facts[f.Name] = f
	}
	for _, tc := range []struct {
		fact target.Fact
		na   string // the reason's words; "" = judged and passed
	}{
		{target.FactViewerRefused, "no API keys"},
		{target.FactCountSet, "leaves the count alone"},
		{target.FactTrailActor, ""},
	} {
		f, ok := facts[string(tc.fact)]
		switch {
		case !ok:
			t.Errorf("%s: not recorded; facts %+v", tc.fact, v.Facts)
		case tc.na == "" && (!f.Passed || f.NotApplicable != ""):
			t.Errorf("%s: %+v, want judged and passed", tc.fact, f)
		case tc.na != "" && !strings.Contains(f.NotApplicable, tc.na):
			t.Errorf("%s: %+v, want not applicable: %s", tc.fact, f, tc.na)
		}
	}
	if !v.Passed {
		t.Errorf("viewer-refused on the model: %+v", v)
	}
}
