package autoscaler

// The "hpa" policy: the Kubernetes HorizontalPodAutoscaler's
// arithmetic and behaviour, with KEDA's fallback, as one pure function of
// (config, state, observation, now). Every rule is in this file.
//
// Sources (read, not copied; each function below names the one it follows):
//
//   - kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go:
//     GetExternalPerPodMetricReplicas, GetExternalMetricReplicas,
//     getUsageRatioReplicaCount, calcPlainMetricReplicas, groupPods and
//     Tolerances.isWithin.
//   - pkg/controller/podautoscaler/horizontal.go: reconcileAutoscaler,
//     recordInitialRecommendation, computeReplicasForMetrics,
//     normalizeDesiredReplicasWithBehaviors, stabilizeRecommendationWithBehaviors,
//     convertDesiredReplicasWithBehaviorRate,
//     calculateScaleUpLimitWithScalingRules, calculateScaleDownLimitWithBehaviors,
//     getReplicasChangePerPeriod and storeScaleEvent.
//   - pkg/apis/autoscaling/v2/defaults.go (the default behaviour) and
//     pkg/apis/autoscaling/validation/validation.go (the ranges).
//   - kedacore/keda pkg/fallback/fallback.go (fallback) and
//     pkg/scalers/prometheus_scaler.go (ignoreNullValues).
//
// Each round, for one zone:
//
//  1. A count of 0 is "scaling disabled" and holds. A count over MaxReplicas
//     goes to MaxReplicas and one under MinReplicas to MinReplicas, without
//     reading any metric.
//  2. Each metric proposes a count. External AverageValue (KEDA's default for
//     a Prometheus trigger): ceil(total ÷ target), or the pods that exist when
//     total ÷ (target × pods) is within tolerance. External Value:
//     ceil(total ÷ target × ready pods), or the count when within tolerance.
//     Pods (a sample per pod, AverageValue): the average over the pods with a
//     sample; when pods are missing a sample (or, on a scale-up, pods are not
//     ready yet) the ratio is recomputed with missing pods at the target on a
//     scale-down and at 0 on a scale-up, not-ready pods at 0 on a scale-up
//     only, and the count is kept if the recomputed ratio is within tolerance
//     or points the other way.
//  3. Tolerance is inclusive: a ratio r holds when 1-down <= r <= 1+up.
//  4. A metric whose query failed, returned no series, NaN or ±Inf is failed,
//     unless it reads empty as zero. After more than Fallback.FailureThreshold
//     failed rounds in a row an External AverageValue metric proposes
//     max(count, Fallback.Replicas) instead (KEDA currentReplicasIfHigher).
//  5. The largest proposal wins. If every metric failed, or one failed and
//     the largest proposal is under the count, the zone holds.
//  6. The proposal is stabilized: never above the highest recommendation of
//     the scale-down window, never below the lowest of the scale-up window.
//  7. The rate policies bound the change per period, counting the scale
//     events of the period; then MinReplicas and MaxReplicas bound it.
//
// All arithmetic is exact (math/big.Rat): thresholds, tolerances and metric
// values are read as the shortest decimal that reads back as the same
// float64, so a ratio of exactly 1.1 does not scale and 2.1 ÷ 0.3 is 7.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strings"
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

// HPAPodPhase is the part of a pod's status the policy reads (upstream
// v1.PodPhase). A phase other than Pending and Failed (Running, Succeeded,
// "") counts as Running, as in upstream groupPods.
type HPAPodPhase string

// The phases that matter.
const (
	HPAPodRunning HPAPodPhase = "Running"
	HPAPodPending HPAPodPhase = "Pending"
	HPAPodFailed  HPAPodPhase = "Failed"
)

// HPAPod is one pod (worker) of the zone. List every pod of the zone,
// including those the count asks for that are not running yet (Pending).
type HPAPod struct {
	Name  string      `json:"name"`
	Phase HPAPodPhase `json:"phase,omitempty"`
	// Ready is the pod's Ready condition. It decides the ready count of a
	// Value metric; a Pods metric reads any running pod's sample (upstream
	// groupPods checks readiness for CPU only).
	Ready bool `json:"ready"`
	// Deleting: the pod is being removed. Like a Failed pod it is left out
	// of every count and sample.
	Deleting bool `json:"deleting,omitempty"`
}

// HPAMetricReading is what one metric's query returned this round.
type HPAMetricReading struct {
	Name string `json:"name"` // the HPAMetric it answers
	// Err, when not empty, is why the query failed; the metric is failed.
	Err string `json:"err,omitempty"`
	// Values: one value per series the query returned (External metrics).
	// They are summed, as upstream sums an external metric's values.
	Values []float64 `json:"values,omitempty"`
	// PodValues: each pod's sample by pod name (Pods metrics). A running
	// pod without an entry is missing its sample; an entry for a pod not in
	// the observation is ignored.
	PodValues map[string]float64 `json:"pod_values,omitempty"`
}

// HPAObservation is everything the hpa policy sees of a zone in one round.
type HPAObservation struct {
	Pods    []HPAPod           `json:"pods"`
	Metrics []HPAMetricReading `json:"metrics"`
}

// HPARecommendation is one round's unstabilized proposal (upstream
// timestampedRecommendation).
type HPARecommendation struct {
	Replicas int       `json:"replicas"`
	At       time.Time `json:"at"`
}

// HPAScaleEvent is one change of the count (upstream timestampedScaleEvent);
// Change is the number of pods added (in ScaleUpEvents) or removed (in
// ScaleDownEvents), > 0.
type HPAScaleEvent struct {
	Change int       `json:"change"`
	At     time.Time `json:"at"`
}

// HPAState is what the hpa policy carries between rounds for one zone: the
// count (upstream scale.Spec.Replicas) and the controller's memory.
type HPAState struct {
	Count      int       `json:"count"`
	LastChange time.Time `json:"last_change"` // upstream status.lastScaleTime
	// Recommendations within the stabilization windows. nil means the zone
	// was never evaluated: its count is then recorded as a recommendation
	// (upstream recordInitialRecommendation), so no scale-down follows
	// within the scale-down window of a (re)start.
	Recommendations []HPARecommendation `json:"recommendations"`
	// Scale events within the longest policy period.
	ScaleUpEvents   []HPAScaleEvent `json:"scale_up_events,omitempty"`
	ScaleDownEvents []HPAScaleEvent `json:"scale_down_events,omitempty"`
	// Failures counts each metric's failed rounds in a row (KEDA's
	// health.numberOfFailures); a metric that answers is removed.
	Failures map[string]int `json:"failures,omitempty"`
}

func (s HPAState) clone() HPAState {
	s.Recommendations = slices.Clone(s.Recommendations)
	s.ScaleUpEvents = slices.Clone(s.ScaleUpEvents)
	s.ScaleDownEvents = slices.Clone(s.ScaleDownEvents)
	s.Failures = maps.Clone(s.Failures)
	return s
}

// HPA decides one round for one zone with the hpa policy. It is a pure
// function: it reads no clock (now is the round's time), does no I/O and
// does not modify st or obs.
//
// It follows upstream reconcileAutoscaler: the min/max and zero-count
// rules, then computeReplicasForMetrics, then
// normalizeDesiredReplicasWithBehaviors; and storeScaleEvent on a change.
// The returned state has the new Count and LastChange = now on a change,
// the round's recommendation and scale event recorded, old ones dropped,
// and the failure counts updated. A hold has To == From. An invalid config
// or a negative count holds with the reason.
func HPA(cfg HPAConfig, st HPAState, obs HPAObservation, now time.Time) (Decision, HPAState) {
	next := st.clone()
	d := Decision{Action: ActionHold, From: st.Count, To: st.Count, At: now}
	hold := func(reason string) (Decision, HPAState) {
		d.Reason = reason
		return d, next
	}
	if err := cfg.Validate(); err != nil {
		return hold("invalid hpa config: " + strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	current := st.Count
	switch {
	case current < 0:
		return hold(fmt.Sprintf("invalid zone state: count %d", current))
	case current == 0:
		return hold("scaling disabled: the count is 0 (ScalingDisabled)")
	}
	next.ScaleUpEvents, next.ScaleDownEvents = cfg.keepEvents(next.ScaleUpEvents, now), cfg.keepEvents(next.ScaleDownEvents, now)
	if next.Recommendations == nil {
		next.Recommendations = []HPARecommendation{{Replicas: current, At: now}}
	}

	var desired int
	var reason string
	switch {
	case current > cfg.MaxReplicas:
		desired, reason = cfg.MaxReplicas, fmt.Sprintf("count %d above max %d", current, cfg.MaxReplicas)
	case current < cfg.MinReplicas:
		desired, reason = cfg.MinReplicas, fmt.Sprintf("count %d below min %d", current, cfg.MinReplicas)
	default:
		m := cfg.computeMetrics(st, obs, current)
		next.Failures = m.failures
		if m.hold != "" {
			return hold(m.hold)
		}
		proposal := max(m.replicas, 0)
		parts := []string{m.summary}
		switch {
		case proposal > current:
			parts = append(parts, fmt.Sprintf("desired %d: %s above target", proposal, m.metric))
		case proposal < current:
			parts = append(parts, fmt.Sprintf("desired %d: all metrics below target", proposal))
		default:
			parts = append(parts, fmt.Sprintf("desired %d = count", proposal))
		}
		stabilized, why, recs := stabilizeHPA(cfg.ScaleUp, cfg.ScaleDown, next.Recommendations, current, proposal, now)
		next.Recommendations = recs
		if why != "" {
			parts = append(parts, why)
		}
		desired, why = limitHPA(cfg, next.ScaleUpEvents, next.ScaleDownEvents, current, stabilized, now)
		if why != "" {
			parts = append(parts, why)
		}
		reason = strings.Join(parts, "; ")
		if desired == current && proposal > current && current >= cfg.MaxReplicas {
			d.AtMaxUnderLoad = true
		}
	}

	if desired == current {
		return hold(reason)
	}
	// storeScaleEvent: the change, by direction.
	if desired > current {
		d.Action = ActionUp
		next.ScaleUpEvents = append(next.ScaleUpEvents, HPAScaleEvent{Change: desired - current, At: now})
	} else {
		d.Action = ActionDown
		next.ScaleDownEvents = append(next.ScaleDownEvents, HPAScaleEvent{Change: current - desired, At: now})
	}
	d.To, d.Reason = desired, reason
	next.Count, next.LastChange = desired, now
	return d, next
}

// keepEvents drops the scale events no policy of either direction can count
// any more: those not after now minus the longest policy period. Upstream
// storeScaleEvent marks them outdated per direction and reuses their slot.
func (c HPAConfig) keepEvents(evs []HPAScaleEvent, now time.Time) []HPAScaleEvent {
	var longest time.Duration
	for _, p := range slices.Concat(c.ScaleUp.Policies, c.ScaleDown.Policies) {
		longest = max(longest, p.Period)
	}
	cutoff := now.Add(-longest)
	return slices.DeleteFunc(evs, func(e HPAScaleEvent) bool { return !e.At.After(cutoff) })
}

// hpaMetrics is the outcome of computeMetrics.
type hpaMetrics struct {
	replicas int            // the largest proposal of the metrics that answered
	metric   string         // the metric that proposed it
	summary  string         // every metric's arithmetic, "; "-joined
	hold     string         // non-empty: the round holds (failed metrics), why
	failures map[string]int // the next failure counts
}

// computeMetrics follows upstream computeReplicasForMetrics: each metric
// proposes a count, the largest proposal wins, and the round holds when
// every metric failed or when one failed and the winner is under the count.
// A failed External AverageValue metric past the fallback threshold
// proposes max(count, Fallback.Replicas) instead (KEDA
// GetMetricsWithFallback, behaviour currentReplicasIfHigher): its proposal
// goes through the same per-replica arithmetic as the value KEDA would
// serve, fallback replicas × threshold.
func (c HPAConfig) computeMetrics(st HPAState, obs HPAObservation, current int) hpaMetrics {
	readings := make(map[string]*HPAMetricReading, len(obs.Metrics))
	for i := range obs.Metrics {
		if _, dup := readings[obs.Metrics[i].Name]; !dup {
			readings[obs.Metrics[i].Name] = &obs.Metrics[i]
		}
	}
	out := hpaMetrics{failures: map[string]int{}}
	var texts, failed []string
	found := false
	for _, m := range c.Metrics {
		p := c.proposeMetric(m, readings[m.Name], obs.Pods, current)
		if why := p.err; why != "" {
			n := st.Failures[m.Name] + 1
			out.failures[m.Name] = n
			if f := c.Fallback; f != nil && n > f.FailureThreshold && m.source() == HPAExternal && m.target() == HPAAverageValue {
				replicas := max(current, f.Replicas)
				total := new(big.Rat).Mul(big.NewRat(int64(replicas), 1), exactDecimal(m.Threshold))
				p = c.perReplicaProposal(m, total, hpaStatusReplicas(obs.Pods))
				p.text = fmt.Sprintf("%s failed (%s) %s in a row, over the fallback threshold %d: fallback max(count %d, %d) = %d read as %s",
					m.Name, why, plural(n, "round"), f.FailureThreshold, current, f.Replicas, replicas, p.text)
			} else {
				texts = append(texts, fmt.Sprintf("%s failed: %s", m.Name, why))
				failed = append(failed, m.Name)
				continue
			}
		}
		texts = append(texts, p.text)
		if !found || p.replicas > out.replicas {
			out.replicas, out.metric, found = p.replicas, m.Name, true
		}
	}
	if len(out.failures) == 0 {
		out.failures = nil
	}
	out.summary = strings.Join(texts, "; ")
	switch {
	case !found:
		out.hold = out.summary + "; no metric answered: no change"
	case len(failed) > 0 && out.replicas < current:
		out.hold = fmt.Sprintf("%s; %s failed: no scale-down to %d", out.summary, strings.Join(failed, ", "), out.replicas)
	}
	return out
}

// hpaProposal is one metric's proposal.
type hpaProposal struct {
	replicas int
	text     string // the arithmetic, for the reason
	err      string // non-empty: the metric failed, why
}

// proposeMetric reads one metric and computes its proposal.
func (c HPAConfig) proposeMetric(m HPAMetric, r *HPAMetricReading, pods []HPAPod, current int) hpaProposal {
	if r == nil {
		return hpaProposal{err: "no reading"}
	}
	if r.Err != "" {
		return hpaProposal{err: r.Err}
	}
	if m.source() == HPAPods {
		return c.podsProposal(m, r.PodValues, pods, current)
	}
	total, err := externalTotal(m, r.Values)
	if err != "" {
		return hpaProposal{err: err}
	}
	if m.target() == HPAValue {
		return c.valueProposal(m, total, pods, current)
	}
	return c.perReplicaProposal(m, total, hpaStatusReplicas(pods))
}

// externalTotal sums an External metric's series exactly. No series, NaN
// or ±Inf fail the metric, unless it reads them as 0 (KEDA
// prometheus_scaler ExecutePromQuery with ignoreNullValues).
func externalTotal(m HPAMetric, values []float64) (*big.Rat, string) {
	total := new(big.Rat)
	if len(values) == 0 {
		if m.ReadEmptyAsZero {
			return total, ""
		}
		return nil, "no series"
	}
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if m.ReadEmptyAsZero {
				continue
			}
			return nil, fmt.Sprintf("value %v", v)
		}
		total.Add(total, exactDecimal(v))
	}
	return total, ""
}

// tolerance is the inclusive band [1-down, 1+up] of upstream
// Tolerances.isWithin, in exact arithmetic.
func (c HPAConfig) tolerance() (lo, hi *big.Rat) {
	one := big.NewRat(1, 1)
	lo = new(big.Rat).Sub(one, exactDecimal(c.ScaleDown.Tolerance))
	hi = new(big.Rat).Add(one, exactDecimal(c.ScaleUp.Tolerance))
	return lo, hi
}

func (c HPAConfig) within(ratio *big.Rat) (bool, string) {
	lo, hi := c.tolerance()
	in := ratio.Cmp(lo) >= 0 && ratio.Cmp(hi) <= 0
	if in {
		return true, fmt.Sprintf("within [%s, %s]", trim(lo), trim(hi))
	}
	return false, fmt.Sprintf("outside [%s, %s]", trim(lo), trim(hi))
}

// hpaStatusReplicas counts the pods that exist: neither failed nor being
// deleted (upstream scale.Status.Replicas, the ReplicaSet's active pods).
func hpaStatusReplicas(pods []HPAPod) int {
	n := 0
	for _, p := range pods {
		if p.Phase != HPAPodFailed && !p.Deleting {
			n++
		}
	}
	return n
}

// perReplicaProposal follows upstream GetExternalPerPodMetricReplicas (and
// GetObjectPerPodMetricReplicas): ratio = total ÷ (threshold × status
// replicas); within tolerance the proposal is the status replicas,
// otherwise ceil(total ÷ threshold). With no pod listed the ratio is
// undefined and never within tolerance.
func (c HPAConfig) perReplicaProposal(m HPAMetric, total *big.Rat, status int) hpaProposal {
	target := exactDecimal(m.Threshold)
	head := fmt.Sprintf("%s %s / %s per replica", m.Name, trim(total), trim(target))
	if status > 0 {
		ratio := new(big.Rat).Quo(total, new(big.Rat).Mul(target, big.NewRat(int64(status), 1)))
		in, band := c.within(ratio)
		head = fmt.Sprintf("%s over %s: ratio %s %s", head, plural(status, "replica"), trim(ratio), band)
		if in {
			return hpaProposal{replicas: status, text: fmt.Sprintf("%s -> %d", head, status)}
		}
	}
	n := hpaCeil(new(big.Rat).Quo(total, target))
	return hpaProposal{replicas: n, text: fmt.Sprintf("%s -> %d", head, n)}
}

// valueProposal follows upstream GetExternalMetricReplicas and
// getUsageRatioReplicaCount (and GetObjectMetricReplicas): ratio = total ÷
// threshold; within tolerance the proposal is the count, otherwise
// ceil(ratio × ready pods), the running and ready pods. No pod listed fails
// the metric (upstream "no pods returned by selector").
func (c HPAConfig) valueProposal(m HPAMetric, total *big.Rat, pods []HPAPod, current int) hpaProposal {
	target := exactDecimal(m.Threshold)
	ratio := new(big.Rat).Quo(total, target)
	in, band := c.within(ratio)
	head := fmt.Sprintf("%s %s / %s: ratio %s %s", m.Name, trim(total), trim(target), trim(ratio), band)
	if in {
		return hpaProposal{replicas: current, text: fmt.Sprintf("%s -> %d", head, current)}
	}
	if len(pods) == 0 {
		return hpaProposal{err: "no pods listed"}
	}
	ready := 0
	for _, p := range pods {
		if running(p) && p.Ready {
			ready++
		}
	}
	n := hpaCeil(new(big.Rat).Mul(ratio, big.NewRat(int64(ready), 1)))
	return hpaProposal{replicas: n, text: fmt.Sprintf("%s x %d ready -> %d", head, ready, n)}
}

// running reports a pod that is neither pending nor failed.
func running(p HPAPod) bool { return p.Phase != HPAPodPending && p.Phase != HPAPodFailed }

// podsProposal follows upstream calcPlainMetricReplicas with groupPods:
//
//   - pods being deleted or failed are left out; pending pods are unready;
//     other pods with a sample are ready, without one missing;
//   - ratio = average of the ready samples ÷ threshold;
//   - with no missing pod and no unready pod on a scale-up (ratio > 1): the
//     count within tolerance, else ceil(ratio × ready pods);
//   - otherwise the ratio is recomputed with missing pods at the threshold
//     (ratio < 1) or at 0 (ratio > 1), and unready pods at 0 when ratio > 1;
//     the count is kept when the new ratio is within tolerance, points the
//     other way, or its ceil(new ratio × pods counted) would move the count
//     the other way.
func (c HPAConfig) podsProposal(m HPAMetric, values map[string]float64, pods []HPAPod, current int) hpaProposal {
	if len(pods) == 0 {
		return hpaProposal{err: "no pods listed"}
	}
	target := exactDecimal(m.Threshold)
	sum := new(big.Rat)
	var ready, missing, unready int
	for _, p := range pods {
		switch {
		case p.Deleting || p.Phase == HPAPodFailed:
			continue
		case p.Phase == HPAPodPending:
			unready++
			continue
		}
		v, ok := values[p.Name]
		if !ok {
			missing++
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return hpaProposal{err: fmt.Sprintf("pod %s value %v", p.Name, v)}
		}
		sum.Add(sum, exactDecimal(v))
		ready++
	}
	if ready == 0 {
		return hpaProposal{err: "no sample from any ready pod"}
	}
	one := big.NewRat(1, 1)
	ratioOf := func(s *big.Rat, n int) *big.Rat {
		return new(big.Rat).Quo(s, new(big.Rat).Mul(target, big.NewRat(int64(n), 1)))
	}
	ratio := ratioOf(sum, ready)
	avg := new(big.Rat).Quo(sum, big.NewRat(int64(ready), 1))
	in, band := c.within(ratio)
	head := fmt.Sprintf("%s average %s over %s / %s per pod: ratio %s", m.Name, trim(avg), plural(ready, "pod"), trim(target), trim(ratio))

	up, down := ratio.Cmp(one) > 0, ratio.Cmp(one) < 0
	withUnready := unready > 0 && up
	if !withUnready && missing == 0 {
		if in {
			return hpaProposal{replicas: current, text: fmt.Sprintf("%s %s -> %d", head, band, current)}
		}
		n := hpaCeil(new(big.Rat).Mul(ratio, big.NewRat(int64(ready), 1)))
		return hpaProposal{replicas: n, text: fmt.Sprintf("%s %s -> %d", head, band, n)}
	}

	counted := ready
	var notes []string
	if missing > 0 {
		switch {
		case down:
			sum.Add(sum, new(big.Rat).Mul(target, big.NewRat(int64(missing), 1)))
			counted += missing
			notes = append(notes, fmt.Sprintf("%d missing as %s", missing, trim(target)))
		case up:
			counted += missing
			notes = append(notes, fmt.Sprintf("%d missing as 0", missing))
		}
	}
	if withUnready {
		counted += unready
		notes = append(notes, fmt.Sprintf("%d unready as 0", unready))
	}
	newRatio := ratioOf(sum, counted)
	in, band = c.within(newRatio)
	head = fmt.Sprintf("%s; %s: ratio %s %s", head, strings.Join(notes, ", "), trim(newRatio), band)
	flipped := (down && newRatio.Cmp(one) > 0) || (up && newRatio.Cmp(one) < 0)
	switch {
	case in:
		return hpaProposal{replicas: current, text: fmt.Sprintf("%s -> %d", head, current)}
	case flipped:
		return hpaProposal{replicas: current, text: fmt.Sprintf("%s, direction flipped: keep %d", head, current)}
	}
	n := hpaCeil(new(big.Rat).Mul(newRatio, big.NewRat(int64(counted), 1)))
	if (newRatio.Cmp(one) < 0 && n > current) || (newRatio.Cmp(one) > 0 && n < current) {
		return hpaProposal{replicas: current, text: fmt.Sprintf("%s -> %d would move the other way: keep %d", head, n, current)}
	}
	return hpaProposal{replicas: n, text: fmt.Sprintf("%s -> %d", head, n)}
}

// stabilizeHPA follows upstream stabilizeRecommendationWithBehaviors: the
// recommendation is the count, raised to the lowest recommendation of the
// scale-up window and lowered to the highest of the scale-down window, both
// windows including this round's desired. It returns the stabilized
// recommendation, a note when it differs from desired, and the history with
// desired recorded at now and the records outside both windows dropped
// (upstream reuses one such slot per round).
func stabilizeHPA(up, down HPAScalingRules, recs []HPARecommendation, current, desired int, now time.Time) (int, string, []HPARecommendation) {
	upCutoff, downCutoff := now.Add(-up.StabilizationWindow), now.Add(-down.StabilizationWindow)
	upRec, downRec := desired, desired
	for _, r := range recs {
		if r.At.After(upCutoff) {
			upRec = min(upRec, r.Replicas)
		}
		if r.At.After(downCutoff) {
			downRec = max(downRec, r.Replicas)
		}
	}
	rec := current
	if rec < upRec {
		rec = upRec
	}
	if rec > downRec {
		rec = downRec
	}
	kept := slices.DeleteFunc(slices.Clone(recs), func(r HPARecommendation) bool {
		return !r.At.After(upCutoff) && !r.At.After(downCutoff)
	})
	kept = append(kept, HPARecommendation{Replicas: desired, At: now})

	var why string
	switch {
	case rec == desired:
	case desired >= current:
		why = fmt.Sprintf("ScaleUpStabilized: lowest recommendation of the last %s is %d, keep %d", up.StabilizationWindow, upRec, rec)
	default:
		why = fmt.Sprintf("ScaleDownStabilized: highest recommendation of the last %s is %d, keep %d", down.StabilizationWindow, downRec, rec)
	}
	return rec, why, kept
}

// limitHPA follows upstream convertDesiredReplicasWithBehaviorRate: on a
// scale-up the count may reach the rate limit (never under the count) and
// MaxReplicas, on a scale-down the rate limit (never over the count) and
// MinReplicas. It returns the bounded count and, when it bounds desired,
// the upstream condition reason with the numbers.
func limitHPA(cfg HPAConfig, upEvents, downEvents []HPAScaleEvent, current, desired int, now time.Time) (int, string) {
	switch {
	case desired > current:
		limit, how := scaleUpLimitHPA(current, upEvents, downEvents, cfg.ScaleUp, now)
		limit = max(limit, current)
		if cfg.MaxReplicas > limit {
			if desired > limit {
				return limit, fmt.Sprintf("ScaleUpLimit: %s allows %d", how, limit)
			}
		} else if desired > cfg.MaxReplicas {
			return cfg.MaxReplicas, fmt.Sprintf("TooManyReplicas: max %d", cfg.MaxReplicas)
		}
	case desired < current:
		limit, how := scaleDownLimitHPA(current, upEvents, downEvents, cfg.ScaleDown, now)
		limit = min(limit, current)
		if cfg.MinReplicas < limit {
			if desired < limit {
				return limit, fmt.Sprintf("ScaleDownLimit: %s allows %d", how, limit)
			}
		} else if desired < cfg.MinReplicas {
			return cfg.MinReplicas, fmt.Sprintf("TooFewReplicas: min %d", cfg.MinReplicas)
		}
	}
	return desired, ""
}

// scaleUpLimitHPA follows upstream calculateScaleUpLimitWithScalingRules:
// each policy allows, from the count at the start of its period (the count
// minus the pods added plus the pods removed within it), +Value pods or
// ceil(+Value %); Max takes the largest, Min the smallest, Disabled keeps
// the count.
func scaleUpLimitHPA(current int, upEvents, downEvents []HPAScaleEvent, r HPAScalingRules, now time.Time) (int, string) {
	if r.SelectPolicy == HPASelectDisabled {
		return current, "scale-up disabled"
	}
	return selectLimit(r, current, upEvents, downEvents, now, false)
}

// scaleDownLimitHPA follows upstream calculateScaleDownLimitWithBehaviors:
// each policy allows, from the count at the start of its period, -Value
// pods or -Value % (truncated toward zero); Max takes the lowest count
// (the largest change), Min the highest, Disabled keeps the count.
func scaleDownLimitHPA(current int, upEvents, downEvents []HPAScaleEvent, r HPAScalingRules, now time.Time) (int, string) {
	if r.SelectPolicy == HPASelectDisabled {
		return current, "scale-down disabled"
	}
	return selectLimit(r, current, upEvents, downEvents, now, true)
}

func selectLimit(r HPAScalingRules, current int, upEvents, downEvents []HPAScaleEvent, now time.Time, down bool) (int, string) {
	// Max change: up takes the highest count, down the lowest; Min the reverse.
	pickHigh := (r.SelectPolicy != HPASelectMin) != down
	var result int
	var parts []string
	for i, p := range r.Policies {
		start := current - changeInPeriod(p.Period, upEvents, now) + changeInPeriod(p.Period, downEvents, now)
		var proposed int
		switch {
		case p.Type == HPAPodsPolicy && !down:
			proposed = start + p.Value
		case p.Type == HPAPodsPolicy:
			proposed = start - p.Value
		case !down:
			proposed = hpaCeil(big.NewRat(int64(start)*int64(100+p.Value), 100))
		default:
			proposed = hpaTrunc(big.NewRat(int64(start)*int64(100-p.Value), 100))
		}
		sign, unit := "+", ""
		if down {
			sign = "-"
		}
		if p.Type == HPAPercentPolicy {
			unit = "%"
		}
		parts = append(parts, fmt.Sprintf("%s%d%s/%s from %d: %d", sign, p.Value, unit, p.Period, start, proposed))
		if i == 0 || (pickHigh && proposed > result) || (!pickHigh && proposed < result) {
			result = proposed
		}
	}
	return result, fmt.Sprintf("%s of (%s)", cmp.Or(r.SelectPolicy, HPASelectMax), strings.Join(parts, ", "))
}

// changeInPeriod follows upstream getReplicasChangePerPeriod: the pods
// changed by the events after now minus period.
func changeInPeriod(period time.Duration, events []HPAScaleEvent, now time.Time) int {
	cutoff := now.Add(-period)
	n := 0
	for _, e := range events {
		if e.At.After(cutoff) {
			n += e.Change
		}
	}
	return n
}

// hpaCeil rounds r up to an integer, saturated to the int32 range as
// upstream's replica counts are.
func hpaCeil(r *big.Rat) int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // floor: the denominator is > 0
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return saturate(q)
}

// hpaTrunc rounds r toward zero, as upstream's int32(float64) conversion.
func hpaTrunc(r *big.Rat) int {
	return saturate(new(big.Int).Quo(r.Num(), r.Denom()))
}

func saturate(q *big.Int) int {
	switch {
	case q.Cmp(big.NewInt(math.MaxInt32)) > 0:
		return math.MaxInt32
	case q.Cmp(big.NewInt(math.MinInt32)) < 0:
		return math.MinInt32
	}
	return int(q.Int64())
}
