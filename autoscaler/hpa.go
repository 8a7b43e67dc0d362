package autoscaler

// The "hpa" policy: the Kubernetes HorizontalPodAutoscaler's
// arithmetic and behaviour, with KEDA's fallback, as one pure function of
// (config, state, observation, now). This file holds the round; its
// configuration is in hpa_config.go, the replica calculation in
// hpa_replicas.go and the behaviour (stabilization, rate policies) in
// hpa_behavior.go.
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
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

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
