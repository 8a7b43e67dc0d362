package autoscaler

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var updateHPA = flag.Bool("update-hpa", false, "rewrite autoscaler/testdata/hpa_*.golden")

// hpaInflight is the seed's metric: a Prometheus query, AverageValue, threshold 4.
func hpaInflight(threshold float64) HPAMetric {
	return HPAMetric{Name: "inflight", Threshold: threshold}
}

func hpaInflightReading(vs ...float64) HPAMetricReading {
	return HPAMetricReading{Name: "inflight", Values: vs}
}

// hpaQuickConfig has one metric, no scale-down stabilization and a scale-up
// rate that never binds, so a single round shows the metric arithmetic.
func hpaQuickConfig(m ...HPAMetric) HPAConfig {
	c := hpaCalcConfig(HPAMetric{})
	c.Metrics = m
	return c
}

// hpaRound runs one evaluation with the given pods and readings.
func hpaRound(cfg HPAConfig, st HPAState, pods []HPAPod, at time.Time, rs ...HPAMetricReading) (Decision, HPAState) {
	return HPA(cfg, st, HPAObservation{Pods: pods, Metrics: rs}, at)
}

// hpaEvaluated is a state whose zone was evaluated before (empty history).
func hpaEvaluated(count int) HPAState {
	return HPAState{Count: count, Recommendations: []HPARecommendation{}}
}

func TestHPASeedExample(t *testing.T) {
	// "if we have one replica and 20 inflight requests, and we aim to use
	// 75% of the six workers available per worker (four), the new desired
	// number of replicas would be five."
	cfg := DefaultHPAConfig()
	cfg.Metrics = []HPAMetric{hpaInflight(4)}
	d, next := hpaRound(cfg, HPAState{Count: 1}, hpaReady(1), hpaT0, hpaInflightReading(20))
	if d.Action != ActionUp || d.To != 5 || next.Count != 5 || !next.LastChange.Equal(hpaT0) {
		t.Fatalf("got %s to %d (next %+v), want up to 5: %s", d.Action, d.To, next, d.Reason)
	}
	for _, want := range []string{"inflight 20 / 4 per replica over 1 replica: ratio 5 outside [0.9, 1.1] -> 5", "desired 5: inflight above target"} {
		if !strings.Contains(d.Reason, want) {
			t.Errorf("reason %q lacks %q", d.Reason, want)
		}
	}
	if !slices.Equal(next.ScaleUpEvents, []HPAScaleEvent{{Change: 4, At: hpaT0}}) {
		t.Errorf("scale-up events %v, want one of +4 at t0", next.ScaleUpEvents)
	}

	// The seed's ScaledObject: min 10, max 50, threshold 4, a 30-minute
	// scale-down window. 200 in flight over 10 queriers wants 50; the
	// default rate allows the larger of +4 and +100 % per 15 s: 20.
	cfg.MinReplicas, cfg.MaxReplicas = 10, 50
	cfg.ScaleDown.StabilizationWindow = 1800 * time.Second
	d, next = hpaRound(cfg, HPAState{Count: 10}, hpaReady(10), hpaT0, hpaInflightReading(200))
	if d.To != 20 || !strings.Contains(d.Reason, "ScaleUpLimit: Max of (+4/15s from 10: 14, +100%/15s from 10: 20) allows 20") {
		t.Fatalf("got to %d: %s", d.To, d.Reason)
	}
	// 30 s later (the polling interval, past the 15 s period): +100 % again.
	d, next = hpaRound(cfg, next, hpaReady(20), hpaT0.Add(30*time.Second), hpaInflightReading(200))
	if d.To != 40 || !strings.Contains(d.Reason, "ScaleUpLimit") {
		t.Fatalf("second round to %d, want 40: %s", d.To, d.Reason)
	}
	d, _ = hpaRound(cfg, next, hpaReady(40), hpaT0.Add(60*time.Second), hpaInflightReading(200))
	if d.To != 50 {
		t.Fatalf("third round to %d, want 50: %s", d.To, d.Reason)
	}
}

func TestHPATolerance(t *testing.T) {
	tol := func(up, down float64) func(*HPAConfig) {
		return func(c *HPAConfig) { c.ScaleUp.Tolerance, c.ScaleDown.Tolerance = up, down }
	}
	cases := []struct {
		name    string
		metric  HPAMetric
		mod     func(*HPAConfig)
		count   int
		pods    []HPAPod
		reading HPAMetricReading
		want    int
	}{
		// AverageValue: ratio = total / (threshold × pods).
		{name: "ratio exactly 1.1 holds", metric: hpaExtAverage(1), count: 10, pods: hpaReady(10), reading: hpaExtReading(11), want: 10},
		{name: "ratio just over 1.1 scales up", metric: hpaExtAverage(1), count: 10, pods: hpaReady(10), reading: hpaExtReading(11.000001), want: 12},
		{name: "ratio exactly 0.9 holds", metric: hpaExtAverage(1), count: 10, pods: hpaReady(10), reading: hpaExtReading(9), want: 10},
		{name: "ratio just under 0.9 scales down", metric: hpaExtAverage(1), count: 10, pods: hpaReady(10), reading: hpaExtReading(8.999999), want: 9},
		// float64 says |1 - 0.36/(0.04×10)| > 0.1; exactly it is 0.1.
		{name: "exact 0.9 that float64 misses", metric: hpaExtAverage(0.04), count: 10, pods: hpaReady(10), reading: hpaExtReading(0.36), want: 10},
		// float64 says 0.33/0.3 = 1.1000000000000003.
		{name: "exact 1.1 that float64 misses (Value)", metric: hpaExtValue(0.3), count: 3, pods: hpaReady(3), reading: hpaExtReading(0.33), want: 3},
		{name: "Pods average exactly 1.1 holds", metric: hpaPodsMetric(10), count: 2, pods: hpaReady(2), reading: hpaPodSamples(11, 11), want: 2},
		{name: "Pods average exactly 0.9 holds", metric: hpaPodsMetric(10), count: 2, pods: hpaReady(2), reading: hpaPodSamples(8, 10), want: 2},
		// float64: 2.1/0.3 = 7.000000000000001, ceil 8.
		{name: "ceil is exact: 2.1 / 0.3 = 7", metric: hpaExtAverage(0.3), count: 1, pods: hpaReady(1), reading: hpaExtReading(2.1), want: 7},
		{name: "ceil is exact: 4.2 / 0.3 = 14", metric: hpaExtAverage(0.3), count: 1, pods: hpaReady(1), reading: hpaExtReading(4.2), want: 14},
		{name: "ceil of a fraction rounds up", metric: hpaExtAverage(4), count: 1, pods: hpaReady(1), reading: hpaExtReading(20.5), want: 6},
		{name: "per direction: 1.15 within up 0.2", metric: hpaExtAverage(1), mod: tol(0.2, 0.05), count: 20, pods: hpaReady(20), reading: hpaExtReading(23), want: 20},
		{name: "per direction: 0.94 outside down 0.05", metric: hpaExtAverage(1), mod: tol(0.2, 0.05), count: 20, pods: hpaReady(20), reading: hpaExtReading(18.8), want: 19},
		{name: "zero tolerance scales on any change", metric: hpaExtAverage(1), mod: tol(0, 0), count: 10, pods: hpaReady(10), reading: hpaExtReading(10.000001), want: 11},
		{name: "zero tolerance holds at exactly 1", metric: hpaExtAverage(1), mod: tol(0, 0), count: 10, pods: hpaReady(10), reading: hpaExtReading(10), want: 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := hpaQuickConfig(c.metric)
			if c.mod != nil {
				c.mod(&cfg)
			}
			d, _ := hpaRound(cfg, hpaEvaluated(c.count), c.pods, hpaT0, c.reading)
			if d.To != c.want {
				t.Fatalf("to %d, want %d: %s", d.To, c.want, d.Reason)
			}
			checkHPADecision(t, d, c.count)
		})
	}
}

// hpaStep is one round of a sequence: at t0+at, the zone reads total in flight
// over as many ready pods as its count, and the decision goes to want.
type hpaStep struct {
	at     time.Duration
	total  float64
	want   int
	reason string // a substring of the reason, if any
}

func hpaRunSteps(t *testing.T, cfg HPAConfig, st HPAState, steps []hpaStep) HPAState {
	t.Helper()
	for _, s := range steps {
		d, next := hpaRound(cfg, st, hpaReady(st.Count), hpaT0.Add(s.at), hpaInflightReading(s.total))
		if d.To != s.want || !strings.Contains(d.Reason, s.reason) {
			t.Fatalf("at +%s: %d -> %d (%s), want %d with %q", s.at, st.Count, d.To, d.Reason, s.want, s.reason)
		}
		st = next
	}
	return st
}

func TestHPAStabilizationWindows(t *testing.T) {
	t.Run("scale-down window keeps the highest recommendation for 300 s", func(t *testing.T) {
		cfg := DefaultHPAConfig()
		cfg.Metrics = []HPAMetric{hpaInflight(1)}
		hpaRunSteps(t, cfg, HPAState{Count: 10}, []hpaStep{
			{at: 0, total: 10, want: 10},
			{at: 60 * time.Second, total: 4, want: 10, reason: "ScaleDownStabilized: highest recommendation of the last 5m0s is 10, keep 10"},
			{at: 299 * time.Second, total: 4, want: 10, reason: "ScaleDownStabilized"},
			// the 10s of t0 are now exactly 300 s old: out of the window.
			{at: 300 * time.Second, total: 4, want: 4, reason: "all metrics below target"},
		})
	})
	t.Run("first evaluation records the count (upstream recordInitialRecommendation)", func(t *testing.T) {
		cfg := DefaultHPAConfig()
		cfg.Metrics = []HPAMetric{hpaInflight(1)}
		st := hpaRunSteps(t, cfg, HPAState{Count: 10}, []hpaStep{
			{at: 0, total: 2, want: 10, reason: "ScaleDownStabilized: highest recommendation of the last 5m0s is 10"},
		})
		if want := []HPARecommendation{{10, hpaT0}, {2, hpaT0}}; !slices.Equal(st.Recommendations, want) {
			t.Errorf("history %v, want %v", st.Recommendations, want)
		}
		st = hpaRunSteps(t, cfg, st, []hpaStep{{at: 300 * time.Second, total: 2, want: 2}})
		if want := []HPARecommendation{{2, hpaT0.Add(300 * time.Second)}}; !slices.Equal(st.Recommendations, want) {
			t.Errorf("history %v, want only this round's (the others left both windows)", st.Recommendations)
		}
	})
	t.Run("scale-up window keeps the lowest recommendation", func(t *testing.T) {
		cfg := hpaQuickConfig(hpaInflight(1))
		cfg.ScaleUp.StabilizationWindow = time.Minute
		hpaRunSteps(t, cfg, hpaEvaluated(2), []hpaStep{
			{at: 0, total: 2, want: 2},
			{at: 10 * time.Second, total: 8, want: 2, reason: "ScaleUpStabilized: lowest recommendation of the last 1m0s is 2, keep 2"},
			{at: 30 * time.Second, total: 8, want: 2, reason: "ScaleUpStabilized"},
			{at: 61 * time.Second, total: 8, want: 8},
		})
	})
	t.Run("a spike shorter than the scale-up window never scales", func(t *testing.T) {
		cfg := hpaQuickConfig(hpaInflight(1))
		cfg.ScaleUp.StabilizationWindow = time.Minute
		hpaRunSteps(t, cfg, hpaEvaluated(2), []hpaStep{
			{at: 0, total: 2, want: 2},
			{at: 15 * time.Second, total: 9, want: 2},
			{at: 30 * time.Second, total: 9, want: 2},
			{at: 45 * time.Second, total: 2, want: 2},
			{at: 75 * time.Second, total: 2, want: 2},
		})
	})
	t.Run("seed: a 30-minute scale-down window", func(t *testing.T) {
		cfg := DefaultHPAConfig()
		cfg.MinReplicas, cfg.MaxReplicas = 10, 50
		cfg.Metrics = []HPAMetric{hpaInflight(4)}
		cfg.ScaleDown.StabilizationWindow = 1800 * time.Second
		st := hpaEvaluated(30)
		st = hpaRunSteps(t, cfg, st, []hpaStep{{at: 0, total: 120, want: 30}})
		for at := 30 * time.Second; at < 1800*time.Second; at += 30 * time.Second {
			st = hpaRunSteps(t, cfg, st, []hpaStep{{at: at, total: 40, want: 30, reason: "ScaleDownStabilized"}})
		}
		hpaRunSteps(t, cfg, st, []hpaStep{{at: 1800 * time.Second, total: 40, want: 10, reason: "all metrics below target"}})
	})
	t.Run("no window: scale down at once", func(t *testing.T) {
		cfg := hpaQuickConfig(hpaInflight(1))
		hpaRunSteps(t, cfg, HPAState{Count: 10}, []hpaStep{{at: 0, total: 3, want: 3}})
	})
}

func TestHPARatePolicies(t *testing.T) {
	policy := func(typ HPAPolicyType, v int, period time.Duration) HPAScalingPolicy {
		return HPAScalingPolicy{Type: typ, Value: v, Period: period}
	}
	rules := func(sel HPASelectPolicy, ps ...HPAScalingPolicy) HPAScalingRules {
		return HPAScalingRules{SelectPolicy: sel, Policies: ps, Tolerance: 0.1}
	}
	ago := func(d time.Duration) time.Time { return hpaT0.Add(-d) }
	cases := []struct {
		name       string
		up, down   *HPAScalingRules
		count      int
		total      float64 // threshold 1 per replica: the proposal
		upEvents   []HPAScaleEvent
		downEvents []HPAScaleEvent
		want       int
		reason     string
	}{
		{name: "default up: +4 pods beats +100 % from 1", count: 1, total: 100, want: 5, reason: "Max of (+4/15s from 1: 5, +100%/15s from 1: 2)"},
		{name: "default up: +100 % beats +4 pods from 10", count: 10, total: 100, want: 20},
		{name: "default up: the period's earlier +4 counts", count: 5, total: 100, upEvents: []HPAScaleEvent{{Change: 4, At: ago(10 * time.Second)}},
			want: 5, reason: "+4/15s from 1: 5"},
		{name: "default up: an event exactly one period old no longer counts", count: 5, total: 100, upEvents: []HPAScaleEvent{{Change: 4, At: ago(15 * time.Second)}}, want: 10},
		{name: "Pods up", up: hpaPtr(rules(HPASelectMax, policy(HPAPodsPolicy, 2, time.Minute))), count: 2, total: 100, want: 4},
		{name: "Pods up, earlier change in the period", up: hpaPtr(rules(HPASelectMax, policy(HPAPodsPolicy, 2, time.Minute))), count: 4, total: 100,
			upEvents: []HPAScaleEvent{{Change: 2, At: ago(30 * time.Second)}}, want: 4, reason: "ScaleUpLimit"},
		{name: "Percent up rounds up", up: hpaPtr(rules(HPASelectMax, policy(HPAPercentPolicy, 50, time.Minute))), count: 3, total: 100, want: 5},
		{name: "select Max up", up: hpaPtr(rules(HPASelectMax, policy(HPAPodsPolicy, 4, time.Minute), policy(HPAPercentPolicy, 100, time.Minute))), count: 10, total: 100, want: 20},
		{name: "select Min up", up: hpaPtr(rules(HPASelectMin, policy(HPAPodsPolicy, 4, time.Minute), policy(HPAPercentPolicy, 100, time.Minute))), count: 10, total: 100, want: 14},
		{name: "select Disabled up", up: hpaPtr(rules(HPASelectDisabled, policy(HPAPodsPolicy, 4, time.Minute))), count: 10, total: 100, want: 10, reason: "scale-up disabled"},
		{name: "default down: -100 % per 15 s reaches the proposal", count: 10, total: 2, want: 2},
		{name: "Pods down", down: hpaPtr(rules(HPASelectMax, policy(HPAPodsPolicy, 1, time.Minute))), count: 10, total: 2, want: 9},
		{name: "Pods down, earlier change in the period", down: hpaPtr(rules(HPASelectMax, policy(HPAPodsPolicy, 1, time.Minute))), count: 9, total: 2,
			downEvents: []HPAScaleEvent{{Change: 1, At: ago(30 * time.Second)}}, want: 9, reason: "ScaleDownLimit"},
		{name: "Percent down truncates", down: hpaPtr(rules(HPASelectMax, policy(HPAPercentPolicy, 50, time.Minute))), count: 5, total: 1, want: 2},
		{name: "select Max down", down: hpaPtr(rules(HPASelectMax, policy(HPAPodsPolicy, 1, time.Minute), policy(HPAPercentPolicy, 50, time.Minute))), count: 10, total: 1, want: 5},
		{name: "select Min down", down: hpaPtr(rules(HPASelectMin, policy(HPAPodsPolicy, 1, time.Minute), policy(HPAPercentPolicy, 50, time.Minute))), count: 10, total: 1, want: 9},
		{name: "select Disabled down", down: hpaPtr(rules(HPASelectDisabled, policy(HPAPodsPolicy, 1, time.Minute))), count: 10, total: 1, want: 10, reason: "scale-down disabled"},
		// upstream counts both directions' events from the period's start.
		{name: "an up in the period moves the period's start", down: hpaPtr(rules(HPASelectMax, policy(HPAPercentPolicy, 50, time.Minute))), count: 10, total: 1,
			upEvents: []HPAScaleEvent{{Change: 6, At: ago(20 * time.Second)}}, want: 2, reason: "ScaleDownLimit: Max of (-50%/1m0s from 4: 2) allows 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultHPAConfig()
			cfg.MaxReplicas = 1000
			cfg.ScaleDown.StabilizationWindow = 0
			cfg.Metrics = []HPAMetric{hpaInflight(1)}
			if c.up != nil {
				cfg.ScaleUp = *c.up
			}
			if c.down != nil {
				cfg.ScaleDown = *c.down
			}
			st := hpaEvaluated(c.count)
			st.ScaleUpEvents, st.ScaleDownEvents = c.upEvents, c.downEvents
			d, next := hpaRound(cfg, st, hpaReady(c.count), hpaT0, hpaInflightReading(c.total))
			if d.To != c.want || !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("to %d (%s), want %d with %q", d.To, d.Reason, c.want, c.reason)
			}
			checkHPADecision(t, d, c.count)
			if d.To != c.count {
				evs := next.ScaleUpEvents
				if d.To < c.count {
					evs = next.ScaleDownEvents
				}
				if last := evs[len(evs)-1]; last.Change != max(d.To-c.count, c.count-d.To) || !last.At.Equal(hpaT0) {
					t.Errorf("last event %+v, want the change %d at t0", last, d.To-c.count)
				}
			}
		})
	}
}

func hpaPtr[T any](v T) *T { return &v }

func TestHPAFailedMetrics(t *testing.T) {
	other := HPAMetric{Name: "other", Threshold: 1}
	otherReading := func(v float64) HPAMetricReading { return HPAMetricReading{Name: "other", Values: []float64{v}} }
	empty := hpaInflight(1)
	empty.ReadEmptyAsZero = true
	cases := []struct {
		name     string
		metrics  []HPAMetric
		pods     []HPAPod
		readings []HPAMetricReading
		want     int
		reason   string
	}{
		{name: "query error", readings: []HPAMetricReading{{Name: "inflight", Err: "connection refused"}}, want: 5, reason: "inflight failed: connection refused; no metric answered"},
		{name: "no series", readings: []HPAMetricReading{hpaInflightReading()}, want: 5, reason: "inflight failed: no series"},
		{name: "NaN", readings: []HPAMetricReading{hpaInflightReading(math.NaN())}, want: 5, reason: "inflight failed: value NaN"},
		{name: "+Inf", readings: []HPAMetricReading{hpaInflightReading(math.Inf(1))}, want: 5, reason: "value +Inf"},
		{name: "-Inf", readings: []HPAMetricReading{hpaInflightReading(math.Inf(-1))}, want: 5, reason: "value -Inf"},
		{name: "one NaN series among others", readings: []HPAMetricReading{hpaInflightReading(3, math.NaN())}, want: 5, reason: "value NaN"},
		{name: "no reading at all", readings: nil, want: 5, reason: "inflight failed: no reading"},
		{name: "series are summed", readings: []HPAMetricReading{hpaInflightReading(1, 2)}, want: 3},
		{name: "empty read as zero", metrics: []HPAMetric{empty}, readings: []HPAMetricReading{hpaInflightReading()}, want: 1, reason: "inflight 0 / 1 per replica"},
		{name: "NaN read as zero", metrics: []HPAMetric{empty}, readings: []HPAMetricReading{hpaInflightReading(math.NaN())}, want: 1},
		{name: "NaN read as zero, other series kept", metrics: []HPAMetric{empty}, readings: []HPAMetricReading{hpaInflightReading(math.NaN(), 3)}, want: 3},
		{name: "an error is not read as zero", metrics: []HPAMetric{empty}, readings: []HPAMetricReading{{Name: "inflight", Err: "HTTP 503"}}, want: 5},
		{name: "one failed, the other scales up", metrics: []HPAMetric{hpaInflight(1), other},
			readings: []HPAMetricReading{{Name: "inflight", Err: "timeout"}, otherReading(8)}, want: 8, reason: "desired 8: other above target"},
		{name: "one failed, the other would scale down: hold", metrics: []HPAMetric{hpaInflight(1), other},
			readings: []HPAMetricReading{{Name: "inflight", Err: "timeout"}, otherReading(2)}, want: 5, reason: "inflight failed: no scale-down to 2"},
		{name: "one failed, the other at the count: hold", metrics: []HPAMetric{hpaInflight(1), other},
			readings: []HPAMetricReading{hpaInflightReading(), otherReading(5)}, want: 5, reason: "desired 5 = count"},
		{name: "largest proposal wins", metrics: []HPAMetric{hpaInflight(1), other},
			readings: []HPAMetricReading{hpaInflightReading(7), otherReading(9)}, want: 9, reason: "desired 9: other above target"},
		{name: "all below target: down", metrics: []HPAMetric{hpaInflight(1), other},
			readings: []HPAMetricReading{hpaInflightReading(3), otherReading(2)}, want: 3, reason: "all metrics below target"},
		{name: "Pods metric: a NaN sample fails it", metrics: []HPAMetric{{Name: "inflight", Source: HPAPods, Threshold: 1}},
			readings: []HPAMetricReading{{Name: "inflight", PodValues: map[string]float64{"p0": 1, "p1": math.NaN()}}}, want: 5, reason: "pod p1 value NaN"},
		{name: "Pods metric: no sample from a ready pod fails it", metrics: []HPAMetric{{Name: "inflight", Source: HPAPods, Threshold: 1}},
			readings: []HPAMetricReading{{Name: "inflight", PodValues: map[string]float64{"gone": 1}}}, want: 5, reason: "no sample from any ready pod"},
		{name: "Pods metric: no pod listed fails it", metrics: []HPAMetric{{Name: "inflight", Source: HPAPods, Threshold: 1}}, pods: []HPAPod{},
			readings: []HPAMetricReading{{Name: "inflight", PodValues: map[string]float64{"p0": 1}}}, want: 5, reason: "no pods listed"},
		{name: "Value metric: no pod listed fails it", metrics: []HPAMetric{{Name: "inflight", Target: HPAValue, Threshold: 1}}, pods: []HPAPod{},
			readings: []HPAMetricReading{hpaInflightReading(3)}, want: 5, reason: "no pods listed"},
		{name: "AverageValue: no pod listed skips the tolerance", pods: []HPAPod{}, readings: []HPAMetricReading{hpaInflightReading(5.2)}, want: 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := hpaQuickConfig(hpaOr(c.metrics, []HPAMetric{hpaInflight(1)})...)
			pods := hpaReady(5)
			if c.pods != nil {
				pods = c.pods
			}
			d, next := hpaRound(cfg, hpaEvaluated(5), pods, hpaT0, c.readings...)
			if d.To != c.want || !strings.Contains(d.Reason, c.reason) {
				t.Fatalf("to %d (%s), want %d with %q", d.To, d.Reason, c.want, c.reason)
			}
			checkHPADecision(t, d, 5)
			heldForFailure := strings.Contains(d.Reason, "no metric answered") || strings.Contains(d.Reason, "no scale-down")
			if heldForFailure && !reflect.DeepEqual(next.Recommendations, []HPARecommendation{}) {
				t.Errorf("a round held for failed metrics recorded a recommendation: %v", next.Recommendations)
			}
		})
	}
}

func hpaOr[T any](a, b []T) []T {
	if len(a) > 0 {
		return a
	}
	return b
}

func TestHPAFailureCounts(t *testing.T) {
	cfg := hpaQuickConfig(hpaInflight(1), HPAMetric{Name: "other", Threshold: 1})
	st := hpaEvaluated(5)
	st.Failures = map[string]int{"inflight": 2, "gone": 7}
	_, next := hpaRound(cfg, st, hpaReady(5), hpaT0, HPAMetricReading{Name: "inflight", Err: "x"}, HPAMetricReading{Name: "other", Values: []float64{5}})
	if !reflect.DeepEqual(next.Failures, map[string]int{"inflight": 3}) {
		t.Errorf("failures %v, want inflight 3 (and no entry for a metric no longer configured)", next.Failures)
	}
	_, next = hpaRound(cfg, next, hpaReady(5), hpaT0, hpaInflightReading(5), HPAMetricReading{Name: "other", Values: []float64{5}})
	if next.Failures != nil {
		t.Errorf("failures %v after every metric answered, want none", next.Failures)
	}
}

func TestHPAFallback(t *testing.T) {
	cfg := DefaultHPAConfig()
	cfg.Metrics = []HPAMetric{hpaInflight(4)}
	cfg.Fallback = &HPAFallback{FailureThreshold: 3, Replicas: 6}
	fail := HPAMetricReading{Name: "inflight", Err: "connection refused"}

	st := HPAState{Count: 2}
	for i := 1; i <= 3; i++ {
		d, next := hpaRound(cfg, st, hpaReady(2), hpaT0.Add(time.Duration(i)*30*time.Second), fail)
		if d.Action != ActionHold || next.Failures["inflight"] != i {
			t.Fatalf("failed round %d: %s to %d, failures %v: %s", i, d.Action, d.To, next.Failures, d.Reason)
		}
		st = next
	}
	// the 4th failed round in a row is over the threshold of 3 (KEDA: >).
	d, st := hpaRound(cfg, st, hpaReady(2), hpaT0.Add(120*time.Second), fail)
	if d.To != 6 || !strings.Contains(d.Reason, "inflight failed (connection refused) 4 rounds in a row, over the fallback threshold 3: fallback max(count 2, 6) = 6") {
		t.Fatalf("fallback round: to %d: %s", d.To, d.Reason)
	}
	// still failing: the fallback holds at 6.
	d, st = hpaRound(cfg, st, hpaReady(6), hpaT0.Add(150*time.Second), fail)
	if d.To != 6 || st.Failures["inflight"] != 5 {
		t.Fatalf("still failing: to %d, failures %v: %s", d.To, st.Failures, d.Reason)
	}
	// answers again: the count resets; the scale-down waits for its window.
	d, st = hpaRound(cfg, st, hpaReady(6), hpaT0.Add(180*time.Second), hpaInflightReading(4))
	if d.To != 6 || st.Failures != nil || !strings.Contains(d.Reason, "ScaleDownStabilized") {
		t.Fatalf("recovered: to %d, failures %v: %s", d.To, st.Failures, d.Reason)
	}

	t.Run("never below the current count", func(t *testing.T) {
		st := HPAState{Count: 8, Failures: map[string]int{"inflight": 3}}
		d, _ := hpaRound(cfg, st, hpaReady(8), hpaT0, fail)
		if d.To != 8 || !strings.Contains(d.Reason, "fallback max(count 8, 6) = 8") {
			t.Fatalf("to %d: %s", d.To, d.Reason)
		}
	})
	t.Run("threshold 0: the first failure falls back", func(t *testing.T) {
		c := cfg
		c.Fallback = &HPAFallback{FailureThreshold: 0, Replicas: 3}
		d, _ := hpaRound(c, HPAState{Count: 1}, hpaReady(1), hpaT0, fail)
		if d.To != 3 {
			t.Fatalf("to %d: %s", d.To, d.Reason)
		}
	})
	t.Run("a Value metric does not fall back (KEDA: AverageValue only)", func(t *testing.T) {
		c := cfg
		c.Metrics = []HPAMetric{{Name: "inflight", Target: HPAValue, Threshold: 4}}
		d, _ := hpaRound(c, HPAState{Count: 2, Failures: map[string]int{"inflight": 10}}, hpaReady(2), hpaT0, fail)
		if d.To != 2 || !strings.Contains(d.Reason, "no metric answered") {
			t.Fatalf("to %d: %s", d.To, d.Reason)
		}
	})
	t.Run("no fallback configured: hold", func(t *testing.T) {
		c := cfg
		c.Fallback = nil
		d, _ := hpaRound(c, HPAState{Count: 2, Failures: map[string]int{"inflight": 10}}, hpaReady(2), hpaT0, fail)
		if d.To != 2 {
			t.Fatalf("to %d: %s", d.To, d.Reason)
		}
	})
}

func TestHPAMinMax(t *testing.T) {
	cfg := hpaQuickConfig(hpaInflight(1))
	cfg.MinReplicas, cfg.MaxReplicas = 3, 8
	fail := HPAMetricReading{Name: "inflight", Err: "down"}
	cases := []struct {
		name     string
		count    int
		reading  HPAMetricReading
		want     int
		reason   string
		atMaxHot bool
	}{
		{name: "proposal over max", count: 5, reading: hpaInflightReading(20), want: 8, reason: "TooManyReplicas: max 8"},
		{name: "at max and wanting more", count: 8, reading: hpaInflightReading(20), want: 8, reason: "TooManyReplicas: max 8", atMaxHot: true},
		{name: "at max and content", count: 8, reading: hpaInflightReading(8), want: 8},
		{name: "proposal under min", count: 5, reading: hpaInflightReading(1), want: 3, reason: "TooFewReplicas: min 3"},
		{name: "proposal 0", count: 5, reading: hpaInflightReading(0), want: 3, reason: "desired 0: all metrics below target; TooFewReplicas: min 3"},
		{name: "count over max, metrics not read", count: 12, reading: fail, want: 8, reason: "count 12 above max 8"},
		{name: "count under min, metrics not read", count: 1, reading: fail, want: 3, reason: "count 1 below min 3"},
		{name: "count 0: scaling disabled", count: 0, reading: hpaInflightReading(20), want: 0, reason: "scaling disabled"},
		{name: "negative count: invalid", count: -1, reading: hpaInflightReading(20), want: -1, reason: "invalid zone state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, next := hpaRound(cfg, hpaEvaluated(c.count), hpaReady(max(c.count, 0)), hpaT0, c.reading)
			if d.To != c.want || next.Count != c.want || !strings.Contains(d.Reason, c.reason) || d.AtMaxUnderLoad != c.atMaxHot {
				t.Fatalf("to %d (next %d, at max under load %v): %s; want %d with %q, at max %v",
					d.To, next.Count, d.AtMaxUnderLoad, d.Reason, c.want, c.reason, c.atMaxHot)
			}
			checkHPADecision(t, d, c.count)
		})
	}
}

func TestHPAConfigValidate(t *testing.T) {
	valid := DefaultHPAConfig()
	valid.Metrics = []HPAMetric{hpaInflight(4)}
	if err := valid.Validate(); err != nil {
		t.Fatalf("default config with one metric: %v", err)
	}
	if DefaultHPAConfig().Validate() == nil {
		t.Errorf("default config without a metric validated")
	}
	d := DefaultHPAConfig()
	if d.MinReplicas != 1 || d.MaxReplicas != 100 || d.Fallback != nil ||
		d.ScaleUp.StabilizationWindow != 0 || d.ScaleDown.StabilizationWindow != 300*time.Second ||
		d.ScaleUp.Tolerance != 0.1 || d.ScaleDown.Tolerance != 0.1 ||
		!slices.Equal(d.ScaleUp.Policies, []HPAScalingPolicy{{HPAPodsPolicy, 4, 15 * time.Second}, {HPAPercentPolicy, 100, 15 * time.Second}}) ||
		!slices.Equal(d.ScaleDown.Policies, []HPAScalingPolicy{{HPAPercentPolicy, 100, 15 * time.Second}}) {
		t.Errorf("defaults %+v differ from upstream's", d)
	}
	cases := []struct {
		field string
		mod   func(*HPAConfig)
	}{
		{"MinReplicas", func(c *HPAConfig) { c.MinReplicas = 0 }},
		{"MaxReplicas", func(c *HPAConfig) { c.MinReplicas, c.MaxReplicas = 5, 4 }},
		{"Metrics", func(c *HPAConfig) { c.Metrics = nil }},
		{"Metrics[0].Name", func(c *HPAConfig) { c.Metrics[0].Name = "" }},
		{"Metrics[1].Name", func(c *HPAConfig) { c.Metrics = append(c.Metrics, hpaInflight(1)) }},
		{"Metrics[0].Source", func(c *HPAConfig) { c.Metrics[0].Source = "Object" }},
		{"Metrics[0].Target", func(c *HPAConfig) { c.Metrics[0].Target = "Utilization" }},
		{"Metrics[0].Target", func(c *HPAConfig) { c.Metrics[0].Source, c.Metrics[0].Target = HPAPods, HPAValue }},
		{"Metrics[0].Threshold", func(c *HPAConfig) { c.Metrics[0].Threshold = 0 }},
		{"Metrics[0].Threshold", func(c *HPAConfig) { c.Metrics[0].Threshold = math.Inf(1) }},
		{"Metrics[0].ReadEmptyAsZero", func(c *HPAConfig) { c.Metrics[0].Source, c.Metrics[0].ReadEmptyAsZero = HPAPods, true }},
		{"ScaleDown.StabilizationWindow", func(c *HPAConfig) { c.ScaleDown.StabilizationWindow = 3601 * time.Second }},
		{"ScaleUp.StabilizationWindow", func(c *HPAConfig) { c.ScaleUp.StabilizationWindow = -time.Second }},
		{"ScaleUp.SelectPolicy", func(c *HPAConfig) { c.ScaleUp.SelectPolicy = "Fastest" }},
		{"ScaleDown.Policies", func(c *HPAConfig) { c.ScaleDown.Policies = nil }},
		{"ScaleUp.Policies[0].Type", func(c *HPAConfig) { c.ScaleUp.Policies[0].Type = "Replicas" }},
		{"ScaleUp.Policies[0].Value", func(c *HPAConfig) { c.ScaleUp.Policies[0].Value = 0 }},
		{"ScaleUp.Policies[1].Period", func(c *HPAConfig) { c.ScaleUp.Policies[1].Period = 31 * time.Minute }},
		{"ScaleDown.Policies[0].Period", func(c *HPAConfig) { c.ScaleDown.Policies[0].Period = 0 }},
		{"ScaleDown.Tolerance", func(c *HPAConfig) { c.ScaleDown.Tolerance = -0.1 }},
		{"ScaleUp.Tolerance", func(c *HPAConfig) { c.ScaleUp.Tolerance = math.NaN() }},
		{"Fallback.FailureThreshold", func(c *HPAConfig) { c.Fallback = &HPAFallback{FailureThreshold: -1} }},
		{"Fallback.Replicas", func(c *HPAConfig) { c.Fallback = &HPAFallback{Replicas: -1} }},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			cfg := valid
			cfg.Metrics = slices.Clone(valid.Metrics)
			cfg.ScaleUp.Policies = slices.Clone(valid.ScaleUp.Policies)
			cfg.ScaleDown.Policies = slices.Clone(valid.ScaleDown.Policies)
			c.mod(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), " "+c.field+" = ") {
				t.Fatalf("error %v, want one naming %s", err, c.field)
			}
			d, _ := hpaRound(cfg, hpaEvaluated(3), hpaReady(3), hpaT0, hpaInflightReading(100))
			if d.Action != ActionHold || !strings.HasPrefix(d.Reason, "invalid hpa config: ") {
				t.Errorf("invalid config decided %s: %s", d.Action, d.Reason)
			}
		})
	}
	t.Run("boundaries are valid", func(t *testing.T) {
		cfg := valid
		cfg.MinReplicas, cfg.MaxReplicas = 7, 7
		cfg.ScaleDown.StabilizationWindow = time.Hour
		cfg.ScaleUp.Policies = []HPAScalingPolicy{{HPAPodsPolicy, 1, 30 * time.Minute}}
		cfg.ScaleUp.Tolerance, cfg.ScaleDown.Tolerance = 0, 0
		cfg.ScaleUp.SelectPolicy = ""
		cfg.Fallback = &HPAFallback{}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHPAPure(t *testing.T) {
	cfg := DefaultHPAConfig()
	cfg.Metrics = []HPAMetric{hpaInflight(4), {Name: "qps", Source: HPAPods, Threshold: 10}}
	cfg.Fallback = &HPAFallback{FailureThreshold: 1, Replicas: 3}
	// slices with spare capacity: an append must not write into them.
	recs := make([]HPARecommendation, 2, 8)
	recs[0] = HPARecommendation{Replicas: 4, At: hpaT0.Add(-time.Minute)}
	recs[1] = HPARecommendation{Replicas: 9, At: hpaT0.Add(-time.Hour)}
	ups := make([]HPAScaleEvent, 2, 8)
	ups[0] = HPAScaleEvent{Change: 2, At: hpaT0.Add(-5 * time.Second)}
	ups[1] = HPAScaleEvent{Change: 1, At: hpaT0.Add(-time.Hour)}
	st := HPAState{Count: 4, LastChange: hpaT0.Add(-time.Minute), Recommendations: recs, ScaleUpEvents: ups,
		Failures: map[string]int{"inflight": 1}}
	obs := HPAObservation{Pods: hpaPodList("RRUP"), Metrics: []HPAMetricReading{
		{Name: "inflight", Values: []float64{40}},
		{Name: "qps", PodValues: map[string]float64{"p0": 30, "p1": 40}},
	}}
	stCopy := st.clone()
	stSpare := slices.Clone(recs[:cap(recs)])
	obsCopy := HPAObservation{Pods: slices.Clone(obs.Pods), Metrics: slices.Clone(obs.Metrics)}
	obsCopy.Metrics[1].PodValues = map[string]float64{"p0": 30, "p1": 40}

	d1, next1 := HPA(cfg, st, obs, hpaT0)
	d2, next2 := HPA(cfg, st, obs, hpaT0)
	if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(next1, next2) {
		t.Errorf("two evaluations differ:\n%+v\n%+v", d1, d2)
	}
	if !reflect.DeepEqual(st, stCopy) || !slices.Equal(recs[:cap(recs)], stSpare) {
		t.Errorf("state modified:\n%+v\nwant\n%+v", st, stCopy)
	}
	if !reflect.DeepEqual(obs, obsCopy) {
		t.Errorf("observation modified")
	}
	// inflight wants 40/4 = 10, qps 7; the +2 of 5 s ago leaves +4 from 2.
	if d1.Action != ActionUp || d1.To != 6 {
		t.Fatalf("%s to %d: %s", d1.Action, d1.To, d1.Reason)
	}
	// the hour-old record and event are dropped; this round's are added.
	if len(next1.Recommendations) != 2 || len(next1.ScaleUpEvents) != 2 {
		t.Errorf("history %v, events %v", next1.Recommendations, next1.ScaleUpEvents)
	}
}

// TestHPAReasonsGolden runs the seed's staged load (k6 ramping VUs: 5→50
// over 2 min, 50 for 1 min, spike to 100 and back twice, 50→0 over 2 min)
// through the seed's ScaledObject and compares every decision with
// testdata/hpa_seed_rounds.golden (go test -run TestHPAReasonsGolden
// -update-hpa to refresh).
func TestHPAReasonsGolden(t *testing.T) {
	cfg := DefaultHPAConfig()
	cfg.MinReplicas, cfg.MaxReplicas = 10, 50
	cfg.Metrics = []HPAMetric{hpaInflight(4)}
	cfg.ScaleDown.StabilizationWindow = 1800 * time.Second
	cfg.Fallback = &HPAFallback{FailureThreshold: 3, Replicas: 20}

	// in flight per 30 s polling round (about 2 per VU), then a Prometheus
	// outage of five rounds, then quiet.
	load := []float64{10, 40, 70, 100, 100, 100, 150, 100, 150, 100, 75, 50, 25, 0}
	var b strings.Builder
	st := HPAState{Count: 10}
	at := time.Duration(0)
	var last string // the previous line without its time
	same := 0
	flush := func() {
		if same > 0 {
			fmt.Fprintf(&b, "        (same for the next %s)\n", plural(same, "round"))
			same = 0
		}
	}
	emit := func(r HPAMetricReading) {
		d, next := hpaRound(cfg, st, hpaReady(st.Count), hpaT0.Add(at), r)
		line := fmt.Sprintf("%-4s %2d -> %2d  %s", d.Action, d.From, d.To, d.Reason)
		if line == last {
			same++
		} else {
			flush()
			fmt.Fprintf(&b, "+%-6s %s\n", at, line)
			last = line
		}
		st = next
		at += 30 * time.Second
	}
	for _, v := range load {
		emit(hpaInflightReading(v))
	}
	for range 5 {
		emit(HPAMetricReading{Name: "inflight", Err: "connection refused"})
	}
	for at < 42*time.Minute {
		emit(hpaInflightReading(0))
	}
	flush()
	hpaCompareGolden(t, "hpa_seed_rounds.golden", b.String())
}

func hpaCompareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateHPA {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-hpa to create it)", err)
	}
	if got != string(want) {
		t.Errorf("decisions differ from %s (run with -update-hpa to refresh):\n%s", path, got)
	}
}

func BenchmarkHPA(b *testing.B) {
	cfg := DefaultHPAConfig()
	cfg.MaxReplicas = 200
	cfg.Metrics = []HPAMetric{hpaInflight(4), {Name: "qps", Source: HPAPods, Threshold: 50}, {Name: "queue", Target: HPAValue, Threshold: 100}}
	pods := hpaReady(50)
	samples := map[string]float64{}
	for i, p := range pods {
		samples[p.Name] = float64(40 + i%20)
	}
	obs := HPAObservation{Pods: pods, Metrics: []HPAMetricReading{
		{Name: "inflight", Values: []float64{230.5}},
		{Name: "qps", PodValues: samples},
		{Name: "queue", Values: []float64{120, 3.25}},
	}}
	st := HPAState{Count: 50}
	for i := range 20 {
		st.Recommendations = append(st.Recommendations, HPARecommendation{Replicas: 50 + i, At: hpaT0.Add(-time.Duration(i) * 15 * time.Second)})
	}
	st.ScaleUpEvents = []HPAScaleEvent{{Change: 4, At: hpaT0.Add(-10 * time.Second)}}
	b.ReportAllocs()
	for b.Loop() {
		HPA(cfg, st, obs, hpaT0)
	}
}
