package scenarios

// The hpa facts: how an hpa zone's count moved, judged against upstream's
// HorizontalPodAutoscaler behaviour (Kubernetes docs, "Horizontal Pod
// Autoscaling": the algorithm details, "Stabilization window", "Scaling
// policies" and the default behavior; KEDA's Prometheus trigger feeds it an
// External AverageValue metric). Everything here is pure: functions over
// what the harness observed of one zone (the console's query rounds, as its
// policy status reports them, and its audit trail with the console's exact
// times) and the zone's settings as the console resolved them. They are
// table-tested with synthetic traces (hpafacts_test.go).
//
// The recommendation of a round is recomputed by the harness from the value
// the console read, never taken from the console's decision: for an
// AverageValue metric, ratio = value ÷ (threshold × pods); within the
// tolerance band [1 − down, 1 + up] (inclusive) it is the pods, else
// ceil(value ÷ threshold). For a Value metric ratio = value ÷ threshold,
// within the band it is the count, else ceil(ratio × ready pods).

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
)

// HPARules are the settings of an hpa zone the hpa facts depend on.
type HPARules struct {
	Threshold float64 // the value per replica (AverageValue) or the total (Value)
	Value     bool    // the target is Value, not AverageValue
	// TolUp and TolDown: a ratio r with 1 − TolDown <= r <= 1 + TolUp does
	// not scale (upstream's --horizontal-pod-autoscaler-tolerance, 0.1).
	TolUp, TolDown float64
	Min, Max       int
	// UpWindow and DownWindow are the stabilization windows (upstream 0 and
	// 300 s; the quick profile 0 and 30 s).
	UpWindow, DownWindow time.Duration
	// UpSelect ("Max", "Min", "Disabled") and UpPolicies: the scale-up rate
	// policies (upstream: +4 pods or +100 % per 15 s, Max).
	UpSelect   string
	UpPolicies []HPARatePolicy
	// Source says where these came from (the console's resolved policy).
	Source string
}

// HPARatePolicy is one scale-up rate policy: at most Value pods (or Value %
// of the count at the start of the period) added per Period.
type HPARatePolicy struct {
	Percent bool
	Value   int
	Period  time.Duration
}

// HPARulesOf reads the rules from the console's resolved policy view.
func HPARulesOf(v consoleclient.PolicyView) (HPARules, bool) {
	spec := v.HPA
	if spec == nil {
		return HPARules{}, false
	}
	r := HPARules{Threshold: spec.Threshold, Value: spec.Target == "Value", TolUp: 0.1, TolDown: 0.1, Min: 1,
		Max: v.EffectiveMaxReplicas, UpSelect: "Max",
		UpPolicies: []HPARatePolicy{{Value: 4, Period: 15 * time.Second}, {Percent: true, Value: 100, Period: 15 * time.Second}},
		Source:     "the console's resolved policy of the zone"}
	if r.Max == 0 {
		r.Max = v.MaxCount
	}
	if spec.MinReplicas != nil {
		r.Min = *spec.MinReplicas
	}
	secs := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	up, down := 0.0, 300.0
	if b := spec.Behavior; b != nil {
		stabilization(b.ScaleUp, &up, &r.TolUp)
		stabilization(b.ScaleDown, &down, &r.TolDown)
		if u := b.ScaleUp; u != nil {
			if u.SelectPolicy != "" {
				r.UpSelect = u.SelectPolicy
			}
			if len(u.Policies) > 0 {
				r.UpPolicies = nil
				for _, p := range u.Policies {
					r.UpPolicies = append(r.UpPolicies, HPARatePolicy{Percent: p.Type == "Percent", Value: p.Value, Period: secs(p.PeriodSeconds)})
				}
			}
		}
	}
	r.UpWindow, r.DownWindow = secs(up), secs(down)
	return r, true
}

// stabilization reads what r (one direction of an hpa behavior; nil: none)
// sets: its stabilization window, in seconds, into window and its
// tolerance into tol; what r leaves unset keeps its value.
func stabilization(r *consoleclient.HPARules, window, tol *float64) {
	if r == nil {
		return
	}
	if r.StabilizationWindowSeconds != nil {
		*window = *r.StabilizationWindowSeconds
	}
	if r.Tolerance != nil {
		*tol = *r.Tolerance
	}
}

// exactRat reads f as the shortest decimal that reads back as f, as the
// reference policy does, so a ratio of exactly 1.1 is within 0.1.
func exactRat(f float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok {
		return new(big.Rat)
	}
	return r
}

func ceilRat(r *big.Rat) int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 1 << 30
	}
	return int(q.Int64())
}

// hpaRec is one round's recommendation as the harness recomputes it.
type hpaRec struct {
	At     time.Time
	Rec    int  // the unstabilized recommendation (upstream's per-metric proposal)
	Within bool // the ratio was within the tolerance band
	Ratio  float64
	Value  float64
	Pods   int
	From   int
}

// recommend recomputes the round's recommendation; false when the metric
// failed (no recommendation: the round holds).
func (h HPARules) recommend(r consoleclient.PolicyRound) (hpaRec, bool) {
	if r.Value == nil || h.Threshold <= 0 {
		return hpaRec{}, false
	}
	v, t := exactRat(*r.Value), exactRat(h.Threshold)
	lo := new(big.Rat).Sub(big.NewRat(1, 1), exactRat(h.TolDown))
	hi := new(big.Rat).Add(big.NewRat(1, 1), exactRat(h.TolUp))
	out := hpaRec{At: r.At, Value: *r.Value, Pods: r.Pods, From: r.From}
	var ratio *big.Rat
	if h.Value {
		ratio = new(big.Rat).Quo(v, t)
		out.Rec = ceilRat(new(big.Rat).Mul(ratio, big.NewRat(int64(r.Ready), 1)))
		out.Within = ratio.Cmp(lo) >= 0 && ratio.Cmp(hi) <= 0
		if out.Within {
			out.Rec = r.From
		}
	} else {
		out.Rec = ceilRat(new(big.Rat).Quo(v, t))
		if r.Pods > 0 {
			ratio = new(big.Rat).Quo(v, new(big.Rat).Mul(t, big.NewRat(int64(r.Pods), 1)))
			out.Within = ratio.Cmp(lo) >= 0 && ratio.Cmp(hi) <= 0
			if out.Within {
				out.Rec = r.Pods
			}
		}
	}
	if ratio != nil {
		out.Ratio, _ = ratio.Float64()
	}
	return out, true
}

// recs recomputes every round's recommendation, oldest first.
func (h HPARules) recs(rounds []consoleclient.PolicyRound) []hpaRec {
	var out []hpaRec
	for _, r := range rounds {
		if x, ok := h.recommend(r); ok {
			out = append(out, x)
		}
	}
	slices.SortStableFunc(out, func(a, b hpaRec) int { return a.At.Compare(b.At) })
	return out
}

// roundAt is the recomputed round at t (the console's own time of the
// change, within exactSlack), if any.
func roundAt(recs []hpaRec, t time.Time) (hpaRec, bool) {
	for _, r := range recs {
		if near(r.At, t) {
			return r, true
		}
	}
	return hpaRec{}, false
}

func (h HPARules) band() string {
	return fmt.Sprintf("[%s, %s]", strconv.FormatFloat(1-h.TolDown, 'f', -1, 64), strconv.FormatFloat(1+h.TolUp, 'f', -1, 64))
}

// upWindowLowest is the lowest recommendation of the scale-up
// stabilization window (at − UpWindow, at], r's (the round at at) included.
func (h HPARules) upWindowLowest(recs []hpaRec, r hpaRec, at time.Time) int {
	lowest := r.Rec
	for _, x := range recs {
		if x.At.After(at.Add(-h.UpWindow)) && !x.At.After(at) {
			lowest = min(lowest, x.Rec)
		}
	}
	return lowest
}

func plusAt(t, since time.Time) string { return fmt.Sprintf("+%.1f s", t.Sub(since).Seconds()) }

// JudgeHPA returns the three hpa facts for a zone's rounds and audit trail
// (since: the zero of the times in the details).
func JudgeHPA(h HPARules, rounds []consoleclient.PolicyRound, audit []consoleclient.AuditEntry, since time.Time) []reports.Fact {
	recs := h.recs(rounds)
	changes := Changes(audit)
	return []reports.Fact{
		*FactHPAStabilization(h, recs, changes, since),
		*FactHPAScaleUp(h, recs, changes, since),
		*FactHPATolerance(h, recs, changes, since),
	}
}

// FactHPAStabilization: a step down to N at t is allowed only if every
// recommendation of the rounds in (t − DownWindow, t] was <= N (upstream:
// the highest recommendation of the scale-down stabilization window wins).
func FactHPAStabilization(h HPARules, recs []hpaRec, changes []Change, since time.Time) *reports.Fact {
	var bad []string
	n := 0
	for _, c := range changes {
		if c.Kind != "down" || c.From > h.Max {
			continue // a count over the max goes to the max at once
		}
		n++
		if _, ok := roundAt(recs, c.At); !ok {
			bad = append(bad, fmt.Sprintf("down %d->%d at %s: no query round of the console at that time", c.From, c.To, plusAt(c.At, since)))
			continue
		}
		cutoff := c.At.Add(-h.DownWindow)
		var highest *hpaRec
		for i, r := range recs {
			if r.At.After(cutoff) && !r.At.After(c.At.Add(exactSlack)) && (highest == nil || r.Rec > highest.Rec) {
				highest = &recs[i]
			}
		}
		if highest != nil && highest.Rec > c.To {
			bad = append(bad, fmt.Sprintf("down %d->%d at %s: recommendation %d at %s (value %g over %d pods) is within the %s window before it",
				c.From, c.To, plusAt(c.At, since), highest.Rec, plusAt(highest.At, since), highest.Value, highest.Pods, secs(h.DownWindow)))
		}
	}
	return fact(fmt.Sprintf("no scale-down before the %s stabilization window has held the recommendation", secs(h.DownWindow)),
		len(bad) == 0, "%d steps down, each against the highest recommendation of the window before it (recomputed from the value "+
			"the console read each round: threshold %g, tolerance %s; settings from %s)%s",
		n, h.Threshold, h.band(), h.Source, listed(bad))
}

// scaleUpLimit is upstream's calculateScaleUpLimitWithScalingRules for a
// step up from current at t: each policy allows, from the count at the
// start of its period (current minus the pods added plus the pods removed by
// the autoscale changes of the period before t), +Value pods or ceil(+Value
// %); Max takes the largest, Min the smallest, Disabled keeps the count.
func (h HPARules) scaleUpLimit(current int, changes []Change, t time.Time) int {
	if h.UpSelect == "Disabled" {
		return current
	}
	limit := 0
	for i, p := range h.UpPolicies {
		start := current
		cutoff := t.Add(-p.Period)
		for _, c := range changes {
			if !c.At.After(cutoff) || !c.At.Before(t.Add(-exactSlack)) {
				continue
			}
			switch c.Kind {
			case "up":
				start -= c.To - c.From
			case "down":
				start += c.From - c.To
			}
		}
		allowed := start + p.Value
		if p.Percent {
			allowed = ceilRat(big.NewRat(int64(start)*int64(100+p.Value), 100))
		}
		if i == 0 || (h.UpSelect == "Min" && allowed < limit) || (h.UpSelect != "Min" && allowed > limit) {
			limit = allowed
		}
	}
	return max(limit, current)
}

// FactHPAScaleUp: a step up from c to N at t stays within the behaviour's
// limits: N <= the lowest recommendation of the scale-up stabilization
// window (t − UpWindow, t], N <= the rate policies' limit, N <= Max. A count
// under Min goes to Min at once (upstream, before any metric).
func FactHPAScaleUp(h HPARules, recs []hpaRec, changes []Change, since time.Time) *reports.Fact {
	var bad []string
	n := 0
	for _, c := range changes {
		if c.Kind != "up" {
			continue
		}
		n++
		if c.From < h.Min && c.To <= h.Min {
			continue
		}
		r, ok := roundAt(recs, c.At)
		if !ok {
			bad = append(bad, fmt.Sprintf("up %d->%d at %s: no query round of the console at that time", c.From, c.To, plusAt(c.At, since)))
			continue
		}
		lowest := h.upWindowLowest(recs, r, c.At)
		limit := h.scaleUpLimit(c.From, changes, c.At)
		switch {
		case c.To > h.Max:
			bad = append(bad, fmt.Sprintf("up %d->%d at %s: over the max %d", c.From, c.To, plusAt(c.At, since), h.Max))
		case c.To > lowest:
			bad = append(bad, fmt.Sprintf("up %d->%d at %s: the recommendation was %d (value %g over %d pods, ratio %.3f; lowest of the %s scale-up window %d)",
				c.From, c.To, plusAt(c.At, since), r.Rec, r.Value, r.Pods, r.Ratio, secs(h.UpWindow), lowest))
		case c.To > limit:
			bad = append(bad, fmt.Sprintf("up %d->%d at %s: the rate policies allow %d", c.From, c.To, plusAt(c.At, since), limit))
		}
	}
	var pols []string
	for _, p := range h.UpPolicies {
		unit := " pods"
		if p.Percent {
			unit = " %"
		}
		pols = append(pols, fmt.Sprintf("+%d%s per %s", p.Value, unit, secs(p.Period)))
	}
	return fact("scale-up within the policy's limits (recommendation, scale-up stabilization window, rate policies, max)",
		len(bad) == 0, "%d steps up; rate policies %v select %s, scale-up window %s, max %d (settings from %s)%s",
		n, pols, h.UpSelect, secs(h.UpWindow), h.Max, h.Source, listed(bad))
}

// FactHPALimitExercised: at least one step up was bound by the scale-up
// rate policies: the recommendation of its round (the lowest of the
// scale-up window) exceeded the policies' limit for that step. It says a
// scenario built to drive the limit did drive it, so FactHPAScaleUp's pass
// covers the rate policies, not only steps that never reached them.
func FactHPALimitExercised(h HPARules, recs []hpaRec, changes []Change, since time.Time) *reports.Fact {
	var bound []string
	n := 0
	for _, c := range changes {
		if c.Kind != "up" {
			continue
		}
		n++
		r, ok := roundAt(recs, c.At)
		if !ok {
			continue
		}
		lowest := h.upWindowLowest(recs, r, c.At)
		if limit := h.scaleUpLimit(c.From, changes, c.At); min(lowest, h.Max) > limit {
			bound = append(bound, fmt.Sprintf("up %d->%d at %s: recommendation %d, limit %d", c.From, c.To, plusAt(c.At, since), lowest, limit))
		}
	}
	return fact("the scale-up rate policies were exercised: a step up had a recommendation over their limit",
		len(bound) > 0, "%d of %d steps up were bound by the rate policies%s", len(bound), n, listed(bound))
}

// FactHPATolerance: a round whose ratio was within the tolerance band, on a
// zone whose pods were its count (within [Min, Max]), never scales: it has
// no autoscale change at its time.
func FactHPATolerance(h HPARules, recs []hpaRec, changes []Change, since time.Time) *reports.Fact {
	var bad []string
	n := 0
	for _, r := range recs {
		if !r.Within || r.Pods != r.From || r.From < h.Min || r.From > h.Max {
			continue
		}
		n++
		for _, c := range changes {
			if (c.Kind == "up" || c.Kind == "down") && near(c.At, r.At) {
				bad = append(bad, fmt.Sprintf("%s %d->%d at %s: ratio %.3f (value %g over %d pods)", c.Kind, c.From, c.To, plusAt(c.At, since), r.Ratio, r.Value, r.Pods))
			}
		}
	}
	return fact(fmt.Sprintf("a ratio within the tolerance %s never scales", h.band()),
		len(bad) == 0, "%d rounds with the ratio (value ÷ (threshold %g × pods)) within %s, %d of them scaled (settings from %s)%s",
		n, h.Threshold, h.band(), len(bad), h.Source, listed(bad))
}

// withinRounds counts the recomputed rounds in [from, to] and those of them
// with the ratio within the tolerance band.
func (h HPARules) withinRounds(rounds []consoleclient.PolicyRound, from, to time.Time) (all, within int) {
	for _, r := range h.recs(rounds) {
		if r.At.Before(from) || r.At.After(to) {
			continue
		}
		all++
		if r.Within {
			within++
		}
	}
	return all, within
}
