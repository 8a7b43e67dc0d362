package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/target"
)

// TargetSustained: from the count at rest, a steady load of the profile's
// VUs (above the target's threshold) until the count rises above min, held
// SustainHold more. The count is above min within the contract's Bound
// (plus one sample interval) of the first reading of the autoscaler's
// metric above its target, or of the load's start where the target shows
// no metric (FactScalesUp); every reading has min <= count <= max
// (FactWithinBounds); and every change of the count the readings saw has a
// trail entry to the same count within the contract's Bound, the trail read
// once the load has stopped (FactTrail).
func TargetSustained() Scenario {
	return Scenario{
		Name:  "target-sustained",
		Title: "a steady load above the threshold: scales up within the bound, the count within min and max, every change in the trail",
		Facts: []target.Fact{target.FactScalesUp, target.FactWithinBounds, target.FactTrail},
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return 2*p.SyncPeriod + p.MetricResolution + p.SustainHold
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if err := s.settle(ctx); err != nil {
				return err
			}
			iv := e.Profile.SampleInterval
			up := e.Profile.UpTimeout
			scalesUp := s.applies(target.FactScalesUp)
			b := s.contract(target.FactScalesUp).Bound
			if scalesUp {
				up = max(up, b+iv)
			}
			s.Phase(fmt.Sprintf("steady load of %d VUs", e.Profile.VUs))
			from := s.now()
			l := s.startLoad(ctx, constantVUs(e.Profile, up+e.Profile.SustainHold+2*iv))
			x, err := s.waitFor(ctx, "the count above min under load", up, func(x target.Sample) bool { return x.Count > x.Min })
			if err != nil && !isTimeout(err) {
				return err
			}
			if scalesUp {
				// the bound counts from the autoscaler's own reading of its
				// metric above the target where it shows one (the metric
				// pipeline's delay is not the autoscaler's), else from the
				// load's start; the time from the load's start is reported
				ref, what := scaleUpFrom(s.good(from), from, x)
				ok := err == nil && x.At.Sub(ref) <= b+iv
				detail := errOr(err, "count %d > min %d %.1f s after the load started", x.Count, x.Min, x.At.Sub(from).Seconds())
				if err == nil && what != "" {
					detail += fmt.Sprintf(", %.1f s after %s", x.At.Sub(ref).Seconds(), what)
				}
				s.check(target.FactScalesUp, ok, "%s (bound %s, sampled every %s)", detail, b, iv)
			}
			s.Phase(fmt.Sprintf("load held %s", e.Profile.SustainHold))
			if err := s.hold(ctx, e.Profile.SustainHold, nil); err != nil {
				return err
			}
			l.Stop()
			l.Wait()
			if err := l.Err(); err != nil {
				return err
			}
			samples := s.good(s.Start)
			if s.applies(target.FactWithinBounds) {
				bad := outOfBounds(samples, s.Start)
				s.check(target.FactWithinBounds, len(samples) > 0 && len(bad) == 0, "%d readings, %d outside min and max%s",
					len(samples), len(bad), listFirst(bad, 5))
			}
			if s.applies(target.FactTrail) {
				trail, err := e.Target.Trail(ctx, s.Start)
				if err != nil {
					return fmt.Errorf("reading the trail: %w", err)
				}
				changes := countChanges(samples)
				bound := s.contract(target.FactTrail).Bound
				missing := missingFromTrail(changes, trail, bound, s.Start)
				s.check(target.FactTrail, len(changes) > 0 && len(missing) == 0,
					"%d changes of the count seen, %d trail entries, %d changes with no entry within %s%s",
					len(changes), len(trail), len(missing), bound, listFirst(missing, 5))
			}
			return nil
		},
	}
}
