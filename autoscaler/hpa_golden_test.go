package autoscaler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Golden cases restated from the upstream tests (kubernetes/kubernetes
// pkg/controller/podautoscaler/replica_calculator_test.go and
// horizontal_test.go): the same inputs, our types, the upstream expected
// replica count. Each case names the upstream test it restates.
//
// How upstream inputs map to ours:
//   - milli-values are written as units (levels 20000 with target 15000 are
//     20 and 15);
//   - a CPU utilization target U% with 1.0-CPU requests is a Pods metric
//     with threshold U% of the request (targetUtilization 30 with levels
//     300, 500, 700 is threshold 300 with samples 300, 500, 700): with equal
//     requests the ratios are the same;
//   - a CPU pod whose Ready condition is False is unready for CPU
//     (groupPods); it is restated as a Pending pod, which our Pods metrics
//     treat as unready. A custom-metric pod whose Ready condition is False
//     stays a running pod that is not ready ("U" below), as upstream;
//   - Object metrics have the arithmetic of External ones: Value targets as
//     External Value, AverageValue targets as External AverageValue;
//   - pod states: R running and ready, U running and not ready, P pending,
//     F failed, D being deleted.

var hpaT0 = time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)

// hpaPodList returns pods p0, p1, … in the given states (see above).
func hpaPodList(states string) []HPAPod {
	pods := make([]HPAPod, 0, len(states))
	for i, s := range states {
		p := HPAPod{Name: fmt.Sprintf("p%d", i), Phase: HPAPodRunning, Ready: true}
		switch s {
		case 'U':
			p.Ready = false
		case 'P':
			p.Phase, p.Ready = HPAPodPending, false
		case 'F':
			p.Phase, p.Ready = HPAPodFailed, false
		case 'D':
			p.Deleting, p.Ready = true, false
		}
		pods = append(pods, p)
	}
	return pods
}

// hpaReady returns n running, ready pods.
func hpaReady(n int) []HPAPod { return hpaPodList(strings.Repeat("R", n)) }

// hpaPodSamples is a reading of the Pods metric "qps" with samples for p0, p1, …
// in order; pods past the last sample are missing theirs.
func hpaPodSamples(vs ...float64) HPAMetricReading {
	m := map[string]float64{}
	for i, v := range vs {
		m[fmt.Sprintf("p%d", i)] = v
	}
	return HPAMetricReading{Name: "qps", PodValues: m}
}

// hpaExtReading is a reading of the External metric "qps" with these series.
func hpaExtReading(vs ...float64) HPAMetricReading {
	return HPAMetricReading{Name: "qps", Values: vs}
}

func hpaPodsMetric(threshold float64) HPAMetric {
	return HPAMetric{Name: "qps", Source: HPAPods, Target: HPAAverageValue, Threshold: threshold}
}

func hpaExtValue(threshold float64) HPAMetric {
	return HPAMetric{Name: "qps", Source: HPAExternal, Target: HPAValue, Threshold: threshold}
}

func hpaExtAverage(threshold float64) HPAMetric {
	return HPAMetric{Name: "qps", Source: HPAExternal, Target: HPAAverageValue, Threshold: threshold}
}

// hpaCalcConfig isolates the replica calculator, as replica_calculator_test
// does: no stabilization, a rate that never binds, max 1000.
func hpaCalcConfig(m HPAMetric) HPAConfig {
	c := DefaultHPAConfig()
	c.MaxReplicas = 1000
	c.Metrics = []HPAMetric{m}
	c.ScaleUp.Policies = []HPAScalingPolicy{{Type: HPAPodsPolicy, Value: 1000, Period: 15 * time.Second}}
	c.ScaleDown.StabilizationWindow = 0
	return c
}

// hpaControllerConfig is the HPA of a horizontal_test case: its min and max,
// default behaviour (upstream's tests without behaviour run the legacy
// normalizeDesiredReplicas, which the default behaviour matches for every
// case below), and the given metrics.
func hpaControllerConfig(minR, maxR int, ms ...HPAMetric) HPAConfig {
	c := DefaultHPAConfig()
	c.MinReplicas, c.MaxReplicas = minR, maxR
	c.Metrics = ms
	return c
}

type hpaGoldenCase struct {
	upstream string // the upstream test restated
	cfg      HPAConfig
	count    int
	pods     []HPAPod
	readings []HPAMetricReading
	// first: the zone was never evaluated (nil recommendations). Upstream
	// tests with `recommendations: []timestampedRecommendation{}` start
	// with an empty, non-nil history instead.
	first bool
	want  int
}

func hpaGoldenCases() []hpaGoldenCase {
	failed := func(name string) HPAMetricReading { return HPAMetricReading{Name: name, Err: "something went wrong"} }
	other := HPAMetric{Name: "other", Source: HPAExternal, Target: HPAValue, Threshold: 1}
	return []hpaGoldenCase{
		// The seed's worked example: 1 replica, 20 in flight, threshold 4
		// (KEDA Prometheus trigger, AverageValue): ceil(20 / 4) = 5.
		{upstream: "seed 000: ceil[1 × (20 / 4)] = 5", cfg: hpaControllerConfig(1, 50, hpaExtAverage(4)),
			count: 1, pods: hpaReady(1), readings: []HPAMetricReading{hpaExtReading(20)}, want: 5},

		// replica_calculator_test.go
		{upstream: "TestReplicaCalcScaleUp", cfg: hpaCalcConfig(hpaPodsMetric(300)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(300, 500, 700)}, want: 5},
		{upstream: "TestReplicaCalcScaleUpUnreadyLessScale", cfg: hpaCalcConfig(hpaPodsMetric(300)),
			count: 3, pods: hpaPodList("PRR"), readings: []HPAMetricReading{hpaPodSamples(300, 500, 700)}, want: 4},
		{upstream: "TestReplicaCalcScaleUpUnreadyNoScale", cfg: hpaCalcConfig(hpaPodsMetric(300)),
			count: 3, pods: hpaPodList("RPP"), readings: []HPAMetricReading{hpaPodSamples(400, 500, 700)}, want: 3},
		{upstream: "TestReplicaCalcScaleUpIgnoresFailedPods", cfg: hpaCalcConfig(hpaPodsMetric(300)),
			count: 2, pods: hpaPodList("RRFF"), readings: []HPAMetricReading{hpaPodSamples(500, 700)}, want: 4},
		{upstream: "TestReplicaCalcScaleUpIgnoresDeletionPods", cfg: hpaCalcConfig(hpaPodsMetric(300)),
			count: 2, pods: hpaPodList("RRDD"), readings: []HPAMetricReading{hpaPodSamples(500, 700)}, want: 4},
		{upstream: "TestReplicaCalcScaleUpCM", cfg: hpaCalcConfig(hpaPodsMetric(15)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(20, 10, 30)}, want: 4},
		{upstream: "TestReplicaCalcScaleUpCMUnreadyHotCpuNoLessScale", cfg: hpaCalcConfig(hpaPodsMetric(15)),
			count: 3, pods: hpaPodList("RRU"), readings: []HPAMetricReading{hpaPodSamples(50, 10, 30)}, want: 6},
		{upstream: "TestReplicaCalcScaleUpCMUnreadyHotCpuScaleWouldScaleDown", cfg: hpaCalcConfig(hpaPodsMetric(15)),
			count: 3, pods: hpaPodList("URU"), readings: []HPAMetricReading{hpaPodSamples(50, 15, 30)}, want: 7},
		{upstream: "TestReplicaCalcScaleUpCMExternal (a pod metric)", cfg: hpaCalcConfig(hpaPodsMetric(4.4)),
			count: 1, pods: hpaReady(1), readings: []HPAMetricReading{hpaPodSamples(8.6)}, want: 2},
		{upstream: "TestReplicaCalcScaleUpCMExternalIgnoresUnreadyPods", cfg: hpaCalcConfig(hpaExtValue(4.4)),
			count: 3, pods: hpaPodList("URU"), readings: []HPAMetricReading{hpaExtReading(8.6)}, want: 2},
		{upstream: "TestReplicaCalcScaleUpPerPodCMExternal", cfg: hpaCalcConfig(hpaExtAverage(2.15)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaExtReading(8.6)}, want: 4},
		{upstream: "TestReplicaCalcScaleUpCMObject", cfg: hpaCalcConfig(hpaExtValue(15)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaExtReading(20)}, want: 4},
		{upstream: "TestReplicaCalcScaleUpCMPerPodObject", cfg: hpaCalcConfig(hpaExtAverage(5)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaExtReading(20)}, want: 4},
		{upstream: "TestReplicaCalcScaleUpCMObjectIgnoresUnreadyPods", cfg: hpaCalcConfig(hpaExtValue(10)),
			count: 3, pods: hpaPodList("URU"), readings: []HPAMetricReading{hpaExtReading(50)}, want: 5},
		{upstream: "TestReplicaCalcScaleDown", cfg: hpaCalcConfig(hpaPodsMetric(500)),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaPodSamples(100, 300, 500, 250, 250)}, want: 3},
		{upstream: "TestReplicaCalcScaleDownCM", cfg: hpaCalcConfig(hpaPodsMetric(20)),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaPodSamples(12, 12, 12, 12, 12)}, want: 3},
		{upstream: "TestReplicaCalcScaleDownPerPodCMObject", cfg: hpaCalcConfig(hpaExtAverage(2)),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaExtReading(6)}, want: 3},
		{upstream: "TestReplicaCalcScaleDownCMObject", cfg: hpaCalcConfig(hpaExtValue(20)),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaExtReading(12)}, want: 3},
		{upstream: "TestReplicaCalcScaleDownCMExternal", cfg: hpaCalcConfig(hpaExtValue(14.334)),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaExtReading(8.6)}, want: 3},
		{upstream: "TestReplicaCalcScaleDownPerPodCMExternal", cfg: hpaCalcConfig(hpaExtAverage(2.867)),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaExtReading(8.6)}, want: 3},
		{upstream: "TestReplicaCalcScaleDownExcludeUnreadyPods", cfg: hpaCalcConfig(hpaPodsMetric(500)),
			count: 5, pods: hpaPodList("RRRPP"), readings: []HPAMetricReading{hpaPodSamples(100, 300, 500, 250, 250)}, want: 2},
		{upstream: "TestReplicaCalcScaleDownExcludeUnscheduledPods", cfg: hpaCalcConfig(hpaPodsMetric(500)),
			count: 5, pods: hpaPodList("RPPPP"), readings: []HPAMetricReading{hpaPodSamples(100)}, want: 1},
		{upstream: "TestReplicaCalcScaleDownIgnoresFailedPods", cfg: hpaCalcConfig(hpaPodsMetric(500)),
			count: 5, pods: hpaPodList("RRRRRFF"), readings: []HPAMetricReading{hpaPodSamples(100, 300, 500, 250, 250)}, want: 3},
		{upstream: "TestReplicaCalcScaleDownIgnoresDeletionPods", cfg: hpaCalcConfig(hpaPodsMetric(500)),
			count: 5, pods: hpaPodList("RRRRRDD"), readings: []HPAMetricReading{hpaPodSamples(100, 300, 500, 250, 250)}, want: 3},
		// requests 0.9, 1.0, 1.1 sum to 3 × 1.0: the ratio is the average's.
		{upstream: "TestReplicaCalcTolerance", cfg: hpaCalcConfig(hpaPodsMetric(1000)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(1010, 1030, 1020)}, want: 3},
		{upstream: "TestReplicaCalcToleranceCM", cfg: hpaCalcConfig(hpaPodsMetric(20)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(20, 21, 21)}, want: 3},
		{upstream: "TestReplicaCalcToleranceCMObject", cfg: hpaCalcConfig(hpaExtValue(20)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaExtReading(20.666)}, want: 3},
		{upstream: "TestReplicaCalcTolerancePerPodCMObject", cfg: hpaCalcConfig(hpaExtAverage(5)),
			count: 4, pods: hpaReady(4), readings: []HPAMetricReading{hpaExtReading(20.166)}, want: 4},
		{upstream: "TestReplicaCalcToleranceCMExternal", cfg: hpaCalcConfig(hpaExtValue(8.888)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaExtReading(8.6)}, want: 3},
		{upstream: "TestReplicaCalcTolerancePerPodCMExternal", cfg: hpaCalcConfig(hpaExtAverage(2.9)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaExtReading(8.6)}, want: 3},
		// samples for six pods, four listed: the two extra are ignored.
		{upstream: "TestReplicaCalcSuperfluousMetrics", cfg: hpaCalcConfig(hpaPodsMetric(1000)),
			count: 4, pods: hpaReady(4), readings: []HPAMetricReading{hpaPodSamples(4000, 9500, 3000, 7000, 3200, 2000)}, want: 24},
		{upstream: "TestReplicaCalcMissingMetrics", cfg: hpaCalcConfig(hpaPodsMetric(1000)),
			count: 4, pods: hpaReady(4), readings: []HPAMetricReading{hpaPodSamples(400, 95)}, want: 3},
		{upstream: "TestPlainMetricReplicaCalcMissingMetricsNoChangeEq", cfg: hpaCalcConfig(hpaPodsMetric(20)),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaPodSamples(20, 19, 21)}, want: 5},
		{upstream: "TestReplicaCalcMissingMetricsNoChangeEq", cfg: hpaCalcConfig(hpaPodsMetric(1000)),
			count: 2, pods: hpaReady(2), readings: []HPAMetricReading{hpaPodSamples(1000)}, want: 2},
		{upstream: "TestReplicaCalcMissingMetricsNoChangeGt", cfg: hpaCalcConfig(hpaPodsMetric(1000)),
			count: 2, pods: hpaReady(2), readings: []HPAMetricReading{hpaPodSamples(1900)}, want: 2},
		{upstream: "TestReplicaCalcMissingMetricsNoChangeLt", cfg: hpaCalcConfig(hpaPodsMetric(1000)),
			count: 2, pods: hpaReady(2), readings: []HPAMetricReading{hpaPodSamples(600)}, want: 2},
		{upstream: "TestReplicaCalcMissingMetricsUnreadyScaleUp", cfg: hpaCalcConfig(hpaPodsMetric(500)),
			count: 3, pods: hpaPodList("PRR"), readings: []HPAMetricReading{hpaPodSamples(100, 2000)}, want: 4},
		// a missing pod counts at the target (plain metric), not at 100 % of
		// its request (CPU): (450 + 500) / 2 / 500 = 0.95 is within
		// tolerance; upstream's CPU arithmetic flips direction. Both keep 3.
		{upstream: "TestReplicaCalcMissingMetricsUnreadyChange", cfg: hpaCalcConfig(hpaPodsMetric(500)),
			count: 3, pods: hpaPodList("PRR"), readings: []HPAMetricReading{hpaPodSamples(100, 450)}, want: 3},
		{upstream: "TestReplicaCalcDuringRollingUpdateWithMaxSurgeCM", cfg: hpaCalcConfig(hpaPodsMetric(17)),
			count: 2, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(10, 10)}, want: 2},
		// (100 + 100 + 500) / 3 / 500 → ceil(1.4) = 2 here, ceil(2.4) = 3 →
		// kept (direction) upstream: both 2.
		{upstream: "TestReplicaCalcDuringRollingUpdateWithMaxSurge", cfg: hpaCalcConfig(hpaPodsMetric(500)),
			count: 2, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(100, 100)}, want: 2},

		// horizontal_test.go: the whole reconcile, default behaviour.
		{upstream: "TestScaleUpDeployment", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(300)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(300, 500, 700)}, want: 5},
		{upstream: "TestScaleUpCM", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(15)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(20, 10, 30)}, want: 4},
		{upstream: "TestScaleUpCMUnreadyAndHotCpuNoLessScale", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(15)),
			count: 3, pods: hpaPodList("RRU"), readings: []HPAMetricReading{hpaPodSamples(50, 10, 30)}, want: 6},
		{upstream: "TestScaleUpCMUnreadyandCpuHot (TooManyReplicas)", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(15)),
			count: 3, pods: hpaPodList("URU"), readings: []HPAMetricReading{hpaPodSamples(50, 15, 30)}, want: 6},
		{upstream: "TestScaleUpHotCpuNoScaleWouldScaleDown", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(15)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(50, 15, 30)}, want: 6},
		{upstream: "TestScaleUpCMExternal", cfg: hpaControllerConfig(2, 6, hpaExtValue(6.666)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaExtReading(8.6)}, want: 4},
		{upstream: "TestScaleUpPerPodCMExternal", cfg: hpaControllerConfig(2, 6, hpaExtAverage(2.222)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaExtReading(8.6)}, want: 4},
		{upstream: "TestScaleDown", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(500)),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaPodSamples(100, 300, 500, 250, 250)}, want: 3},
		{upstream: "TestScaleDownStabilizeInitialSize", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(500)),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaPodSamples(100, 300, 500, 250, 250)}, first: true, want: 5},
		{upstream: "TestScaleDownWithScalingRules", cfg: func() HPAConfig {
			c := hpaControllerConfig(2, 6, hpaPodsMetric(500))
			c.ScaleUp.StabilizationWindow = 30 * time.Second
			c.ScaleUp.Policies = []HPAScalingPolicy{{Type: HPAPercentPolicy, Value: 100, Period: 15 * time.Second}}
			return c
		}(), count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaPodSamples(100, 300, 500, 250, 250)}, want: 3},
		{upstream: "TestScaleDownCM", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(20)),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaPodSamples(12, 12, 12, 12, 12)}, want: 3},
		{upstream: "TestScaleUpOneMetricInvalid", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(300), other),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(300, 400, 500), failed("other")}, want: 4},
		// the external metric's query errs; here its reading is absent.
		{upstream: "TestScaleUpOneMetricEmpty", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(300), other),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(300, 400, 500)}, want: 4},
		{upstream: "TestNoScaleDownOneMetricInvalid", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(500), other),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaPodSamples(100, 300, 500, 250, 250), failed("other")}, want: 5},
		// the external metric's query errs; here it returns no series.
		{upstream: "TestNoScaleDownOneMetricEmpty", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(500), other),
			count: 5, pods: hpaReady(5), readings: []HPAMetricReading{hpaPodSamples(100, 300, 500, 250, 250), {Name: "other"}}, want: 5},
		{upstream: "TestScaleUpBothMetricsEmpty", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(300), other),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(), failed("other")}, want: 3},
		{upstream: "TestToleranceCMExternal", cfg: hpaControllerConfig(2, 6, hpaExtValue(8.666)),
			count: 4, pods: hpaReady(4), readings: []HPAMetricReading{hpaExtReading(8.6)}, want: 4},
		{upstream: "TestTolerancePerPodCMExternal", cfg: hpaControllerConfig(2, 6, hpaExtAverage(2.2)),
			count: 4, pods: hpaReady(4), readings: []HPAMetricReading{hpaExtReading(8.6)}, want: 4},
		{upstream: "TestMinReplicas", cfg: hpaControllerConfig(2, 5, hpaPodsMetric(900)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(10, 95, 10)}, want: 2},
		{upstream: "TestMinReplicasDesiredZero", cfg: hpaControllerConfig(2, 5, hpaPodsMetric(900)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(0, 0, 0)}, want: 2},
		{upstream: "TestZeroReplicas", cfg: hpaControllerConfig(3, 5, hpaPodsMetric(900)),
			count: 0, want: 0},
		{upstream: "TestTooFewReplicas", cfg: hpaControllerConfig(3, 5, hpaPodsMetric(900)),
			count: 2, want: 3},
		{upstream: "TestTooManyReplicas", cfg: hpaControllerConfig(3, 5, hpaPodsMetric(900)),
			count: 10, want: 5},
		// requests 0.9, 1.0, 1.1: utilization 18500 / 3000 over 90 %.
		{upstream: "TestMaxReplicas", cfg: hpaControllerConfig(2, 5, hpaPodsMetric(900)),
			count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(8000, 9500, 1000)}, want: 5},
		{upstream: "TestSuperfluousMetrics", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(1000)),
			count: 4, pods: hpaReady(4), readings: []HPAMetricReading{hpaPodSamples(4000, 9500, 3000, 7000, 3200, 2000)}, want: 6},
		{upstream: "TestMissingMetrics", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(1000)),
			count: 4, pods: hpaReady(4), readings: []HPAMetricReading{hpaPodSamples(400, 95)}, want: 3},
		{upstream: "TestEmptyMetrics", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(1000)),
			count: 4, pods: hpaReady(4), readings: []HPAMetricReading{hpaPodSamples()}, want: 4},
		{upstream: "TestEventCreated", cfg: hpaControllerConfig(1, 5, hpaPodsMetric(100)),
			count: 1, pods: hpaReady(1), readings: []HPAMetricReading{hpaPodSamples(200)}, want: 2},
		{upstream: "TestEventNotCreated", cfg: hpaControllerConfig(1, 5, hpaPodsMetric(200)),
			count: 2, pods: hpaReady(2), readings: []HPAMetricReading{hpaPodSamples(200, 200)}, want: 2},
		{upstream: "TestMissingReports", cfg: hpaControllerConfig(1, 5, hpaPodsMetric(100)),
			count: 4, pods: hpaReady(1), readings: []HPAMetricReading{hpaPodSamples(200)}, want: 2},
		{upstream: "TestUpscaleCap (ScaleUpLimit +700 %)", cfg: func() HPAConfig {
			c := hpaControllerConfig(1, 100, hpaPodsMetric(10))
			c.ScaleUp.Policies = []HPAScalingPolicy{{Type: HPAPercentPolicy, Value: 700, Period: time.Minute}}
			return c
		}(), count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(100, 200, 300)}, want: 24},
		{upstream: "TestUpscaleCapGreaterThanMaxReplicas", cfg: func() HPAConfig {
			c := hpaControllerConfig(1, 20, hpaPodsMetric(10))
			c.ScaleUp.Policies = []HPAScalingPolicy{{Type: HPAPercentPolicy, Value: 700, Period: time.Minute}}
			return c
		}(), count: 3, pods: hpaReady(3), readings: []HPAMetricReading{hpaPodSamples(100, 200, 300)}, want: 20},
		{upstream: "TestMoreReplicasThanSpecNoScale", cfg: hpaControllerConfig(1, 8, hpaPodsMetric(500)),
			count: 4, pods: hpaReady(5), readings: []HPAMetricReading{hpaPodSamples(500, 500, 500, 500, 500)}, want: 4},
		{upstream: "TestScaleUpRCImmediately", cfg: hpaControllerConfig(2, 6, hpaPodsMetric(500)),
			count: 1, pods: hpaReady(1), want: 2},
		{upstream: "TestScaleDownRCImmediately", cfg: hpaControllerConfig(2, 5, hpaPodsMetric(500)),
			count: 6, pods: hpaReady(6), want: 5},
	}
}

func TestHPAGoldenUpstream(t *testing.T) {
	cases := hpaGoldenCases()
	if n := len(cases) - 1; n < 20 {
		t.Fatalf("%d upstream cases, want at least 20", n)
	}
	for _, tc := range cases {
		t.Run(tc.upstream, func(t *testing.T) {
			st := HPAState{Count: tc.count}
			if !tc.first {
				st.Recommendations = []HPARecommendation{}
			}
			d, next := HPA(tc.cfg, st, HPAObservation{Pods: tc.pods, Metrics: tc.readings}, hpaT0)
			if d.To != tc.want || next.Count != tc.want {
				t.Fatalf("to %d (next count %d), want %d; %s: %s", d.To, next.Count, tc.want, d.Action, d.Reason)
			}
			checkHPADecision(t, d, tc.count)
		})
	}
}

// checkHPADecision checks a decision's invariants: the action matches From
// and To, and every decision has a reason.
func checkHPADecision(t *testing.T, d Decision, from int) {
	t.Helper()
	want := ActionHold
	switch {
	case d.To > from:
		want = ActionUp
	case d.To < from:
		want = ActionDown
	}
	if d.From != from || d.Action != want || d.Reason == "" || !d.At.Equal(hpaT0) {
		t.Errorf("decision %+v: want from %d, action %s, a reason", d, from, want)
	}
}

// hpaRules is upstream's generateScalingRules over a direction's defaults:
// the given policies (zero values leave a policy out; none at all keeps the
// default ones, as GenerateHPAScale{Up,Down}Rules), selectPolicy Max, and
// the stabilization window in seconds.
func hpaRules(def HPAScalingRules, pods, podsPeriod, percent, percentPeriod, window int) HPAScalingRules {
	r := def
	r.SelectPolicy = HPASelectMax
	r.StabilizationWindow = time.Duration(window) * time.Second
	var ps []HPAScalingPolicy
	if pods != 0 {
		ps = append(ps, HPAScalingPolicy{Type: HPAPodsPolicy, Value: pods, Period: time.Duration(podsPeriod) * time.Second})
	}
	if percent != 0 {
		ps = append(ps, HPAScalingPolicy{Type: HPAPercentPolicy, Value: percent, Period: time.Duration(percentPeriod) * time.Second})
	}
	if ps != nil {
		r.Policies = ps
	}
	return r
}

// hpaUniformEvents is upstream's generateEventsUniformDistribution: the
// events spread over the last period seconds, each in the middle of its
// segment, the first the oldest.
func hpaUniformEvents(changes []int, period int, now time.Time) []HPAScaleEvent {
	evs := make([]HPAScaleEvent, len(changes))
	seg := float64(period) / float64(len(changes))
	for i, c := range changes {
		ago := float64(period) - seg*float64(i+1) + seg/2
		evs[i] = HPAScaleEvent{Change: c, At: now.Add(-time.Duration(ago * float64(time.Second)))}
	}
	return evs
}

// TestHPAGoldenScalingWithRules restates horizontal_test.go
// TestScalingWithRules: convertDesiredReplicasWithBehaviorRate alone
// (limitHPA), with the upstream case names and expected conditions.
func TestHPAGoldenScalingWithRules(t *testing.T) {
	up, down := DefaultHPAScaleUpRules(), DefaultHPAScaleDownRules()
	type tc struct {
		name              string
		upEvents, dnEvent []HPAScaleEvent
		minR, maxR        int
		upRules, dnRules  *HPAScalingRules
		current, desired  int
		want              int
		condition         string // "" is upstream's DesiredWithinRange
	}
	rules := func(r HPAScalingRules) *HPAScalingRules { return &r }
	ev := func(changes ...int) []HPAScaleEvent { return hpaUniformEvents(changes, 120, hpaT0) }
	cases := []tc{
		{name: "prenormalized desired replicas within range", current: 5, desired: 7, minR: 3, maxR: 8, want: 7},
		{name: "prenormalized desired replicas < minReplicas", current: 3, desired: 1, minR: 2, maxR: 8, want: 2, condition: "TooFewReplicas"},
		{name: "maxReplicas is the limit because maxReplicas < scaleUpLimit", current: 20, desired: 1000, minR: 1, maxR: 10, want: 10, condition: "TooManyReplicas"},
		{name: "desired replica count is more than the maximum replica count", current: 100, desired: 1000, minR: 100, maxR: 150, want: 150, condition: "TooManyReplicas"},
		{name: "scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies", current: 3, desired: 1000, minR: 1, maxR: 2000,
			upRules: rules(hpaRules(up, 0, 0, 1, 60, 0)), want: 4, condition: "ScaleUpLimit"},
		{name: "scaleDownLimit is the limit because scaleDownLimit > minReplicas with user defined policies", current: 1000, desired: 3, minR: 3, maxR: 2000,
			dnRules: rules(hpaRules(down, 20, 60, 0, 0, 0)), want: 980, condition: "ScaleDownLimit"},
		{name: "scaleUp with default behavior", current: 10, desired: 50, minR: 1, maxR: 1000, want: 20, condition: "ScaleUpLimit"},
		{name: "scaleUp with pods policy larger than percent policy", current: 10, desired: 500, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 100, 60, 100, 60, 0)), want: 110, condition: "ScaleUpLimit"},
		{name: "scaleUp with percent policy larger than pods policy", current: 10, desired: 500, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 2, 60, 100, 60, 0)), want: 20, condition: "ScaleUpLimit"},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy", current: 10, desired: 50, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 100, 60, 0, 0, 0)), want: 50},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy", current: 10, desired: 50, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 10000, 60, 0, 0, 0)), want: 50},
		{name: "scaleUp with pod policy limitation", current: 10, desired: 50, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 30, 60, 0, 0, 0)), want: 40, condition: "ScaleUpLimit"},
		{name: "scaleUp with percent policy limitation", current: 10, desired: 50, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 0, 0, 200, 60, 0)), want: 30, condition: "ScaleUpLimit"},
		{name: "scaleDown with percent policy larger than pod policy", current: 100, desired: 2, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 20, 60, 1, 60, 300)), want: 80, condition: "ScaleDownLimit"},
		{name: "scaleDown with pod policy larger than percent policy", current: 100, desired: 2, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 2, 60, 1, 60, 300)), want: 98, condition: "ScaleDownLimit"},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy", current: 10, desired: 0, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 100, 60, 0, 0, 300)), want: 1, condition: "TooFewReplicas"},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy", current: 10, desired: 2, minR: 5, maxR: 1000,
			dnRules: rules(hpaRules(down, 0, 0, 100, 60, 300)), want: 5, condition: "TooFewReplicas"},
		{name: "scaleDown with pod policy limitation", current: 10, desired: 2, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 5, 60, 0, 0, 300)), want: 5, condition: "ScaleDownLimit"},
		{name: "scaleDown with percent policy limitation", current: 10, desired: 5, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 0, 0, 50, 60, 300)), want: 5},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy and events", upEvents: ev(1, 5, 9), current: 100, desired: 500, minR: 1, maxR: 200,
			upRules: rules(hpaRules(up, 300, 60, 0, 0, 0)), want: 200, condition: "TooManyReplicas"},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy and events", upEvents: ev(1, 5, 9), current: 100, desired: 500, minR: 1, maxR: 200,
			upRules: rules(hpaRules(up, 0, 0, 10000, 60, 0)), want: 200, condition: "TooManyReplicas"},
		{name: "scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events", upEvents: ev(1, 5, 9), current: 100, desired: 500, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 5, 120, 0, 0, 0)), want: 100, condition: "ScaleUpLimit"},
		{name: "scaleUp with pod policy and previous scale up events", upEvents: ev(1, 5, 9), current: 100, desired: 500, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 150, 120, 0, 0, 0)), want: 235, condition: "ScaleUpLimit"},
		{name: "scaleUp with percent policy and previous scale up events", upEvents: ev(1, 5, 9), current: 100, desired: 500, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 0, 0, 200, 120, 0)), want: 255, condition: "ScaleUpLimit"},
		{name: "scaleUp with percent policy and previous scale up and down events", upEvents: ev(4), dnEvent: ev(2), current: 6, desired: 24, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 0, 0, 300, 300, 0)), want: 16, condition: "ScaleUpLimit"},
		{name: "scaleDown with default policy and previous events", dnEvent: ev(1, 5, 9), current: 10, desired: 5, minR: 1, maxR: 1000, want: 5},
		{name: "scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events", dnEvent: ev(1, 5, 9), current: 100, desired: 0, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 115, 120, 0, 0, 300)), want: 1, condition: "TooFewReplicas"},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy and previous events", dnEvent: ev(1, 5, 9), current: 100, desired: 0, minR: 5, maxR: 1000,
			dnRules: rules(hpaRules(down, 130, 120, 0, 0, 300)), want: 5, condition: "TooFewReplicas"},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy and previous events", dnEvent: ev(1, 5, 9), current: 100, desired: 2, minR: 5, maxR: 1000,
			dnRules: rules(hpaRules(down, 0, 0, 100, 120, 300)), want: 5, condition: "TooFewReplicas"},
		{name: "scaleDown with pod policy limitation and previous events", dnEvent: ev(1, 5, 9), current: 100, desired: 2, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 5, 120, 0, 0, 300)), want: 100, condition: "ScaleDownLimit"},
		{name: "scaleDown with percent policy limitation and previous events", dnEvent: ev(2, 4, 6), current: 100, desired: 0, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 0, 0, 50, 120, 300)), want: 56, condition: "ScaleDownLimit"},
		{name: "scaleDown with percent policy and previous scale up and down events", upEvents: ev(2), dnEvent: ev(4), current: 10, desired: 1, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 0, 0, 50, 180, 0)), want: 6, condition: "ScaleDownLimit"},
		{name: "scaleDown with previous events preventing further scale down", dnEvent: ev(10, 10, 10), current: 100, desired: 0, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 0, 0, 10, 120, 300)), want: 100, condition: "ScaleDownLimit"},
		{name: "scaleDown with with previous events still allowing more scale down", dnEvent: ev(10, 10, 10), current: 10, desired: 5, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 0, 0, 1000, 120, 300)), want: 5},
		{name: "check 'outdated' flag for events for one behavior for up", upEvents: ev(8, 12, 9, 11), current: 100, desired: 200, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 1000, 60, 0, 0, 0)), want: 200},
		{name: "check that events were not marked 'outdated' for two different policies in the behavior for up", upEvents: ev(8, 12, 9, 11), current: 100, desired: 200, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 1000, 120, 100, 60, 0)), want: 200},
		{name: "check that events were marked 'outdated' for two different policies in the behavior for up", upEvents: ev(8, 12, 9, 11), current: 100, desired: 200, minR: 1, maxR: 1000,
			upRules: rules(hpaRules(up, 1000, 30, 100, 60, 0)), want: 200},
		{name: "check 'outdated' flag for events for one behavior for down", dnEvent: ev(8, 12, 9, 11), current: 100, desired: 5, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 1000, 60, 0, 0, 300)), want: 5},
		{name: "check that events were not marked 'outdated' for two different policies in the behavior for down", dnEvent: ev(8, 12, 9, 11), current: 100, desired: 5, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 1000, 120, 100, 60, 300)), want: 5},
		{name: "check that events were marked 'outdated' for two different policies in the behavior for down", dnEvent: ev(8, 12, 9, 11), current: 100, desired: 5, minR: 1, maxR: 1000,
			dnRules: rules(hpaRules(down, 1000, 30, 100, 60, 300)), want: 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultHPAConfig()
			cfg.MinReplicas, cfg.MaxReplicas = c.minR, c.maxR
			if c.upRules != nil {
				cfg.ScaleUp = *c.upRules
			}
			if c.dnRules != nil {
				cfg.ScaleDown = *c.dnRules
			}
			got, why := limitHPA(cfg, c.upEvents, c.dnEvent, c.current, c.desired, hpaT0)
			if got != c.want {
				t.Fatalf("limit %d -> %d = %d (%s), want %d", c.current, c.desired, got, why, c.want)
			}
			if cond, _, _ := strings.Cut(why, ":"); cond != c.condition {
				t.Errorf("condition %q (%s), want %q", cond, why, c.condition)
			}
		})
	}
}

// TestHPAGoldenNormalizeWithBehavior restates horizontal_test.go
// TestNormalizeDesiredReplicasWithBehavior (stabilizeRecommendationWithBehaviors
// alone, stabilizeHPA). Upstream reuses the slot of one record outside both
// windows; we drop every such record, so the kept history lists the records
// still inside a window, then this round's.
func TestHPAGoldenNormalizeWithBehavior(t *testing.T) {
	now := hpaT0
	rec := func(n int, ago time.Duration) HPARecommendation {
		return HPARecommendation{Replicas: n, At: now.Add(-ago)}
	}
	m := time.Minute
	cases := []struct {
		name                 string
		recs                 []HPARecommendation
		current, desired     int
		upWindow, downWindow time.Duration
		want                 int
		wantKept             []int
	}{
		{name: "empty recommendations for scaling down", current: 100, desired: 5, want: 5, wantKept: []int{5}},
		{name: "simple scale down stabilization", recs: []HPARecommendation{rec(4, 2*m), rec(5, m)},
			current: 100, desired: 3, downWindow: 3 * m, want: 5, wantKept: []int{4, 5, 3}},
		{name: "simple scale up stabilization", recs: []HPARecommendation{rec(4, 2*m), rec(5, m)},
			current: 1, desired: 7, upWindow: 5 * m, want: 4, wantKept: []int{4, 5, 7}},
		{name: "no scale down stabilization", recs: []HPARecommendation{rec(1, 2*m), rec(2, m)},
			current: 100, desired: 3, upWindow: 5 * m, want: 3, wantKept: []int{1, 2, 3}},
		{name: "no scale up stabilization", recs: []HPARecommendation{rec(4, 2*m), rec(5, m)},
			current: 1, desired: 3, downWindow: 5 * m, want: 3, wantKept: []int{4, 5, 3}},
		{name: "no scale down stabilization, reuse recommendation element", recs: []HPARecommendation{rec(10, 10*m), rec(9, 9*m)},
			current: 100, desired: 3, want: 3, wantKept: []int{3}},
		{name: "no scale up stabilization, reuse recommendation element", recs: []HPARecommendation{rec(10, 10*m), rec(9, 9*m)},
			current: 1, desired: 100, want: 100, wantKept: []int{100}},
		{name: "scale down stabilization, reuse one of obsolete recommendation element",
			recs:    []HPARecommendation{rec(10, 10*m), rec(4, m), rec(5, 2*m), rec(9, 9*m)},
			current: 100, desired: 3, downWindow: 3 * m, want: 5, wantKept: []int{4, 5, 3}},
		// upstream's comment has the scale-down window at its default 300 s,
		// but the case sets it to 0: only the scale-up window matters.
		{name: "scale up stabilization, reuse one of obsolete recommendation element",
			recs:    []HPARecommendation{rec(10, 100*m), rec(6, m), rec(5, 2*m), rec(9, 3*m)},
			current: 1, desired: 100, upWindow: 300 * time.Second, want: 5, wantKept: []int{6, 5, 9, 100}},
		{name: "scale up and down stabilization, do not scale up when prenormalized rec goes down",
			recs:    []HPARecommendation{rec(2, 100*m), rec(3, 3*m)},
			current: 2, desired: 1, upWindow: 300 * time.Second, downWindow: 300 * time.Second, want: 2, wantKept: []int{3, 1}},
		{name: "scale up and down stabilization, do not scale down when prenormalized rec goes up",
			recs:    []HPARecommendation{rec(2, 100*m), rec(1, 3*m)},
			current: 2, desired: 3, upWindow: 300 * time.Second, downWindow: 300 * time.Second, want: 2, wantKept: []int{1, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up, down := DefaultHPAScaleUpRules(), DefaultHPAScaleDownRules()
			up.StabilizationWindow, down.StabilizationWindow = c.upWindow, c.downWindow
			in := slices.Clone(c.recs)
			got, why, kept := stabilizeHPA(up, down, in, c.current, c.desired, now)
			if got != c.want {
				t.Fatalf("stabilized %d (%s), want %d", got, why, c.want)
			}
			var keptN []int
			for _, r := range kept {
				keptN = append(keptN, r.Replicas)
			}
			if !slices.Equal(keptN, c.wantKept) {
				t.Errorf("kept %v, want %v", keptN, c.wantKept)
			}
			if !slices.Equal(in, c.recs) {
				t.Errorf("input history modified: %v", in)
			}
		})
	}
}
