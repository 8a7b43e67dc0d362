package sim

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/load"
)

func results(t *testing.T, rep *Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := rep.WriteResults(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func mustRun(t *testing.T, cfg Config) *Report {
	t.Helper()
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestSeeded: the same config and seed give the same results file, byte
// for byte, whatever the controller's concurrency; another seed changes the
// draws (and so the file).
func TestSeeded(t *testing.T) {
	cfg := NewConfig(scenarios.Quick())
	cfg.Scenarios = []string{"sustained", "max-lowered"}
	a := results(t, mustRun(t, cfg))
	cfg.Concurrency = 1
	b := results(t, mustRun(t, cfg))
	if !bytes.Equal(a, b) {
		t.Fatalf("same seed, different results (%d vs %d bytes)", len(a), len(b))
	}
	cfg.Seed = 2
	c := results(t, mustRun(t, cfg))
	if bytes.Equal(a, c) {
		t.Fatal("seeds 1 and 2 gave the same results: the draws do not depend on the seed")
	}
}

// TestFiveQuick: the five scenarios on the quick profile pass in the sim,
// with the step policy scaling 1 -> 3 under load and back to 1, 429s only
// while capacity is short, and the results file read back by reports.
func TestFiveQuick(t *testing.T) {
	rep := mustRun(t, NewConfig(scenarios.Quick()))
	if len(rep.Verdicts) != 5 {
		t.Fatalf("%d verdicts, want 5", len(rep.Verdicts))
	}
	for _, v := range rep.Verdicts {
		if !v.Passed {
			t.Errorf("%s failed: %s %+v", v.Scenario, v.Error, v.Facts)
		}
	}
	o, _ := rep.Outcome("sustained")
	if o.UpToMaxS <= 0 || o.BackTo1S <= o.UpToMaxS || o.PeakCount != 3 {
		t.Errorf("sustained outcome %+v", o)
	}
	m1, _ := rep.Outcome("max-1")
	if m1.Calls.TooMany == 0 || m1.Calls.OK == 0 {
		t.Errorf("max-1 calls %+v: want ok and 429", m1.Calls)
	}
	res, err := reports.Parse("sim", bytes.NewReader(results(t, rep)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Incomplete || res.Meta.Platform != "sim" || len(res.Verdicts) != 5 || res.Summary == nil || len(res.Seconds) == 0 || len(res.Events) == 0 {
		t.Fatalf("read back: incomplete=%v platform=%q verdicts=%d summary=%v seconds=%d events=%d",
			res.Incomplete, res.Meta.Platform, len(res.Verdicts), res.Summary != nil, len(res.Seconds), len(res.Events))
	}
	// each scenario is titled as a platform run titles it under the profile
	// (the burst with its length: "a 4.5 s burst" on quick)
	for _, st := range res.Scenarios {
		sc, err := scenarios.Select([]string{st.Scenario})
		if err != nil || len(sc) != 1 {
			t.Fatalf("scenario %q: %v", st.Scenario, err)
		}
		if want := sc[0].TitleUnder(scenarios.Quick()); st.Title != want {
			t.Errorf("scenario %s titled %q, want %q", st.Scenario, st.Title, want)
		}
	}
	var html bytes.Buffer
	if err := render.RenderHTML(&html, []*reports.Results{res}, render.Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "<svg") || !strings.Contains(html.String(), "sustained") {
		t.Errorf("HTML report of a sim results file has no chart or no sustained scenario (%d bytes)", html.Len())
	}
}

// TestConfigErrors: a config no run can use is refused before anything runs.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"policy", func(c *Config) { c.Policy = "pid" }, `policy "pid"`},
		{"scenario", func(c *Config) { c.Scenarios = []string{"nope"} }, `unknown scenario "nope"`},
		{"limit", func(c *Config) { c.Model.Limit = 0 }, "limit = 0"},
		{"service", func(c *Config) { c.Model.Service = Dist{} }, "service"},
		{"cooldown", func(c *Config) { c.Step.UpCooldown = -time.Second }, "UpCooldown"},
		{"interval", func(c *Config) { c.Profile.SchedulerInterval = time.Millisecond }, "scheduler interval"},
		{"client rtt", func(c *Config) { c.Model.ClientRTT.Base = -time.Second }, "client_rtt"},
		{"canary", func(c *Config) { c.Model.Canary = -1 }, "canary = -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewConfig(scenarios.Quick())
			tc.mod(&cfg)
			_, err := Run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestCancelled: a cancelled context stops the run with an error.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, NewConfig(scenarios.Quick())); err == nil {
		t.Fatal("a cancelled run returned no error")
	}
}

// TestNextChange: the change points found by search are exactly where
// load.Profile.VUsAt changes, for the spike scenario's stages.
func TestNextChange(t *testing.T) {
	p := load.RampingVUs(scenarios.SpikeStartVUs, scenarios.SpikeStages()...).Scale(0.01)
	total := p.TotalDuration()
	step := time.Millisecond
	for t0 := time.Duration(0); t0 < total; {
		next := p.NextChange(t0)
		if next <= t0 || next > total {
			t.Fatalf("NextChange(%s) = %s", t0, next)
		}
		v := p.VUsAt(t0)
		for u := t0; u < next; u += step {
			if p.VUsAt(u) != v {
				t.Fatalf("VUsAt(%s) = %d != VUsAt(%s) = %d before the change at %s", u, p.VUsAt(u), t0, v, next)
			}
		}
		if next < total && p.VUsAt(next) == v {
			t.Fatalf("no change at %s", next)
		}
		t0 = next
	}
}

// TestHPASpike: with the hpa policy the spike scenario drives the
// controller's hpa rounds on the model's signal (no Prometheus): the zone
// scales up under the spikes and back to 1, and every scale-up names the
// signal.
func TestHPASpike(t *testing.T) {
	cfg := NewConfig(scenarios.Quick())
	cfg.Policy, cfg.Scenarios = scenarios.PolicyHPA, []string{"spike"}
	rep := mustRun(t, cfg)
	v := rep.Verdicts[0]
	if !v.Passed || v.PeakCount < 2 {
		t.Fatalf("spike: passed=%v peak=%d err=%s facts=%+v", v.Passed, v.PeakCount, v.Error, v.Facts)
	}
	ups := 0
	for _, r := range rep.Records {
		if ev, ok := r.Data.(reports.ScaleEvent); ok && ev.To > ev.From {
			ups++
			if !strings.Contains(ev.Reason, "query") {
				t.Errorf("scale-up reason %q does not come from the hpa metric", ev.Reason)
			}
		}
	}
	if ups == 0 {
		t.Fatal("no scale-up event")
	}
}

// TestSpikeSignalFacts: on either policy the model's spike judges the
// signal as a platform run does (an hpa zone on its controller's query
// rounds, a step zone on the harness's own readings of the query), with the
// catalogue's facts.
func TestSpikeSignalFacts(t *testing.T) {
	for _, tc := range []struct{ policy, source string }{
		{scenarios.PolicyStep, "the harness's own readings of sum(max_over_time("},
		{scenarios.PolicyHPA, "the console's query rounds"},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			cfg := NewConfig(scenarios.Quick())
			cfg.Policy, cfg.Scenarios = tc.policy, []string{"spike"}
			v := mustRun(t, cfg).Verdicts[0]
			for _, name := range []string{"signal recorded", "replicas follow the signal"} {
				i := slices.IndexFunc(v.Facts, func(f reports.Fact) bool { return strings.HasPrefix(f.Name, name) })
				if i < 0 || !v.Facts[i].Passed || !strings.Contains(v.Facts[i].Detail, tc.source) {
					t.Errorf("%q: want it judged and passed on %s; facts %+v", name, tc.source, v.Facts)
				}
			}
		})
	}
}

// TestScenarioList: the default list is every harness scenario the sim
// runs (those with a Flow); each of the five and spike has one.
func TestScenarioList(t *testing.T) {
	for _, policy := range []string{scenarios.PolicyStep, scenarios.PolicyHPA} {
		cfg := NewConfig(scenarios.Quick())
		cfg.Policy = policy
		list, skipped, err := cfg.resolve()
		if err != nil {
			t.Fatal(err)
		}
		want := len(scenarios.All())
		if policy == scenarios.PolicyHPA {
			want++
		}
		if len(list)+len(skipped) != want {
			t.Errorf("%s: %d simulated + %d skipped, want %d", policy, len(list), len(skipped), want)
		}
	}
	for _, name := range []string{"viewer-refused", "max-1", "sustained", "burst", "max-lowered", "spike"} {
		if !slices.Contains(simulated(), name) {
			t.Errorf("the simulator does not run %s", name)
		}
	}
}
