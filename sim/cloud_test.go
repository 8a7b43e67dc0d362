package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios"
)

// TestSetModelKeys: the model settings of a cloud run parse into their
// fields, and a value that does not parse names the key.
func TestSetModelKeys(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		check      func(Config) bool
		bad        bool
	}{
		{"client_rtt", "300ms", func(c Config) bool { return c.Model.ClientRTT.Base == 300*time.Millisecond }, false},
		{"client_rtt_jitter", "50ms", func(c Config) bool { return c.Model.ClientRTT.Jitter == 50*time.Millisecond }, false},
		{"canary", "1", func(c Config) bool { return c.Model.Canary == 1 }, false},
		{"retry_after", "3s", func(c Config) bool { return c.Model.RetryAfter == 3*time.Second }, false},
		{"one_zone", "true", func(c Config) bool { return c.OneZone }, false},
		{"one_zone", "maybe", nil, true},
		{"canary", "two", nil, true},
		{"client_rtt", "far", nil, true},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			cfg := NewConfig(scenarios.Quick())
			err := cfg.Set(tc.key, tc.value)
			switch {
			case tc.bad && (err == nil || !strings.Contains(err.Error(), tc.key)):
				t.Fatalf("err %v, want one naming %s", err, tc.key)
			case !tc.bad && (err != nil || !tc.check(cfg)):
				t.Fatalf("err %v, or the field was not set: %+v", err, cfg.Model)
			}
		})
	}
}

// TestCanaryScale: canaries come with the zone's first worker, are listed
// and routed like workers, and no scale counts or removes them, victims
// included.
func TestCanaryScale(t *testing.T) {
	m := baseModel()
	m.Canary = 1
	z := testZone(m)
	for _, tc := range []struct {
		replicas int
		victims  []string
		want     []string // listed, in order
	}{
		{1, nil, []string{"z-1", "z-2"}},
		{3, nil, []string{"z-1", "z-2", "z-3", "z-4"}},
		{2, []string{"z-1"}, []string{"z-1", "z-2", "z-3"}}, // the canary is never a victim: the newest goes
		{1, []string{"z-1", "z-2"}, []string{"z-1", "z-3"}}, // a worker victim goes
		{3, nil, []string{"z-1", "z-3", "z-5", "z-6"}},      // no second canary
	} {
		z.scale(tc.replicas, tc.victims)
		var got []string
		for _, ep := range z.endpoints() {
			got = append(got, ep.ID)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || !z.workers[0].canary || z.canary != 1 {
			t.Fatalf("scale(%d, %v): listed %v, want %v (canary first)", tc.replicas, tc.victims, got, tc.want)
		}
	}
}

// TestClientRTTAndCanary: the client round trip lengthens every call
// without holding a worker, and a canary adds a worker's capacity at
// count 1. Max 1 on the quick profile: 64 VUs for 12 s against one worker
// of limit 32 (200 ms calls).
func TestClientRTTAndCanary(t *testing.T) {
	for _, tc := range []struct {
		name          string
		rtt           Dist
		canary        int
		okMin, okMax  int64
		maxRefusedPct float64 // at most this share of calls 429
		minRefused    int64
	}{
		// 32 in flight, 160 calls/s; the other VUs are refused and wait 1 s.
		{"beside the edge", Dist{}, 0, 1700, 2100, 100, 100},
		// 64 slots for 64 VUs: 320 calls/s, refused only until the edge
		// routes to the canary too (within its 500 ms refresh).
		{"canary", Dist{}, 1, 3500, 4000, 1, 0},
		// 1 s + 200 ms per call: about 11 calls at the worker, 53 calls/s. Held
		// for the round trip, 64 VUs would need 64 slots and half would be refused.
		{"far away", Dist{Base: time.Second, Jitter: 200 * time.Millisecond}, 0, 520, 700, 10, 0},
		{"far away with a canary", Dist{Base: time.Second, Jitter: 200 * time.Millisecond}, 1, 520, 700, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewConfig(scenarios.Quick())
			cfg.Scenarios = []string{"max-1"}
			cfg.Model.ClientRTT, cfg.Model.Canary = tc.rtt, tc.canary
			rep := mustRun(t, cfg)
			o, _ := rep.Outcome("max-1")
			pct := 100 * float64(o.Calls.TooMany) / float64(max(o.Calls.Total(), 1))
			if o.Calls.OK < tc.okMin || o.Calls.OK > tc.okMax || pct > tc.maxRefusedPct || o.Calls.TooMany < tc.minRefused {
				t.Fatalf("%d ok (want %d..%d), %d refused = %.1f %% (want at least %d, at most %.0f %%)",
					o.Calls.OK, tc.okMin, tc.okMax, o.Calls.TooMany, pct, tc.minRefused, tc.maxRefusedPct)
			}
			// the platform runs' rule (scenarios.FactRefusedAtMaxOne): with a
			// canary that fits the VUs, "429 > 0" is not judged
			judged := slices.ContainsFunc(rep.Verdicts[0].Facts, func(f reports.Fact) bool { return f.Name == "back-pressure: 429 > 0" })
			if judged != (tc.canary == 0) {
				t.Errorf("back-pressure: 429 > 0 judged %v with %d canaries: %+v", judged, tc.canary, rep.Verdicts[0].Facts)
			}
		})
	}
}

// TestOneZone: with one_zone the scenarios share a zone made before the
// run, times count from the run's start, and a scenario that finds the
// zone at 1 sets only its max (no manual count, so the cooldowns run on).
func TestOneZone(t *testing.T) {
	cfg := NewConfig(scenarios.Quick())
	cfg.OneZone = true
	rep := mustRun(t, cfg)
	res, err := reports.Parse("one.jsonl", strings.NewReader(string(results(t, rep))))
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]bool{}
	for _, sc := range res.Scenarios {
		zones[sc.Zone] = true
	}
	if len(zones) != 1 || !zones[oneZoneName] {
		t.Fatalf("zones %v, want only %s", zones, oneZoneName)
	}
	if o, _ := rep.Outcome("viewer-refused"); o.StartS != 0 {
		t.Errorf("the first scenario starts at %.1f s, want 0 (the zone is made before the run)", o.StartS)
	}
	manual := 0
	for _, rec := range rep.Records {
		if zs, ok := rec.Data.(reports.ZoneSample); ok && zs.T == 0 && strings.Contains(zs.Sample.Decision, "manual count") {
			manual++
		}
	}
	if manual != 0 {
		t.Errorf("%d scenarios began with a manual count; a zone at 1 gets its max only", manual)
	}
	if !rep.Row.Passed {
		t.Errorf("a scenario failed on one zone: %+v", rep.Verdicts)
	}
}

// TestPublishedCloud: each fitted cloud model reproduces its published
// current-design back to 1 within 10 %, and the earlier round's design on
// the gke model reaches 3 later (the seed's direction).
func TestPublishedCloud(t *testing.T) {
	if testing.Short() {
		t.Skip("published-profile runs")
	}
	pub := map[string]reports.Row{}
	for _, r := range render.Published() {
		pub[strings.ToLower(r.Platform)] = r
	}
	upFromRun := func(rep *Report) (up, back float64) {
		o, ok := rep.Outcome("sustained")
		if !ok || o.UpToMaxS < 0 || o.BackTo1S < 0 {
			t.Fatalf("sustained did not reach max and come back: %+v", o)
		}
		return o.StartS + o.UpToMaxS, o.StartS + o.BackTo1S
	}
	for _, name := range Clouds {
		cfg, err := PublishedCloud(name, scenarios.Published())
		if err != nil {
			t.Fatal(err)
		}
		_, back := upFromRun(mustRun(t, cfg))
		if want := pub[name].BackTo1S; back < want*0.9 || back > want*1.1 {
			t.Errorf("%s: back to 1 at %.0f s from the run's start, published %.0f s", name, back, want)
		}
	}
	cfg, _ := PublishedCloud("gke", scenarios.Published())
	cur, _ := upFromRun(mustRun(t, cfg))
	for k, v := range map[string]string{"max_up_step": "1", "up_cooldown": "120s", "down_cooldown": "120s"} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := upFromRun(mustRun(t, cfg))
	if old < cur+100 {
		t.Errorf("earlier round to 3 at %.0f s, current %.0f s: want the earlier round at least 100 s later", old, cur)
	}
	if _, err := PublishedCloud("mars", scenarios.Published()); err == nil {
		t.Error("an unknown cloud gave a config")
	}
}
