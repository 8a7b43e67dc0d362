package autoscaler

// The hpa policy's configuration: its types, upstream's defaults
// (pkg/apis/autoscaling/v2/defaults.go) and ranges
// (pkg/apis/autoscaling/validation/validation.go). The round is in hpa.go.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"
)

// HPAMetricSource says what a metric reads, as upstream's MetricSourceType.
type HPAMetricSource string

const (
	// HPAExternal is one value for the whole zone, the sum of the series a
	// query returned (upstream ExternalMetricSourceType, what KEDA creates
	// for a Prometheus trigger; an Object metric has the same arithmetic).
	HPAExternal HPAMetricSource = "External"
	// HPAPods is one sample per pod, averaged over the pods (upstream
	// PodsMetricSourceType). Its target is always AverageValue.
	HPAPods HPAMetricSource = "Pods"
)

// HPATargetType is upstream's MetricTargetType.
type HPATargetType string

const (
	// HPAValue compares the total with the threshold:
	// ratio = total ÷ threshold, desired = ceil(ratio × ready pods).
	HPAValue HPATargetType = "Value"
	// HPAAverageValue compares the total per replica with the threshold:
	// desired = ceil(total ÷ threshold). KEDA's default metricType.
	HPAAverageValue HPATargetType = "AverageValue"
)

// HPAMetric is one metric of an hpa zone (upstream MetricSpec; KEDA trigger).
type HPAMetric struct {
	// Name identifies the metric in the observation (HPAMetricReading.Name),
	// the state (HPAState.Failures) and the reasons. Unique, not empty.
	Name string
	// Source is External or Pods; "" reads as External.
	Source HPAMetricSource
	// Target is Value or AverageValue; "" reads as AverageValue (KEDA's
	// default). A Pods metric takes AverageValue only.
	Target HPATargetType
	// Threshold is the target: the total for Value, the value per replica
	// (or per pod) for AverageValue. KEDA's trigger "threshold". > 0, finite.
	Threshold float64
	// ReadEmptyAsZero reads a query that returned no series, NaN or ±Inf as
	// 0 instead of failing (KEDA's Prometheus ignoreNullValues). External
	// metrics only. Default false: an empty answer is a failed metric.
	ReadEmptyAsZero bool
}

// HPAPolicyType is upstream's HPAScalingPolicyType.
type HPAPolicyType string

// The rate policy types: a number of pods or a percentage of the count at
// the start of the period.
const (
	HPAPodsPolicy    HPAPolicyType = "Pods"
	HPAPercentPolicy HPAPolicyType = "Percent"
)

// HPAScalingPolicy is one rate policy (upstream HPAScalingPolicy): at most
// Value pods (or Value % of the count at the start of the period) added, or
// removed, per Period.
type HPAScalingPolicy struct {
	Type   HPAPolicyType
	Value  int           // > 0
	Period time.Duration // in (0, 30 min] (upstream periodSeconds 1..1800)
}

// HPASelectPolicy is upstream's ScalingPolicySelect.
type HPASelectPolicy string

// Which policy applies when there are several: the one allowing the largest
// change (Max, upstream's default), the smallest (Min), or none (Disabled:
// no change in that direction).
const (
	HPASelectMax      HPASelectPolicy = "Max"
	HPASelectMin      HPASelectPolicy = "Min"
	HPASelectDisabled HPASelectPolicy = "Disabled"
)

// HPAScalingRules is the behaviour of one direction (upstream
// HPAScalingRules). Start from DefaultHPAScaleUpRules or
// DefaultHPAScaleDownRules: a zero field means zero, not the default.
type HPAScalingRules struct {
	// StabilizationWindow: the recommendations of this long ago are
	// considered (max of them for scale-down, min for scale-up).
	// 0..1 h (upstream stabilizationWindowSeconds 0..3600).
	StabilizationWindow time.Duration
	// SelectPolicy is Max, Min or Disabled; "" reads as Max.
	SelectPolicy HPASelectPolicy
	// Policies are the rate policies; at least one (upstream validation).
	Policies []HPAScalingPolicy
	// Tolerance: a ratio within it of 1 in this direction does not scale.
	// Upstream's --horizontal-pod-autoscaler-tolerance (0.1), per direction
	// as HPAScalingRules.tolerance. >= 0, finite.
	Tolerance float64
}

// HPAFallback is KEDA's ScaledObject fallback: after more than
// FailureThreshold failed rounds in a row, a failed External AverageValue
// metric proposes max(count, Replicas) (behaviour currentReplicasIfHigher:
// never below the current count).
type HPAFallback struct {
	FailureThreshold int // >= 0
	Replicas         int // >= 0
}

// HPAConfig is the configuration of an hpa zone (upstream
// HorizontalPodAutoscalerSpec; KEDA ScaledObject). The zero value is not
// valid; start from DefaultHPAConfig and add Metrics.
type HPAConfig struct {
	// MinReplicas and MaxReplicas bound the count: 1 <= Min <= Max.
	// Defaults 1 (upstream) and 100 (KEDA maxReplicaCount).
	MinReplicas int
	MaxReplicas int
	// Metrics: at least one.
	Metrics []HPAMetric
	// ScaleUp and ScaleDown: the behaviour (upstream defaults.go).
	ScaleUp   HPAScalingRules
	ScaleDown HPAScalingRules
	// Fallback: nil disables it (KEDA's default).
	Fallback *HPAFallback
}

// The limits of pkg/apis/autoscaling/validation.
const (
	hpaMaxStabilizationWindow = time.Hour        // MaxStabilizationWindowSeconds 3600
	hpaMaxPolicyPeriod        = 30 * time.Minute // MaxPeriodSeconds 1800
)

// DefaultHPAScaleUpRules returns upstream's default scale-up behaviour
// (pkg/apis/autoscaling/v2/defaults.go defaultHPAScaleUpRules): no
// stabilization, the larger of +4 pods and +100 % per 15 s, tolerance 0.1.
func DefaultHPAScaleUpRules() HPAScalingRules {
	return HPAScalingRules{
		StabilizationWindow: 0,
		SelectPolicy:        HPASelectMax,
		Policies: []HPAScalingPolicy{
			{Type: HPAPodsPolicy, Value: 4, Period: 15 * time.Second},
			{Type: HPAPercentPolicy, Value: 100, Period: 15 * time.Second},
		},
		Tolerance: 0.1,
	}
}

// DefaultHPAScaleDownRules returns upstream's default scale-down behaviour
// (defaults.go defaultHPAScaleDownRules, with the controller's
// --horizontal-pod-autoscaler-downscale-stabilization default of 300 s):
// a 300 s window, -100 % per 15 s, tolerance 0.1.
func DefaultHPAScaleDownRules() HPAScalingRules {
	return HPAScalingRules{
		StabilizationWindow: 300 * time.Second,
		SelectPolicy:        HPASelectMax,
		Policies: []HPAScalingPolicy{
			{Type: HPAPercentPolicy, Value: 100, Period: 15 * time.Second},
		},
		Tolerance: 0.1,
	}
}

// DefaultHPAConfig returns min 1, max 100, the default behaviour, no
// fallback and no metric (add at least one).
func DefaultHPAConfig() HPAConfig {
	return HPAConfig{
		MinReplicas: 1,
		MaxReplicas: 100,
		ScaleUp:     DefaultHPAScaleUpRules(),
		ScaleDown:   DefaultHPAScaleDownRules(),
	}
}

// Validate reports every field out of its range, joined into one error.
func (c HPAConfig) Validate() error {
	var errs []error
	bad := func(field string, v any, want string) {
		errs = append(errs, fmt.Errorf("autoscaler: hpa config %s = %v, want %s", field, v, want))
	}
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	if c.MinReplicas < 1 {
		bad("MinReplicas", c.MinReplicas, ">= 1")
	}
	if c.MaxReplicas < max(c.MinReplicas, 1) {
		bad("MaxReplicas", c.MaxReplicas, fmt.Sprintf(">= MinReplicas (%d) and >= 1", c.MinReplicas))
	}
	if len(c.Metrics) == 0 {
		bad("Metrics", "[]", "at least one metric")
	}
	seen := map[string]bool{}
	for i, m := range c.Metrics {
		f := fmt.Sprintf("Metrics[%d]", i)
		switch {
		case m.Name == "":
			bad(f+".Name", `""`, "a name")
		case seen[m.Name]:
			bad(f+".Name", m.Name, "unique")
		}
		seen[m.Name] = true
		if s := m.source(); s != HPAExternal && s != HPAPods {
			bad(f+".Source", m.Source, "External or Pods")
		}
		if t := m.target(); t != HPAValue && t != HPAAverageValue {
			bad(f+".Target", m.Target, "Value or AverageValue")
		} else if m.source() == HPAPods && t != HPAAverageValue {
			bad(f+".Target", m.Target, "AverageValue for a Pods metric")
		}
		if !finite(m.Threshold) || m.Threshold <= 0 {
			bad(f+".Threshold", m.Threshold, "> 0 and finite")
		}
		if m.ReadEmptyAsZero && m.source() != HPAExternal {
			bad(f+".ReadEmptyAsZero", true, "false for a Pods metric")
		}
	}
	c.ScaleUp.validate("ScaleUp", bad)
	c.ScaleDown.validate("ScaleDown", bad)
	if f := c.Fallback; f != nil {
		if f.FailureThreshold < 0 {
			bad("Fallback.FailureThreshold", f.FailureThreshold, ">= 0")
		}
		if f.Replicas < 0 {
			bad("Fallback.Replicas", f.Replicas, ">= 0")
		}
	}
	return errors.Join(errs...)
}

func (r HPAScalingRules) validate(dir string, bad func(string, any, string)) {
	if r.StabilizationWindow < 0 || r.StabilizationWindow > hpaMaxStabilizationWindow {
		bad(dir+".StabilizationWindow", r.StabilizationWindow, "in [0, 1h]")
	}
	switch r.SelectPolicy {
	case "", HPASelectMax, HPASelectMin, HPASelectDisabled:
	default:
		bad(dir+".SelectPolicy", r.SelectPolicy, "Max, Min or Disabled")
	}
	if len(r.Policies) == 0 {
		bad(dir+".Policies", "[]", "at least one policy")
	}
	for i, p := range r.Policies {
		f := fmt.Sprintf("%s.Policies[%d]", dir, i)
		if p.Type != HPAPodsPolicy && p.Type != HPAPercentPolicy {
			bad(f+".Type", p.Type, "Pods or Percent")
		}
		if p.Value <= 0 || p.Value > math.MaxInt32 {
			bad(f+".Value", p.Value, "> 0")
		}
		if p.Period <= 0 || p.Period > hpaMaxPolicyPeriod {
			bad(f+".Period", p.Period, "in (0, 30m]")
		}
	}
	if math.IsNaN(r.Tolerance) || math.IsInf(r.Tolerance, 0) || r.Tolerance < 0 {
		bad(dir+".Tolerance", r.Tolerance, ">= 0 and finite")
	}
}

func (m HPAMetric) source() HPAMetricSource { return cmp.Or(m.Source, HPAExternal) }
func (m HPAMetric) target() HPATargetType   { return cmp.Or(m.Target, HPAAverageValue) }
