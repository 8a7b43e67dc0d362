package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// ScaleUpLimitMax is the scale-up-limit scenario's max_count: above the
// first step's rate limit from 1 replica (upstream's default scale-up
// policies, +4 pods or +100 % per period, Max: max(1 + 4, 2 × 1) = 5), so
// the limit, not the max, bounds that step.
const ScaleUpLimitMax = 8

// scaleUpLimitThreshold is the zone's threshold under p: an eighth of the
// in-flight limit (4 calls per replica at the published limit of 32, the
// threshold of Grafana's post on autoscaling Loki queries with KEDA). One
// replica carrying its whole limit reads MaxInflight in flight, and asks
// for ceil(MaxInflight ÷ threshold) = 8 replicas: over the limit of 5.
func scaleUpLimitThreshold(p Profile) float64 { return float64(p.MaxInflight) / 8 }

// scaleUpLimitHold is how long the load runs: the query's window and the
// summary's age (the signal settles) plus four polling intervals (the
// first step and the ones after it; quick: 12 + 6 + 12 s).
func scaleUpLimitHold(p Profile) time.Duration {
	h := HPAFor(p)
	return h.Window + h.InflightMaxAge + 4*h.PollingInterval
}

// ScaleUpLimit: the hpa scale-up rate policies decide. An hpa zone with a
// low threshold (an eighth of the in-flight limit per replica) and a max of
// ScaleUpLimitMax takes the run's VUs on one replica: its recommendation
// (8 or more) exceeds what the behaviour's scale-up policies allow in one
// period (max(count + 4, 2 × count); Kubernetes docs, "Scaling policies"),
// so each step up must stop at that limit. The hpa facts (hpafacts.go)
// judge every step against the policies; this scenario also checks that
// the limit was exercised at all (a round whose recommendation exceeded it),
// so a pass means the policies were tested, not merely never reached.
func ScaleUpLimit() Scenario {
	return Scenario{
		Name:  "scale-up-limit",
		Title: "hpa: a recommendation over the scale-up rate limit: each step up stops at max(count + 4, 2 × count)",
		TitleFor: func(p Profile) string {
			return fmt.Sprintf("hpa: %d VUs on 1 replica at threshold %g (recommendation %d, over the limit %d): each step up stops at the rate policies' limit",
				p.VUs, scaleUpLimitThreshold(p), ScaleUpLimitMax, 5)
		},
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			h := HPAFor(p)
			return scaleUpLimitHold(p) + h.StabilizationDown + h.Window + 2*h.PollingInterval + 10*time.Second
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			spec := HPAFor(e.Profile).Spec(ScaleUpLimitMax)
			spec.Threshold = scaleUpLimitThreshold(e.Profile)
			if err := s.openHPAZone(ctx, "scale-up rate policies", spec, fmt.Sprintf("threshold %g", spec.Threshold)); err != nil {
				return err
			}
			rounds, stopRounds := s.startRounds(ctx)
			defer stopRounds()

			hold := scaleUpLimitHold(e.Profile)
			s.Phase(fmt.Sprintf("load: %d VUs for %s on 1 replica, threshold %g", e.Profile.VUs, hold, spec.Threshold))
			lp := load.ConstantVUs(e.Profile.VUs, hold)
			lp.GracefulStop, lp.ThinkTime = e.Profile.GracefulStop, 0
			l := s.loadProfile(ctx, lp)
			l.Wait()
			if err := l.Err(); err != nil {
				return err
			}
			WaitBackTo1(ctx, s)
			stopRounds() // a last read: the step back to 1 has its round
			CheckBounds(s, ScaleUpLimitMax)
			s.judgeHPA(ctx, rounds)
			if r, ok := HPARulesOf(s.policy); ok && rounds != nil {
				got, _, _ := rounds.snapshot()
				entries, err := s.AuditTrail(ctx)
				if s.Check("the zone's audit trail is readable (rate limit exercised)", err == nil, "%d entries%s", len(entries), errSuffix(err)) {
					f := FactHPALimitExercised(r, r.recs(got), Changes(entries), s.Start)
					record(s, *f)
				}
			}
			return nil
		},
	}
}
