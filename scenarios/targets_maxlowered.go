package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/target"
)

// loweredMax is the max target-max-lowered sets once the count is 3.
const loweredMax = 2

// TargetMaxLowered: under the profile's load, once the count is at least
// 3, an admin lowers the max to 2 (SetBounds(Admin, min, 2)). The count is
// at most 2 within the contract's Bound (0: at the very next reading; else
// at a reading no later than Bound plus one sample interval) and stays
// there while the load holds LoweredHold (FactLoweredMax); the admin's
// change and the restore of the bounds are accepted (FactAdminAllowed).
// The bounds are restored also when the scenario fails.
func TargetMaxLowered() Scenario {
	return Scenario{
		Name:  "target-max-lowered",
		Title: "at 3 under load an admin lowers max to 2: the count follows within the bound; the admin may change the bounds",
		Facts: []target.Fact{target.FactLoweredMax, target.FactAdminAllowed},
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return 3*p.SyncPeriod + p.MetricResolution + p.LoweredHold
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			t := e.Target
			before := s.sample(ctx)
			if before.Err != "" {
				return fmt.Errorf("reading the target: %s", before.Err)
			}
			if before.Max < 3 {
				return fmt.Errorf("the target's max is %d: lowering it to %d from a count of 3 needs max >= 3", before.Max, loweredMax)
			}
			iv := e.Profile.SampleInterval
			c := s.contract(target.FactLoweredMax)
			s.Phase(fmt.Sprintf("load of %d VUs until the count is 3", e.Profile.VUs))
			l := s.startLoad(ctx, constantVUs(e.Profile, e.Profile.UpTimeout+c.Bound+e.Profile.LoweredHold+4*iv))
			if _, err := s.waitFor(ctx, "the count at 3 or more under load", e.Profile.UpTimeout,
				func(x target.Sample) bool { return x.Count >= 3 }); err != nil {
				return err
			}
			restored := false
			restore := func() (target.Outcome, error) {
				restored = true
				return t.SetBounds(context.WithoutCancel(ctx), target.Admin, before.Min, before.Max)
			}
			defer func() {
				if !restored {
					_, _ = restore()
				}
			}()
			s.Phase(fmt.Sprintf("an admin lowers max to %d", loweredMax))
			o, err := t.SetBounds(ctx, target.Admin, before.Min, loweredMax)
			if err != nil {
				return fmt.Errorf("admin SetBounds: %w", err)
			}
			at := s.now()
			if s.applies(target.FactLoweredMax) {
				if !o.Accepted() {
					s.check(target.FactLoweredMax, false, "the admin's max %d was refused: %s", loweredMax, outcome(o))
				} else if err := judgeLoweredMax(ctx, e, s, c, at); err != nil {
					return err
				}
			}
			r, rerr := restore()
			if s.applies(target.FactAdminAllowed) {
				s.check(target.FactAdminAllowed, o.Accepted() && rerr == nil && r.Accepted(), "max %d → %d: %s; restored to min %d, max %d: %s%s",
					before.Max, loweredMax, outcome(o), before.Min, before.Max, outcome(r), errSuffix(rerr))
			}
			l.Stop()
			l.Wait()
			return l.Err()
		},
	}
}

// judgeLoweredMax waits for the count to come to at most loweredMax within
// the contract's bound, then holds the load and checks it stays there.
func judgeLoweredMax(ctx context.Context, e *Env, s *Scope, c target.Contract, at time.Time) error {
	iv := e.Profile.SampleInterval
	var x target.Sample
	var err error
	within := "at the next reading"
	if c.Bound == 0 {
		x, err = s.next(ctx)
		if err != nil {
			return err
		}
		if x.Count > loweredMax {
			err = fmt.Errorf("count %d at the next reading, %.1f s after max %d", x.Count, x.At.Sub(at).Seconds(), loweredMax)
		}
	} else {
		within = fmt.Sprintf("within %s (sampled every %s)", c.Bound, iv)
		x, err = s.waitFor(ctx, fmt.Sprintf("the count at most %d", loweredMax), c.Bound+iv, func(x target.Sample) bool { return x.Count <= loweredMax })
		if err != nil && !isTimeout(err) {
			return err
		}
	}
	if err != nil {
		s.check(target.FactLoweredMax, false, "max %d: %v", loweredMax, err)
		return nil
	}
	down := x.At
	var above []string
	herr := s.hold(ctx, e.Profile.LoweredHold, nil)
	if herr != nil {
		return herr
	}
	for _, y := range s.good(down) {
		if y.Count > loweredMax {
			above = append(above, fmt.Sprintf("t=%.1fs count %d", s.Since(y.At), y.Count))
		}
	}
	s.check(target.FactLoweredMax, len(above) == 0, "count %d %.1f s after max %d (%s); %d readings above it while the load held %s more%s",
		x.Count, down.Sub(at).Seconds(), loweredMax, within, len(above), e.Profile.LoweredHold, listFirst(above, 5))
	return nil
}
