package scenarios

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
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
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return p.DownCooldown + (lowRounds+2)*p.SchedulerInterval + p.ConsoleDrain
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if err := stepOnly(e); err != nil {
				return err
			}
			if err := needsFaults(e, platform.RestartAction(platform.PartConsole)); err != nil {
				return err
			}
			p := e.Profile
			n := 2
			changed, err := s.zoneAt(ctx, p.Max, n)
			if err != nil {
				return err
			}
			s.Phase(fmt.Sprintf("console restarted %.1f s into the %s down cooldown", s.Now().Sub(changed).Seconds(), p.DownCooldown))
			from := s.Now()
			rerr := e.faults().Restart(ctx, platform.PartConsole)
			e.consoleRestarted()
			to := s.Now()
			s.plannedOutage(from, to.Add(p.ReadyzTimeout+p.ReadyzInterval))
			if rerr != nil {
				return skip(rerr)
			}
			s.Check("the console restarted within the down cooldown", to.Before(changed.Add(p.DownCooldown)),
				"restart took %.2f s, done %.1f s after the change (down cooldown %s, from the profile)",
				to.Sub(from).Seconds(), to.Sub(changed).Seconds(), p.DownCooldown)
			wait := p.DownCooldown + (lowRounds+3)*p.SchedulerInterval + 10*time.Second
			back, werr := s.WaitFor(ctx, "count back to 1", wait, func(x observe.Sample) bool { return x.Count == 1 })
			entries, err := s.auditShowing(ctx, 1)
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

// RestartKeepsChanges: "every accepted change survives a console restart,
// field by field". On an idle zone the group admin changes one field at a
// time and the console is restarted after each (the platform's Restart: the
// console's own store, not the harness's, carries the state): the max alone
// (raised by one), the count alone (to 2), and, on an hpa zone, the policy
// alone (its threshold doubled). After each restart the field reads back
// as set and the other fields as before (Ramen 0.7.5's autoscaling notes:
// the console owns the worker count of each zone and its bounds; an
// accepted change is audited and kept). A count the scheduler changed after
// the restart, as the audit shows, is no loss.
func RestartKeepsChanges() Scenario {
	return Scenario{
		Name:  "restart-keeps-changes",
		Title: "every accepted change survives a console restart, field by field",
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return 3*(p.ConsoleDrain+2*time.Second) + p.BootDelay
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if err := needsFaults(e, platform.RestartAction(platform.PartConsole)); err != nil {
				return err
			}
			p := e.Profile
			g, admin := e.Endpoints.Group, e.Endpoints.Keys.SuperAdmin.Key
			if err := s.CreateZone(ctx, p.Max); err != nil {
				return err
			}
			restart := func(what string) error {
				s.Phase("console restarted after " + what)
				from := s.Now()
				err := e.faults().Restart(ctx, platform.PartConsole)
				e.consoleRestarted()
				s.plannedOutage(from, s.Now().Add(p.ReadyzTimeout+p.ReadyzInterval))
				return skip(err)
			}
			read := func() (consoleclient.Zone, consoleclient.PolicyView, error) {
				z, st, err := e.Console.GetZone(ctx, admin, g, s.Zone)
				if err != nil || st != http.StatusOK || z.MaxCount == nil {
					return z, consoleclient.PolicyView{}, fmt.Errorf("read the zone after the restart: %s", httpDetail(st, err))
				}
				pv, st, err := e.Console.GetPolicy(ctx, admin, g, s.Zone)
				if err != nil || (st != http.StatusOK && st != http.StatusNotFound) {
					return z, pv, fmt.Errorf("read the zone's policy after the restart: %s", httpDetail(st, err))
				}
				return z, pv, nil
			}
			before, pol, err := read()
			if err != nil {
				return err
			}

			max := *before.MaxCount + 1
			if st, err := e.Console.PutZone(ctx, s.admin(), g, s.Zone, consoleclient.Update{MaxCount: &max}); err != nil || st != http.StatusOK {
				return fmt.Errorf("admin PUT max_count %d: %s", max, httpDetail(st, err))
			}
			if err := restart(fmt.Sprintf("max %d -> %d", *before.MaxCount, max)); err != nil {
				return err
			}
			z, _, err := read()
			if err != nil {
				return err
			}
			s.Check("a max changed alone survives a console restart", *z.MaxCount == max && z.Count == before.Count,
				"set max %d (count %d); after the restart max %d, count %d", max, before.Count, *z.MaxCount, z.Count)

			count := 2
			changed := s.Now()
			if st, err := e.Console.PutZone(ctx, s.admin(), g, s.Zone, consoleclient.Update{Count: &count}); err != nil || st != http.StatusOK {
				return fmt.Errorf("admin PUT count %d: %s", count, httpDetail(st, err))
			}
			if err := restart(fmt.Sprintf("count %d -> %d", z.Count, count)); err != nil {
				return err
			}
			z, _, err = read()
			if err != nil {
				return err
			}
			entries, err := s.AuditTrail(ctx)
			if err != nil {
				return err
			}
			scheduled := autoscales(entries, "down")
			scheduled = slices.DeleteFunc(scheduled, func(en consoleclient.AuditEntry) bool { return en.At.Before(changed) })
			s.Check("a count changed alone survives a console restart", (z.Count == count || len(scheduled) > 0) && *z.MaxCount == max,
				"set count %d (max %d); after the restart count %d, max %d; the scheduler's steps down since: %s",
				count, max, z.Count, *z.MaxCount, describe(scheduled, changed))

			const fact = "a policy changed alone survives a console restart"
			if pol.Policy != PolicyHPA || pol.HPA == nil {
				s.NotApplicable(fact, fmt.Sprintf("the zone's policy is %q: only an hpa zone has a setting of its own to change (its threshold)", cmp.Or(pol.Policy, "not shown")))
				return nil
			}
			spec := *pol.HPA
			spec.Threshold *= 2
			if _, st, err := e.Console.PutPolicy(ctx, s.admin(), g, s.Zone, consoleclient.Policy{Policy: PolicyHPA, HPA: &spec}); err != nil || st != http.StatusOK {
				return fmt.Errorf("admin PUT policy (threshold %g): %s", spec.Threshold, httpDetail(st, err))
			}
			if err := restart(fmt.Sprintf("threshold %g -> %g", pol.HPA.Threshold, spec.Threshold)); err != nil {
				return err
			}
			_, after, err := read()
			if err != nil {
				return err
			}
			got := 0.0
			if after.HPA != nil {
				got = after.HPA.Threshold
			}
			s.Check(fact, after.Policy == PolicyHPA && got == spec.Threshold,
				"set policy hpa with threshold %g; after the restart policy %q, threshold %g", spec.Threshold, after.Policy, got)
			return nil
		},
	}
}
