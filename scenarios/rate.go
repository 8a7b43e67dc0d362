package scenarios

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
)

// The rate path's load: rateVUs closed-loop VUs of 1 ms calls, each
// pausing a think time of rateVUs ÷ (rateFactor × TargetRPS) between calls,
// so the zone gets about rateFactor × TargetRPS calls per second (a little
// less: each call's own latency adds to the pause) with at most rateVUs in
// flight: 8 of a 32 limit, and about rate × latency (under 1) on average,
// far under the in-flight triggers. Only the
// calls-per-second trigger can fire: from 1 worker it steps to 2
// (ceil(1.5) = 2), and 1 worker would then carry 1.5 × the target rate, so
// the zone must hold at 2.
//
// With the zone's canary (platform.Endpoints.Canary) the rate is
// rateFactorCanary × the target per worker of count 1 and the canary, 2.5 ×
// in all: the ceiling ceil(2 × 1.25) = 3 workers less the canary steps to 2,
// and 1 worker and the canary would then carry 1.25 × the target, so the
// zone must hold at 2 again.
const (
	rateVUs          = 8
	rateFactor       = 1.5
	rateFactorCanary = 1.25
	rateCallMS       = 1
)

// RatePath: "the rate path". Short calls at low in-flight trip only the
// calls-per-second trigger (Ramen 0.7.5's autoscaling notes, "How it decides":
// RAMEN_AUTOSCALE_TARGET_RPS, 50 calls/s per worker): the zone must scale
// up, and while the same steady rate runs, which count − 1 workers could
// not carry, it must never scale down, over the down cooldown and several
// low rounds.
func RatePath() Scenario {
	return Scenario{
		Name:  "rate-path",
		Title: "the rate path",
		Expected: func(p Profile) time.Duration {
			return p.UpCooldown + 4*p.SchedulerInterval + rateHold(p)
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if err := stepOnly(e); err != nil {
				return err
			}
			p := e.Profile
			if err := s.CreateZone(ctx, p.Max); err != nil {
				return err
			}
			canaries := 0
			target := rateFactor * p.TargetRPS
			if e.Endpoints.Canary {
				canaries = 1
				target = rateFactorCanary * p.TargetRPS * 2
			}
			think := time.Duration(float64(rateVUs) / target * float64(time.Second)).Round(time.Millisecond)
			s.Phase(fmt.Sprintf("%d VUs of %d ms calls, %s think time: about %.0f calls/s at low in-flight", rateVUs, rateCallMS, think, target))
			lp := load.ConstantVUs(rateVUs, p.UpTimeout+rateHold(p))
			lp.ThinkTime, lp.GracefulStop = think, p.GracefulStop
			start := time.Now()
			l := s.loadWork(ctx, lp, rateCallMS)
			upWait := p.UpCooldown + 6*p.SchedulerInterval + 4*p.BootDelay + 10*time.Second
			up, err := s.WaitFor(ctx, "a step up on the calls-per-second trigger", upWait, func(x observe.Sample) bool { return x.Count >= 2 })
			if !s.Check("the calls-per-second trigger alone scales up", err == nil, "%v",
				errOr(err, "count %d %.1f s after the load started (%s)", up.Count, up.At.Sub(start).Seconds(), up.Decision)) {
				l.Stop()
				l.Wait()
				return l.Err()
			}
			reached := up.Count
			s.Phase(fmt.Sprintf("the same rate for %s at count %d", rateHold(p), reached))
			holdFrom := time.Now()
			okBefore := l.calls().OK
			if err := pause(ctx, rateHold(p)); err != nil {
				return err
			}
			holdTo := time.Now()
			okDuring := l.calls().OK - okBefore
			l.Stop()
			l.Wait()
			rate := float64(okDuring) / holdTo.Sub(holdFrom).Seconds()
			carry := float64(reached-1+canaries) * p.TargetRPS
			s.Check("the load's rate stayed above what count − 1 workers carry", rate >= carry,
				"%.1f calls/s ok over %.0f s; %d workers carry %.0f calls/s at the target rate %.0f (from the profile)", rate, holdTo.Sub(holdFrom).Seconds(),
				reached-1+canaries, carry, p.TargetRPS)
			entries, err := s.audit(ctx)
			if err != nil {
				return err
			}
			var downs []consoleclient.AuditEntry
			for _, d := range autoscales(entries, "down") {
				if d.At.After(up.At.Add(-p.SampleInterval)) {
					downs = append(downs, d)
				}
			}
			low := s.minCount(holdFrom, holdTo)
			s.Check("no step down while count − 1 workers could not carry the rate", len(downs) == 0 && low >= reached,
				"lowest count sampled %d over %.0f s at %.0f calls/s (down cooldown %s, %d low rounds of %s, from the profile); DOWNs: %s",
				low, holdTo.Sub(holdFrom).Seconds(), math.Round(rate), p.DownCooldown, lowRounds, p.SchedulerInterval, describe(downs, s.Start))
			return l.Err()
		},
	}
}

// rateHold is how long the rate path holds the rate after the step up: the
// down cooldown, three low rounds, and four rounds more.
func rateHold(p Profile) time.Duration {
	return p.DownCooldown + (lowRounds+4)*p.SchedulerInterval
}
