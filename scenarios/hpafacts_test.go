package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
)

// quickHPA is the quick profile's hpa zone: threshold 24, tolerance 0.1,
// scale-down window 30 s, +4 pods or +100 % per 1.5 s, max 4.
var quickHPA = HPARules{Threshold: 24, TolUp: 0.1, TolDown: 0.1, Min: 1, Max: 4, DownWindow: 30 * time.Second,
	UpSelect: "Max", UpPolicies: []HPARatePolicy{{Value: 4, Period: 1500 * time.Millisecond},
		{Percent: true, Value: 100, Period: 1500 * time.Millisecond}}, Source: "the test"}

// rd is one query round: at t s the console read value over pods pods
// (count from).
type rd struct {
	t     float64
	value float64
	pods  int
}

func roundsOf(rs []rd) []consoleclient.PolicyRound {
	var out []consoleclient.PolicyRound
	for _, r := range rs {
		v := r.value
		out = append(out, consoleclient.PolicyRound{At: at(r.t), Value: &v, Pods: r.pods, Ready: r.pods, From: r.pods, To: r.pods})
	}
	return out
}

func autoscale(t float64, kind, from, to string) ev {
	return ev{t, "workers.autoscale", kind, from, to, "hpa"}
}

// spikeRounds: 1 -> 2 at 4 s (value 27, ratio 1.125), 2 -> 4 at 8 s (85),
// the signal falls from 20 s, and the count comes down once the 30 s window
// has passed the last high recommendation.
var spikeRounds = []rd{{0, 7, 1}, {4, 27, 1}, {8, 85, 2}, {12, 85, 4}, {16, 85, 4}, {20, 40, 4}, {24, 0, 4},
	{28, 0, 4}, {32, 0, 4}, {36, 0, 4}, {40, 0, 4}, {44, 0, 4}, {48, 0, 4}, {52, 0, 4}}

func TestFactHPAStabilization(t *testing.T) {
	for _, tc := range []struct {
		name  string
		evs   []ev
		rules func(HPARules) HPARules
		ok    bool
		want  string
	}{
		{"down after the window", []ev{autoscale(4, "up", "1", "2"), autoscale(8, "up", "2", "4"), autoscale(52, "down", "4", "1")}, nil, true, "1 steps down"},
		{"down with a higher recommendation in the window",
			[]ev{autoscale(4, "up", "1", "2"), autoscale(8, "up", "2", "4"), autoscale(24, "down", "4", "1")}, nil, false,
			"down 4->1 at +24.0 s: recommendation 4 at +8.0 s"},
		{"down to the highest of the window", []ev{autoscale(8, "up", "1", "4"), autoscale(24, "down", "4", "2")},
			func(h HPARules) HPARules { h.DownWindow = 5 * time.Second; return h }, true, ""},
		{"down to under the highest of a short window", []ev{autoscale(8, "up", "1", "4"), autoscale(24, "down", "4", "1")},
			func(h HPARules) HPARules { h.DownWindow = 5 * time.Second; return h }, false, "recommendation 2 at +20.0 s"},
		{"a down without a round at its time", []ev{autoscale(49, "down", "4", "1")}, nil, false, "no query round"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := quickHPA
			if tc.rules != nil {
				h = tc.rules(h)
			}
			f := FactHPAStabilization(h, h.recs(roundsOf(spikeRounds)), Changes(entries(tc.evs)), ct0)
			checkFact(t, f, tc.ok, tc.want)
		})
	}
}

func TestFactHPAScaleUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   []rd
		evs  []ev
		ok   bool
		want string
	}{
		{"up to the recommendation", spikeRounds, []ev{autoscale(4, "up", "1", "2"), autoscale(8, "up", "2", "4")}, true, "2 steps up"},
		{"up past the recommendation", spikeRounds, []ev{autoscale(4, "up", "1", "3")}, false, "the recommendation was 2 (value 27 over 1 pods, ratio 1.125"},
		{"up past the max", []rd{{4, 200, 1}}, []ev{autoscale(4, "up", "1", "5")}, false, "over the max 4"},
		{"a step down in the period raises its start", []rd{{4, 90, 1}, {5, 90, 4}, {6, 200, 2}},
			[]ev{autoscale(4, "up", "1", "4"), autoscale(5, "down", "4", "2"), autoscale(6, "up", "2", "4")}, true, ""},
		{"two steps up within one period", []rd{{4, 40, 1}, {5, 200, 2}},
			[]ev{autoscale(4, "up", "1", "2"), autoscale(5, "up", "2", "4")}, true, ""},
		{"a count under min goes to min", []rd{{2, 0, 1}}, []ev{autoscale(2, "up", "0", "1")}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := quickHPA
			f := FactHPAScaleUp(h, h.recs(roundsOf(tc.rs)), Changes(entries(tc.evs)), ct0)
			checkFact(t, f, tc.ok, tc.want)
		})
	}
	// A Pods policy of +1 per 10 s (Max of it alone): 1 -> 2 at 4 s uses
	// the period, so 2 -> 3 at 8 s is over the limit.
	h := quickHPA
	h.UpPolicies = []HPARatePolicy{{Value: 1, Period: 10 * time.Second}}
	f := FactHPAScaleUp(h, h.recs(roundsOf([]rd{{4, 90, 1}, {8, 90, 2}})), Changes(entries([]ev{autoscale(4, "up", "1", "2"), autoscale(8, "up", "2", "3")})), ct0)
	checkFact(t, f, false, "up 2->3 at +8.0 s: the rate policies allow 2")
}

// TestFactHPALimitExercised: the scale-up-limit scenario's own check that
// the rate policies bound a step (threshold 4, max 8, as the scenario sets).
func TestFactHPALimitExercised(t *testing.T) {
	h := quickHPA
	h.Threshold, h.Max = 4, ScaleUpLimitMax
	for _, tc := range []struct {
		name string
		rs   []rd
		evs  []ev
		ok   bool
		want string
	}{
		// 32 in flight on 1 pod asks for 8; the limit from 1 is 5.
		{"bound at the first step", []rd{{4, 32, 1}, {8, 64, 5}}, []ev{autoscale(4, "up", "1", "5"), autoscale(8, "up", "5", "8")}, true,
			"1 of 2 steps up were bound by the rate policies: up 1->5 at +4.0 s: recommendation 8, limit 5"},
		// 16 asks for 4: under the limit, so the policies never decided.
		{"never reached", []rd{{4, 16, 1}}, []ev{autoscale(4, "up", "1", "4")}, false, "0 of 1 steps up"},
		// The max (8) under the limit never counts as the limit binding.
		{"the max binds, not the limit", []rd{{4, 200, 5}}, []ev{autoscale(4, "up", "5", "8")}, false, "0 of 1 steps up"},
		{"no step up at all", []rd{{4, 0, 1}}, nil, false, "0 of 0 steps up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FactHPALimitExercised(h, h.recs(roundsOf(tc.rs)), Changes(entries(tc.evs)), ct0)
			checkFact(t, f, tc.ok, tc.want)
		})
	}
}

func TestFactHPATolerance(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   []rd
		evs  []ev
		ok   bool
		want string
	}{
		{"held within the band", []rd{{4, 76, 3}, {8, 79.2, 3}, {12, 64.8, 3}}, nil, true, "3 rounds"},
		{"scaled up at 1.056", []rd{{4, 76, 3}}, []ev{autoscale(4, "up", "3", "4")}, false, "up 3->4 at +4.0 s: ratio 1.056"},
		{"scaled down at 0.9 exactly", []rd{{4, 64.8, 3}}, []ev{autoscale(4, "down", "3", "2")}, false, "ratio 0.900"},
		{"outside the band scales", []rd{{4, 79.3, 3}}, []ev{autoscale(4, "up", "3", "4")}, true, "0 rounds"},
		{"a change at another time", []rd{{4, 76, 3}}, []ev{autoscale(5, "up", "3", "4")}, true, "1 rounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := quickHPA
			f := FactHPATolerance(h, h.recs(roundsOf(tc.rs)), Changes(entries(tc.evs)), ct0)
			checkFact(t, f, tc.ok, tc.want)
		})
	}
}

func TestHPARecommend(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	for _, tc := range []struct {
		r      consoleclient.PolicyRound
		rules  HPARules
		rec    int
		within bool
		ok     bool
	}{
		{consoleclient.PolicyRound{Value: v(27), Pods: 1, From: 1}, quickHPA, 2, false, true},
		{consoleclient.PolicyRound{Value: v(26.4), Pods: 1, From: 1}, quickHPA, 1, true, true}, // exactly 1.1
		{consoleclient.PolicyRound{Value: v(76), Pods: 3, From: 3}, quickHPA, 3, true, true},
		{consoleclient.PolicyRound{Value: v(0), Pods: 4, From: 4}, quickHPA, 0, false, true},
		{consoleclient.PolicyRound{Pods: 4, From: 4, Error: "no series"}, quickHPA, 0, false, false},
		// Value target: ratio = 30 / 24 = 1.25 over 2 ready -> 3.
		{consoleclient.PolicyRound{Value: v(30), Pods: 2, Ready: 2, From: 2}, func() HPARules { h := quickHPA; h.Value = true; return h }(), 3, false, true},
	} {
		got, ok := tc.rules.recommend(tc.r)
		if ok != tc.ok || got.Rec != tc.rec || got.Within != tc.within {
			t.Errorf("recommend(%+v) = %d within %v ok %v, want %d within %v ok %v", tc.r, got.Rec, got.Within, ok, tc.rec, tc.within, tc.ok)
		}
	}
}

func TestHPARulesOf(t *testing.T) {
	spec := HPAFor(Quick()).Spec(4)
	three := 3
	spec.MinReplicas = &three
	r, ok := HPARulesOf(consoleclient.PolicyView{Policy: PolicyHPA, HPA: &spec, MaxCount: 4, EffectiveMaxReplicas: 4})
	if !ok || r.Threshold != 24 || r.Min != 3 || r.Max != 4 || r.DownWindow != 30*time.Second || r.UpWindow != 0 ||
		len(r.UpPolicies) != 2 || r.UpPolicies[1].Percent != true || r.UpPolicies[0].Period != 1500*time.Millisecond {
		t.Fatalf("HPARulesOf = %+v, %v", r, ok)
	}
	if _, ok := HPARulesOf(consoleclient.PolicyView{Policy: PolicyStep}); ok {
		t.Fatal("a step zone has no hpa rules")
	}
}

func TestNearThresholdLoad(t *testing.T) {
	for _, p := range []Profile{Quick(), Published(), SelfTest()} {
		h := HPAFor(p)
		vus := nearThresholdVUs(p)
		ratio := float64(vus) / (h.Threshold * NearThresholdReplicas)
		// Inside the band and above 1, where only the tolerance holds the count.
		if ratio <= 1 || ratio > 1.1 || float64(vus)/h.Threshold <= NearThresholdReplicas {
			t.Errorf("%s: %d VUs on %d replicas, ratio %.3f: want in (1, 1.1]", p.Name, vus, NearThresholdReplicas, ratio)
		}
		if nearThresholdHold(p) <= h.StabilizationDown {
			t.Errorf("%s: the load (%s) must outlast the stabilization window %s", p.Name, nearThresholdHold(p), h.StabilizationDown)
		}
	}
}

func checkFact(t *testing.T, f *reports.Fact, ok bool, want string) {
	t.Helper()
	if f.Passed != ok || !strings.Contains(f.Detail, want) {
		t.Errorf("fact %q passed %v, want %v, detail %q, want it to contain %q", f.Name, f.Passed, ok, f.Detail, want)
	}
}
