package autoscaler

// The hpa policy's behaviour, as upstream's horizontal.go applies it after
// the replica calculation: the stabilization windows
// (stabilizeRecommendationWithBehaviors) and the scale-up and scale-down
// rate policies (convertDesiredReplicasWithBehaviorRate and the limits it
// calls). The round is in hpa.go.

import (
	"cmp"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
)

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
