package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// lowRounds is Ramen 0.7.5's "low for 3 rebalances in a row" before a DOWN.
const lowRounds = 3

// Outage: "an outage never scales in". A zone at count 2 under a low load
// (2 VUs); one worker is frozen (the platform's Freeze: SIGSTOP on local)
// past the down cooldown of the last change and several scheduler rounds
// more, so a DOWN would be allowed if the zone were only idle. Ramen 0.7.5's autoscaling notes
// ("How it decides"): a worker that does not answer is down, never low, and
// a zone with a down worker is not scaled in. The count must not drop while
// the worker is frozen, and must step down again once it answers.
func Outage() Scenario {
	return Scenario{
		Name:  "outage",
		Title: "an outage never scales in",
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return outageFreeze(p) + p.DownCooldown + (lowRounds+4)*p.SchedulerInterval
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
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
			changed, err := s.forceCount(ctx, 2)
			if err != nil {
				return err
			}
			ws, err := f.Workers(ctx, e.Endpoints.Group, s.Zone)
			if err != nil {
				return skip(err)
			}
			ws = countWorkers(ws) // the canary is not one of the count's
			if len(ws) < 2 {
				return fmt.Errorf("the platform lists %d workers of a zone at count 2", len(ws))
			}
			victim := ws[len(ws)-1] // the newest: the one a DOWN would remove first
			lp := load.ConstantVUs(2, e.Profile.DownTimeout)
			lp.GracefulStop, lp.ThinkTime = outageFreeze(e.Profile)+e.Profile.GracefulStop, 100*time.Millisecond
			l := s.loadWork(ctx, lp, e.Profile.WorkMS)

			s.Phase(fmt.Sprintf("worker %s frozen for %s", victim.ID, outageFreeze(e.Profile)))
			if err := f.Freeze(ctx, e.Endpoints.Group, s.Zone, victim.ID); err != nil {
				return skip(err)
			}
			frozeAt := s.now()
			thawed := false
			thaw := func() error {
				if thawed {
					return nil
				}
				thawed = true
				return f.Thaw(context.WithoutCancel(ctx), e.Endpoints.Group, s.Zone, victim.ID)
			}
			defer func() { _ = thaw() }()
			// A DOWN would be allowed from the later of the down cooldown's end
			// and three low rounds; the freeze lasts well past both.
			downAllowed := changed.Add(e.Profile.DownCooldown)
			if err := s.pause(ctx, outageFreeze(e.Profile)); err != nil {
				return err
			}
			thawAt := s.now()
			entries, err := s.AuditTrail(ctx)
			if err != nil {
				return err
			}
			var inOutage []string
			for _, d := range autoscales(entries, "down") {
				if !d.At.Before(frozeAt) && !d.At.After(thawAt) {
					inOutage = append(inOutage, describe([]consoleclient.AuditEntry{d}, frozeAt))
				}
			}
			low := s.minCount(frozeAt, thawAt)
			s.Check("no step down while a worker is unreachable", len(inOutage) == 0 && low >= 2,
				"worker %s frozen %.1f s, %.1f s past the end of the down cooldown (%s, from the profile); lowest count sampled %d; DOWNs in the outage: %v",
				victim.ID, thawAt.Sub(frozeAt).Seconds(), thawAt.Sub(downAllowed).Seconds(), e.Profile.DownCooldown, low, orNone(inOutage))
			if err := thaw(); err != nil {
				return err
			}

			s.Phase("thawed: the zone steps down once every worker answers")
			wait := e.Profile.DownCooldown + (lowRounds+3)*e.Profile.SchedulerInterval + 10*time.Second
			back, err := s.WaitFor(ctx, "count back to 1 after the thaw", wait, func(x observe.Sample) bool { return x.Count == 1 })
			s.Check("steps down again once every worker answers", err == nil, "%v", errOr(err, "count 1 %.1f s after the thaw", back.At.Sub(thawAt).Seconds()))
			l.Stop()
			l.Wait()
			return l.Err()
		},
	}
}

// outageFreeze is how long the outage scenario keeps a worker frozen: past
// the down cooldown and three low rounds, and three scheduler rounds more.
func outageFreeze(p Profile) time.Duration {
	return p.DownCooldown + (lowRounds+3)*p.SchedulerInterval
}

func orNone(xs []string) any {
	if len(xs) == 0 {
		return "none"
	}
	return xs
}
