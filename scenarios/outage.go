package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// lowRounds is Ramen 0.7.5's "low for 3 rebalances in a row" before a DOWN.
const lowRounds = 3

// Outage: "an outage never scales in", on the console's zone or on a
// target (Env.Target). The scale target is set to count 2 by hand (min + 1
// at least; where the target's contract puts a count set by hand back, the
// count at rest instead), under a low load (2 VUs); one worker is frozen (the platform's Freeze: SIGSTOP on
// local) for outageFreeze: on the console past the down cooldown of the
// count's change and several scheduler rounds more, so a DOWN would be
// allowed if the zone were only idle. Ramen 0.7.5's autoscaling notes
// ("How it decides"): a worker that does not answer is down, never low,
// and a zone with a down worker is not scaled in. The count must not drop
// below the count it started from while the worker is frozen (no step down in the samples, nor in
// the trail where it names its steps), and must step down to min again once
// it answers: on the console within the down cooldown and the low rounds,
// on a target within its back-to-min contract's bound (to 1 where min is
// 0: the low load goes on).
//
// A target that does not promise target.FactOutageHolds reports it not
// applicable (the scenario is then skipped: nothing judged); a platform
// without fault actions skips it with the reason, never passes it. Fault
// actions address a target's workers as group = namespace, zone =
// Deployment.
func Outage() Scenario {
	return Scenario{
		Name:  "outage",
		Title: "an outage never scales in",
		Facts: []target.Fact{target.FactOutageHolds},
		Expected: func(p Profile, c target.Contracts) time.Duration {
			if c != nil {
				return outageFreeze(p) + c[target.FactBackToMin].Bound
			}
			return outageFreeze(p) + p.DownCooldown + (lowRounds+4)*p.SchedulerInterval
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if !s.Applies(target.FactOutageHolds) {
				return nil
			}
			if err := stepOnly(e); err != nil {
				return err
			}
			if err := needsFaults(e, "freeze a worker"); err != nil {
				return err
			}
			f := e.faults()
			if err := s.CreateZone(ctx, e.Profile.Max); err != nil {
				return err
			}
			back, backWait := outageBack(e.Profile, s)
			// The count the outage starts from: 2 (min + 1 at least) set by
			// hand where the autoscaler keeps a count set by hand (the
			// console); else the count at rest, since the autoscaler would
			// put a count set by hand back during the freeze.
			rest, changed := lastGood(s.Samples()), s.Now()
			from := rest.Count
			if c := s.Contract(target.FactCountSet); c.Applies && c.Bound == 0 {
				from = max(2, rest.Min+1)
				var err error
				if changed, err = s.forceCount(ctx, from); err != nil {
					return err
				}
			}
			group, zone := s.workersOf()
			ws, err := f.Workers(ctx, group, zone)
			if err != nil {
				return skip(err)
			}
			ws = countWorkers(ws) // the canary is not one of the count's
			if len(ws) < max(from, 1) {
				return fmt.Errorf("the platform lists %d workers of %s/%s at count %d", len(ws), group, zone, from)
			}
			victim := ws[len(ws)-1] // the newest: the one a DOWN would remove first
			freeze := outageFreeze(e.Profile)
			lp := load.ConstantVUs(2, max(e.Profile.DownTimeout, freeze+backWait))
			lp.GracefulStop, lp.ThinkTime = freeze+e.Profile.GracefulStop, 100*time.Millisecond
			l := s.LoadProfile(ctx, lp)

			s.Phase(fmt.Sprintf("worker %s frozen for %s", victim.ID, freeze))
			if err := f.Freeze(ctx, group, zone, victim.ID); err != nil {
				return skip(err)
			}
			frozeAt := s.Now()
			thawed := false
			thaw := func() error {
				if thawed {
					return nil
				}
				thawed = true
				return f.Thaw(context.WithoutCancel(ctx), group, zone, victim.ID)
			}
			defer func() { _ = thaw() }()
			// On the console a DOWN would be allowed from the later of the down
			// cooldown's end and three low rounds; the freeze lasts well past both.
			downAllowed := changed.Add(e.Profile.DownCooldown)
			if err := s.Pause(ctx, freeze); err != nil {
				return err
			}
			thawAt := s.Now()
			inOutage, err := s.downsIn(ctx, frozeAt, thawAt)
			if err != nil {
				return err
			}
			low := s.minCount(frozeAt, thawAt)
			past := ""
			if e.Target == nil {
				past = fmt.Sprintf(", %.1f s past the end of the down cooldown (%s, from the profile)", thawAt.Sub(downAllowed).Seconds(), e.Profile.DownCooldown)
			}
			s.check(target.FactOutageHolds, len(inOutage) == 0 && low >= from,
				"worker %s frozen %.1f s%s; lowest count sampled %d; DOWNs in the outage: %v",
				victim.ID, thawAt.Sub(frozeAt).Seconds(), past, low, orNone(inOutage))
			if err := thaw(); err != nil {
				return err
			}

			if back.NotApplicable != "" {
				s.NotApplicable(factStepsDownAgain, back.NotApplicable)
			} else {
				s.Phase("thawed: the zone steps down once every worker answers")
				// back to min, or to 1 where min is 0: the low load goes on
				at, err := s.WaitFor(ctx, "count back to min after the thaw", backWait,
					func(x target.Sample) bool { return x.Count <= max(x.Min, 1) })
				s.Check(factStepsDownAgain, err == nil, "%v", errOr(err, "count %d %.1f s after the thaw", at.Count, at.At.Sub(thawAt).Seconds()))
			}
			l.Stop()
			l.Wait()
			return l.Err()
		},
	}
}

// factStepsDownAgain is the outage's second fact.
const factStepsDownAgain = "steps down again once every worker answers"

// outageFreeze is how long the outage scenario keeps a worker frozen: a
// target profile's OutageHold, else past the down cooldown and three low
// rounds, and three scheduler rounds more.
func outageFreeze(p Profile) time.Duration {
	if p.OutageHold > 0 {
		return p.OutageHold
	}
	return p.DownCooldown + (lowRounds+3)*p.SchedulerInterval
}

// outageBack is how long after the thaw the count may take to step down
// again: on the console the down cooldown, the low rounds and three
// scheduler rounds more, and 10 s; on a target its back-to-min contract's
// bound and backMargin (a target that does not promise it: the contract
// with its reason, and the freeze's length for the load).
func outageBack(p Profile, s *Scope) (target.Contract, time.Duration) {
	if s.env.Target == nil {
		return target.Contract{Applies: true}, p.DownCooldown + (lowRounds+3)*p.SchedulerInterval + 10*time.Second
	}
	c := s.Contract(target.FactBackToMin)
	if !c.Applies {
		return c, 0
	}
	return c, c.Bound + backMargin(p)
}

// downsIn describes the steps down the zone's trail records from from to
// to: the console's audit entries of an autoscale DOWN; a target's trail
// changes to a lower count (an entry that does not say the count before
// is left to the samples).
func (s *Scope) downsIn(ctx context.Context, from, to time.Time) ([]string, error) {
	var out []string
	if t := s.env.Target; t != nil {
		trail, err := t.Trail(ctx, from)
		if err != nil {
			return nil, fmt.Errorf("read the trail: %w", err)
		}
		for _, c := range trail {
			if !c.At.After(to) && c.From >= 0 && c.To < c.From {
				out = append(out, fmt.Sprintf("%d->%d at +%.1f s (%s)", c.From, c.To, c.At.Sub(from).Seconds(), c.Reason))
			}
		}
		return out, nil
	}
	entries, err := s.AuditTrail(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range autoscales(entries, "down") {
		if !d.At.Before(from) && !d.At.After(to) {
			out = append(out, describe([]consoleclient.AuditEntry{d}, from))
		}
	}
	return out, nil
}

// lastGood is the newest sample that did not fail (zero when none).
func lastGood(samples []target.Sample) target.Sample {
	for i := len(samples) - 1; i >= 0; i-- {
		if samples[i].Err == "" {
			return samples[i]
		}
	}
	return target.Sample{}
}

func orNone(xs []string) any {
	if len(xs) == 0 {
		return "none"
	}
	return xs
}
