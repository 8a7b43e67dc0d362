package kube

import (
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/scaleproof/scaleproof/scenarios/target"
)

// The HPA's scaling behavior as the controller runs it, for the contracts'
// bounds of the hpa and keda targets. Source: Kubernetes docs, Horizontal
// Pod Autoscaling, "Configurable scaling behavior" and "Default Behavior":
//
//   - scaleUp, when unset: stabilizationWindowSeconds 0; policies +4 Pods
//     and +100 Percent per 15 s; selectPolicy Max (the largest change).
//   - scaleDown, when unset: stabilizationWindowSeconds from
//     kube-controller-manager's --horizontal-pod-autoscaler-downscale-stabilization
//     (300 s); policy 100 Percent per 15 s; selectPolicy Max.
//   - A rules block that sets only some fields gets the defaults for the
//     others (the API server's defaulting fills selectPolicy and policies; a
//     nil scaleDown window is the controller flag's).
//   - tolerance (beta since Kubernetes 1.34) defaults to
//     --horizontal-pod-autoscaler-tolerance, 0.1.
//   - selectPolicy Disabled turns that direction off.

// DefaultTolerance is kube-controller-manager's
// --horizontal-pod-autoscaler-tolerance.
const DefaultTolerance = 0.1

// rules is one direction's behavior with every default filled in.
type rules struct {
	window    time.Duration
	policies  []autoscalingv2.HPAScalingPolicy
	selectP   autoscalingv2.ScalingPolicySelect
	tolerance float64
	// windowSet is whether the HPA set the window itself (else a default).
	windowSet bool
}

func (r rules) disabled() bool { return r.selectP == autoscalingv2.DisabledPolicySelect }

// scaling is an HPA's behavior, both directions.
type scaling struct{ up, down rules }

// behaviorOf fills b's defaults (b may be nil); downDefault is the
// controller's default scale-down window.
func behaviorOf(b *autoscalingv2.HorizontalPodAutoscalerBehavior, downDefault time.Duration) scaling {
	var up, down *autoscalingv2.HPAScalingRules
	if b != nil {
		up, down = b.ScaleUp, b.ScaleDown
	}
	return scaling{
		up: fill(up, 0, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		}),
		down: fill(down, downDefault, []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		}),
	}
}

func fill(r *autoscalingv2.HPAScalingRules, window time.Duration, policies []autoscalingv2.HPAScalingPolicy) rules {
	out := rules{window: window, policies: policies, selectP: autoscalingv2.MaxChangePolicySelect, tolerance: DefaultTolerance}
	if r == nil {
		return out
	}
	if r.StabilizationWindowSeconds != nil {
		out.window, out.windowSet = time.Duration(*r.StabilizationWindowSeconds)*time.Second, true
	}
	if r.SelectPolicy != nil {
		out.selectP = *r.SelectPolicy
	}
	if len(r.Policies) > 0 {
		out.policies = r.Policies
	}
	if r.Tolerance != nil {
		out.tolerance = r.Tolerance.AsApproximateFloat64()
	}
	return out
}

// maxDrainSyncs bounds drainTime's simulation.
const maxDrainSyncs = 100_000

// drainTime is how long the scale-down policies take to bring the count
// from from to to, one controller sync every sync, counting from the first
// sync at which the stabilized recommendation is to (the controller's
// calculateScaleDownLimitWithBehaviors: per policy, the count at the start
// of its period less Value pods, or times 1 - Value %; selectPolicy Max
// takes the lowest such limit, Min the highest). ok is false when the
// policies never get there within maxDrainSyncs syncs (or are disabled).
func drainTime(from, to int, r rules, sync time.Duration) (time.Duration, bool) {
	if from <= to {
		return 0, true
	}
	if r.disabled() || sync <= 0 {
		return 0, false
	}
	type removal struct {
		at time.Duration
		n  int
	}
	var done []removal
	c := from
	for i := range maxDrainSyncs {
		now := time.Duration(i) * sync
		limit, have := 0, false
		for _, p := range r.policies {
			period := time.Duration(p.PeriodSeconds) * time.Second
			start := c
			for _, d := range done {
				if d.at > now-period {
					start += d.n
				}
			}
			var proposed int
			switch p.Type {
			case autoscalingv2.PodsScalingPolicy:
				proposed = start - int(p.Value)
			case autoscalingv2.PercentScalingPolicy:
				proposed = int(float64(start) * (1 - float64(p.Value)/100))
			default:
				continue
			}
			switch {
			case !have:
				limit, have = proposed, true
			case r.selectP == autoscalingv2.MinChangePolicySelect:
				limit = max(limit, proposed)
			default:
				limit = min(limit, proposed)
			}
		}
		if !have {
			return 0, false // no policy of a known type
		}
		if next := max(to, limit); next < c {
			done = append(done, removal{now, c - next})
			c = next
		}
		if c <= to {
			return now, true
		}
	}
	return 0, false
}

// hpaParams are what an HPA's contracts follow.
// initialReadinessDelay is kube-controller-manager's
// --horizontal-pod-autoscaler-initial-readiness-delay default: a pod whose
// readiness changed within it is not yet counted by its metric.
const initialReadinessDelay = 30 * time.Second

// dwText is the scale-down stabilization window in words.
func dwText(p hpaParams) string {
	return p.windowText(p.b.down, "behavior.scaleDown.stabilizationWindowSeconds")
}

type hpaParams struct {
	sync     time.Duration
	min, max int
	b        scaling
	// where says whose spec the settings are ("the HPA's", "the
	// ScaledObject's advanced.horizontalPodAutoscalerConfig").
	where string
}

func policiesText(r rules) string {
	var ps []string
	for _, p := range r.policies {
		unit := " pods"
		if p.Type == autoscalingv2.PercentScalingPolicy {
			unit = " %"
		}
		ps = append(ps, fmt.Sprintf("%d%s per %d s", p.Value, unit, p.PeriodSeconds))
	}
	return strings.Join(ps, " or ") + ", selectPolicy " + string(r.selectP)
}

func (p hpaParams) windowText(r rules, field string) string {
	if r.windowSet {
		return fmt.Sprintf("%s, %s %s", target.Secs(r.window), p.where, field)
	}
	return target.Secs(r.window) + ", the default"
}

// hpaContracts are the contracts of the cluster's HPA controller with p's
// settings; keda.go adjusts some for KEDA's own loop.
func hpaContracts(p hpaParams) target.Contracts {
	c := target.Contracts{}
	sync := target.Secs(p.sync)
	syncSrc := hpaDoc + `, "How does a HorizontalPodAutoscaler work?" (kube-controller-manager --horizontal-pod-autoscaler-sync-period)`

	switch {
	case p.b.up.disabled():
		c[target.FactScalesUp] = target.Contract{NotApplicable: "behavior.scaleUp.selectPolicy is Disabled: this HPA never scales up"}
	case p.max <= p.min:
		c[target.FactScalesUp] = target.Contract{NotApplicable: fmt.Sprintf("maxReplicas %d is not above minReplicas %d: the count cannot rise", p.max, p.min)}
	default:
		c[target.FactScalesUp] = target.Contract{Applies: true, Bound: p.sync + p.b.up.window,
			Text: fmt.Sprintf("a metric above its target by more than the tolerance (%g) raises the count at the next sync (every %s) once the scale-up stabilization window (%s) has held it, at most %s; counted from the first metric reading above the target (the metric pipeline's own delay is not the HPA's)",
				p.b.up.tolerance, sync, p.windowText(p.b.up, "behavior.scaleUp.stabilizationWindowSeconds"), policiesText(p.b.up)),
			Source: hpaDoc + `, "Algorithm details", "Stabilization window", "Default Behavior"`}
	}
	c[target.FactWithinBounds] = target.Contract{Applies: true, Bound: p.sync,
		Text: fmt.Sprintf("desiredReplicas stays within minReplicas (%d) and maxReplicas (%d); a count outside them (set by hand, or above a lowered max) is brought within at the next sync (%s)",
			p.min, p.max, sync),
		Source: "Kubernetes API, HorizontalPodAutoscalerSpec (minReplicas, maxReplicas); " + syncSrc}
	c[target.FactLoweredMax] = target.Contract{Applies: true, Bound: p.sync,
		Text:   fmt.Sprintf("a maxReplicas lowered below the count applies at the next sync (%s): the controller sets the count to maxReplicas at once, with no stabilization window or rate policy (\"Current number of replicas above Spec.MaxReplicas\")", sync),
		Source: syncSrc + "; the HPA controller, pkg/controller/podautoscaler (reconcileAutoscaler)"}
	c[target.FactViewerRefused] = target.Contract{Applies: true,
		Text:   "the viewer's Role grants only get, list and watch: the API server answers its patch of the HPA and its update of deployments/scale with 403 Forbidden, and nothing changes",
		Source: rbacDoc}
	c[target.FactAdminAllowed] = target.Contract{Applies: true,
		Text:   "the admin's Role grants patch on horizontalpodautoscalers: the API server accepts its minReplicas and maxReplicas (422 Invalid for maxReplicas below minReplicas, or minReplicas below 1)",
		Source: rbacDoc + "; Kubernetes API, HorizontalPodAutoscalerSpec"}
	if p.b.down.disabled() {
		c[target.FactCountSet] = target.Contract{Applies: true,
			Text:   "behavior.scaleDown.selectPolicy is Disabled: a count raised by hand above the recommendation is kept (the HPA never scales down)",
			Source: hpaDoc + `, "Configurable scaling behavior"`}
	} else {
		// A count raised by hand is, to the HPA, a count above its
		// recommendation: it comes down as any scale-down does. The new
		// pods count as at their target on a scale-down until they have a
		// metric (missing metrics; the initial readiness delay), and the
		// stabilization window then holds the highest recommendation it saw.
		c[target.FactCountSet] = target.Contract{Applies: true, Bound: p.b.down.window + 2*p.sync + initialReadinessDelay,
			Text: fmt.Sprintf("the HPA owns the count: a count raised by hand is brought back to its recommendation like any scale-down, once the new pods have a metric (until then they count as at the target; initial readiness delay %s) and the scale-down stabilization window (%s) has held the lower recommendation, at a sync (every %s); a count of 0 turns the HPA off instead (ScalingActive False)",
				target.Secs(initialReadinessDelay), dwText(p), sync),
			Source: hpaDoc + `, "Algorithm details" (missing metrics, not-yet-ready pods), "Stabilization window", "Migrating Deployments and StatefulSets to horizontal autoscaling"; kube-controller-manager --horizontal-pod-autoscaler-initial-readiness-delay; ` + syncSrc}
	}
	c[target.FactTrail] = target.Contract{Applies: true, Bound: p.sync,
		Text:   "every rescale the HPA makes is a SuccessfulRescale Event on the HPA (\"New size: N; reason: ...\": the new size, not the old), recorded in the sync that makes it; repeats to the same size fold into one Event (its count, first and last time); a count set by hand is no Event of the HPA; Events expire after the API server's --event-ttl (1 h)",
		Source: eventsDoc + "; the HPA controller, pkg/controller/podautoscaler"}
	c[target.FactTrailActor] = target.Contract{NotApplicable: "an HPA Event names its controller (source horizontal-pod-autoscaler), never who patched the HPA or the scale: that is only in the API server's audit log, when one is enabled"}

	dw := p.windowText(p.b.down, "behavior.scaleDown.stabilizationWindowSeconds")
	winSrc := hpaDoc + `, "Stabilization window", "Default Behavior"; kube-controller-manager --horizontal-pod-autoscaler-downscale-stabilization`
	if p.b.down.disabled() {
		c[target.FactNoEarlyScaleDown] = target.Contract{Applies: true, Bound: p.b.down.window,
			Text:   "behavior.scaleDown.selectPolicy is Disabled: this HPA never scales down",
			Source: hpaDoc + `, "Configurable scaling behavior"`}
		c[target.FactBackToMin] = target.Contract{NotApplicable: "behavior.scaleDown.selectPolicy is Disabled: this HPA never scales down"}
	} else {
		c[target.FactNoEarlyScaleDown] = target.Contract{Applies: true, Bound: p.b.down.window,
			Text:   fmt.Sprintf("no scale-down before the stabilization window (%s) has held the lower recommendation: the HPA takes the highest recommendation within the window", dw),
			Source: winSrc}
		if d, ok := drainTime(p.max, p.min, p.b.down, p.sync); ok {
			c[target.FactBackToMin] = target.Contract{Applies: true, Bound: p.b.down.window + p.sync + d,
				Text: fmt.Sprintf("after the load the count returns to minReplicas (%d) within the stabilization window (%s), one sync (%s) and %s for the scale-down policies (%s) to take it down from maxReplicas (%d); counted from when the metric falls under the target (a run counts from the load's end and allows one metric resolution and one sync for that)",
					p.min, dw, sync, target.Secs(d), policiesText(p.b.down), p.max),
				Source: winSrc + `; "Scaling policies"`}
		} else {
			c[target.FactBackToMin] = target.Contract{NotApplicable: fmt.Sprintf("the scale-down policies (%s) never bring maxReplicas %d down to minReplicas %d", policiesText(p.b.down), p.max, p.min)}
		}
	}
	c[target.FactOutageHolds] = target.Contract{NotApplicable: "the HPA makes no such promise: pods whose metrics are missing are assumed at 100 % of the target on a scale-down, but a frozen pod that still reports a low CPU reading counts as low, and the HPA scales in"}
	return c
}
