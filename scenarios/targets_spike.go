package scenarios

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// targetSpikeProfile is the post's k6 stages (SpikeStages) scaled by the
// profile's SpikeScale (times) and SpikeVUScale (VUs): at 1, 5 → 50 VUs over 2 min, 50 for 1 min, two
// spikes to 100 of 30 s up and 30 s down, 50 → 0 over 2 min (7 min).
func targetSpikeProfile(p Profile) load.Profile {
	start, stages := SpikeStartVUs, SpikeStages()
	if v := p.SpikeVUScale; v > 0 && v != 1 {
		start = max(1, int(math.Round(float64(start)*v)))
		for i := range stages {
			stages[i].Target = int(math.Round(float64(stages[i].Target) * v))
		}
	}
	lp := load.RampingVUs(start, stages...).Scale(p.SpikeScale)
	lp.GracefulStop, lp.GracefulRampDown, lp.ThinkTime = p.GracefulStop, p.GracefulStop, p.ThinkTime
	return lp
}

// backMargin is what FactBackToMin allows past the contract's bound after
// the load's end: one metric resolution for the signal to show the end and
// one sync period for the controller to read it.
func backMargin(p Profile) time.Duration { return p.MetricResolution + p.SyncPeriod }

// backWait is how long after the load's end the count may take to come
// back to min: the back-to-min contract's Bound when the target promises
// it (else the profile's stabilization window), plus backMargin.
func backWait(p Profile, back target.Contract) time.Duration {
	if back.Applies {
		return back.Bound + backMargin(p)
	}
	return p.Stabilization + backMargin(p)
}

// TargetSpike: from the count at rest, the post's k6 stages (ramp up, hold,
// two spikes, ramp down; scaled by the profile). A timeline point is
// written every sample (time, the load's VUs and in-flight, the target's
// count, ready, desiredReplicas, bounds and metric). Facts: the count is
// above min within the contract's Bound of the end of the first ramp (the
// load at 50 VUs), at a reading no later than Bound plus one sample
// interval (FactScalesUp); every reading within min and max
// (FactWithinBounds); no step down before the contract's Bound (the
// stabilization window) has passed since the latest drop of the load's VU
// target at or before it (FactNoEarlyScaleDown, see earlyScaleDowns); and
// the count back at min within Bound plus backMargin of the load's end
// (FactBackToMin).
func TargetSpike() Scenario {
	return Scenario{
		Name:  "target-spike",
		Title: "the k6 stages of Grafana's post (ramp up, hold, two spikes, ramp down): up, within bounds, no early scale-down, back to min",
		Facts: []target.Fact{target.FactScalesUp, target.FactWithinBounds, target.FactNoEarlyScaleDown, target.FactBackToMin},
		Expected: func(p Profile, c target.Contracts) time.Duration {
			return targetSpikeProfile(p).TotalDuration() + backWait(p, c[target.FactBackToMin])
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if err := s.settle(ctx); err != nil {
				return err
			}
			p := e.Profile
			iv := p.SampleInterval
			lp := targetSpikeProfile(p)
			total := lp.TotalDuration()
			var stages []stageAt
			var at time.Duration
			for _, st := range lp.Stages {
				stages = append(stages, stageAt{From: at, Target: st.Target})
				at += st.Duration
			}
			vus := []string{fmt.Sprint(lp.StartVUs)}
			for _, st := range lp.Stages {
				if t := fmt.Sprint(st.Target); t != vus[len(vus)-1] {
					vus = append(vus, t)
				}
			}
			s.Phase(fmt.Sprintf("staged load: %s VUs over %s", strings.Join(vus, " → "), total))
			from := s.now()
			l := s.startLoad(ctx, lp)
			if err := s.hold(ctx, total+p.GracefulStop+2*iv, l.Done); err != nil {
				return err
			}
			l.Stop()
			l.Wait()
			if err := l.Err(); err != nil {
				return err
			}
			end := from.Add(total)
			s.Phase("load ended: waiting for the count to come back to min")
			var back target.Sample
			var backErr error
			if left := end.Add(backWait(p, s.contract(target.FactBackToMin))).Sub(s.now()); left > 0 {
				back, backErr = s.waitFor(ctx, "the count back at min", left, func(x target.Sample) bool { return x.Count == x.Min })
			} else {
				back = s.sample(ctx)
				if back.Err != "" || back.Count != back.Min {
					backErr = fmt.Errorf("%w: count %d, min %d once the load had ended", errTimeout, back.Count, back.Min)
				}
			}
			if backErr != nil && !isTimeout(backErr) {
				return backErr
			}
			samples := goodSince(s.Samples(), from)
			if s.applies(target.FactScalesUp) {
				b := s.contract(target.FactScalesUp).Bound
				rampEnd := from.Add(lp.Stages[0].Duration)
				x, ok := firstAbove(samples, from)
				ref, what := rampEnd, ""
				if ok {
					// the bound counts from the end of the first ramp, or from
					// the autoscaler's own reading of its metric above the
					// target when that came later (the metric pipeline's delay)
					if m, w := scaleUpFrom(samples, from, x); w != "" && m.After(ref) {
						ref, what = m, w
					}
				}
				from2 := fmt.Sprintf("the first ramp reached %d VUs at t=%.1fs", lp.Stages[0].Target, s.Since(rampEnd))
				if what != "" {
					from2 = fmt.Sprintf("%s at t=%.1fs (the first ramp reached %d VUs at t=%.1fs)", what, s.Since(ref), lp.Stages[0].Target, s.Since(rampEnd))
				}
				s.check(target.FactScalesUp, ok && !x.At.After(ref.Add(b+iv)),
					"%s; %s (bound %s from there, sampled every %s)",
					orText(ok, fmt.Sprintf("count %d > min %d at t=%.1fs", x.Count, x.Min, s.Since(x.At)), "the count never rose above min"),
					from2, b, iv)
			}
			if s.applies(target.FactWithinBounds) {
				bad := outOfBounds(samples, s.Since)
				s.check(target.FactWithinBounds, len(samples) > 0 && len(bad) == 0, "%d readings, %d outside min and max%s",
					len(samples), len(bad), listFirst(bad, 5))
			}
			if s.applies(target.FactNoEarlyScaleDown) {
				b := s.contract(target.FactNoEarlyScaleDown).Bound
				drops := loadDrops(from, lp.StartVUs, stages)
				early := earlyScaleDowns(samples, drops, b, s.Start)
				downs := 0
				for _, c := range countChanges(samples) {
					if c.To < c.From {
						downs++
					}
				}
				s.check(target.FactNoEarlyScaleDown, downs > 0 && len(early) == 0,
					"%d steps down seen, %d before %s had passed since the load's latest drop (drops at %s)%s",
					downs, len(early), b, timesSince(drops, s.Start), listFirst(early, 5))
			}
			if s.applies(target.FactBackToMin) {
				b := s.contract(target.FactBackToMin).Bound
				s.check(target.FactBackToMin, backErr == nil, "%s (bound %s + %s margin from the load's end at t=%.1fs)",
					errOr(backErr, "count back at min %d %.1f s after the load's end", back.Min, back.At.Sub(end).Seconds()), b, backMargin(p), s.Since(end))
			}
			return nil
		},
	}
}

func orText(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

func timesSince(ts []time.Time, from time.Time) string {
	out := "["
	for i, t := range ts {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("t=%.1fs", t.Sub(from).Seconds())
	}
	return out + "]"
}
