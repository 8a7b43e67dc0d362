package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// RestartCooldown: "a console restarted in the middle of a cooldown still
// honours it". An idle zone is set to count 2 (a forced change, which
// starts the down cooldown); the console is restarted at once (the
// platform's Restart: SIGTERM, drain, start on the same address and state).
// The restarted console must not step the zone down before the down
// cooldown of that change is over (Ramen 0.7.5's autoscaling notes, "How it decides": no DOWN
// within RAMEN_AUTOSCALE_COOLDOWN_SECS of the last change of the count),
// and must step it down after it.
func RestartCooldown() Scenario {
	return Scenario{
		Name:  "restart-cooldown",
		Title: "a console restarted in the middle of a cooldown still honours it",
		Expected: func(p Profile) time.Duration {
			return p.DownCooldown + (lowRounds+2)*p.SchedulerInterval + p.ConsoleDrain
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if err := stepOnly(e); err != nil {
				return err
			}
			if err := needsFaults(e, "restart the console"); err != nil {
				return err
			}
			p := e.Profile
			if err := s.CreateZone(ctx, p.Max); err != nil {
				return err
			}
			n := 2
			changed, err := s.forceCount(ctx, n)
			if err != nil {
				return err
			}
			s.Phase(fmt.Sprintf("console restarted %.1f s into the %s down cooldown", time.Since(changed).Seconds(), p.DownCooldown))
			from := time.Now()
			rerr := e.faults().Restart(ctx, platform.PartConsole)
			to := time.Now()
			s.plannedOutage(from, to.Add(p.ReadyzTimeout+p.ReadyzInterval))
			if rerr != nil {
				return skip(rerr)
			}
			s.Check("the console restarted within the down cooldown", to.Before(changed.Add(p.DownCooldown)),
				"restart took %.2f s, done %.1f s after the change (down cooldown %s, from the profile)",
				to.Sub(from).Seconds(), to.Sub(changed).Seconds(), p.DownCooldown)
			wait := p.DownCooldown + (lowRounds+3)*p.SchedulerInterval + 10*time.Second
			back, werr := s.WaitFor(ctx, "count back to 1", wait, func(x observe.Sample) bool { return x.Count == 1 })
			entries, err := s.audit(ctx)
			if err != nil {
				return err
			}
			downs := autoscales(entries, "down")
			early := 0
			for _, d := range downs {
				if d.At.Sub(changed) < p.DownCooldown {
					early++
				}
			}
			s.Check("no step down within the down cooldown of the last change, across a console restart", early == 0,
				"change to %d at +%.1f s; DOWNs: %s (down cooldown %s, from the profile)", n, changed.Sub(s.Start).Seconds(),
				describe(downs, changed), p.DownCooldown)
			s.Check("steps down after the cooldown", werr == nil && len(downs) > 0, "%v",
				errOr(werr, "count 1 %.1f s after the change", back.At.Sub(changed).Seconds()))
			return nil
		},
	}
}
