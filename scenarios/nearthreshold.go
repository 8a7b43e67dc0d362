package scenarios

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// NearThresholdReplicas is the count the near-threshold scenario holds its
// hpa zone at (its min_replicas), and NearThresholdRatio the ratio its load
// aims for: value ÷ (threshold × replicas) ≈ 1.05, inside the default
// tolerance band [0.9, 1.1] and above 1, where ceil(value ÷ threshold)
// asks for one replica more. Only the tolerance keeps the count.
const (
	NearThresholdReplicas = 3
	NearThresholdRatio    = 1.05
)

// nearThresholdVUs is the load's constant VUs under p:
// round(NearThresholdRatio × threshold × replicas) (quick: 1.05 × 24 × 3 =
// 76, ratio 76 ÷ 72 = 1.056). With no think time each VU has at most one
// call in flight, so the signal (the max over the query's window of the
// zone's p75 in-flight) reads at most the VUs: the ratio stays at most
// 1.056, and it stays within the band for any reading down to 0.9 × 72 =
// 64.8 (85 % of the VUs).
func nearThresholdVUs(p Profile) int {
	return int(math.Round(NearThresholdRatio * HPAFor(p).Threshold * NearThresholdReplicas))
}

// nearThresholdHold is how long the steady load runs: the query's window
// and the summary's age (the signal settles) plus the scale-down
// stabilization window and two polling intervals (quick: 12 + 6 + 30 + 6 s).
func nearThresholdHold(p Profile) time.Duration {
	h := HPAFor(p)
	return h.Window + h.InflightMaxAge + h.StabilizationDown + 2*h.PollingInterval
}

// NearThreshold: a steady load near the threshold of an hpa zone: the zone
// held at NearThresholdReplicas (its min_replicas), a constant load whose
// ratio sits within the tolerance band for longer than the stabilization
// window. The count must not move: every round with the ratio within the
// tolerance holds, and the hpa facts (hpafacts.go) hold.
func NearThreshold() Scenario {
	return Scenario{
		Name:  "near-threshold",
		Title: "hpa: a steady load with the ratio within the tolerance: the count does not move",
		TitleFor: func(p Profile) string {
			return fmt.Sprintf("hpa: %d VUs on %d replicas (ratio ≈ %.2f, within the tolerance 0.1): the count does not move",
				nearThresholdVUs(p), NearThresholdReplicas, float64(nearThresholdVUs(p))/(HPAFor(p).Threshold*NearThresholdReplicas))
		},
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return nearThresholdHold(p) + 2*HPAFor(p).PollingInterval + 10*time.Second
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			// The zone's min_replicas holds it at N whatever the signal reads
			// below the threshold; only the tolerance holds it above.
			spec := HPAFor(e.Profile).Spec(SpikeMax)
			n := NearThresholdReplicas
			spec.MinReplicas = &n
			if err := s.openHPAZone(ctx, "tolerance", spec, fmt.Sprintf("min_replicas %d", n)); err != nil {
				return err
			}
			if _, err := s.WaitFor(ctx, fmt.Sprintf("%d workers ready (min_replicas)", n), e.Profile.UpTimeout,
				func(x observe.Sample) bool { return x.Count == n && x.Ready >= n }); err != nil {
				return err
			}
			rounds, stopRounds := s.startRounds(ctx)
			defer stopRounds()

			vus, hold := nearThresholdVUs(e.Profile), nearThresholdHold(e.Profile)
			s.Phase(fmt.Sprintf("steady load: %d VUs for %s on %d replicas", vus, hold, n))
			lp := load.ConstantVUs(vus, hold)
			lp.GracefulStop, lp.ThinkTime = e.Profile.GracefulStop, 0
			start := s.Now()
			l := s.loadProfile(ctx, lp)
			l.Wait()
			end := s.Now()
			if err := l.Err(); err != nil {
				return err
			}
			stopRounds()

			moved := len(slices.DeleteFunc(goodIn(s.Samples(), start, end), func(x observe.Sample) bool { return x.Count == n }))
			s.Check(fmt.Sprintf("the count stays at %d under a steady load within the tolerance", n), moved == 0,
				"%d samples of the %s load (%d VUs, ratio at most %.3f) read a count other than %d",
				moved, hold, vus, float64(vus)/(spec.Threshold*float64(n)), n)
			// The load must have put the ratio in the band for the fact to
			// mean anything: after the signal settled, most rounds within it.
			h := HPAFor(e.Profile)
			if r, ok := HPARulesOf(s.policy); ok && rounds != nil {
				got, _, _ := rounds.snapshot()
				all, within := r.withinRounds(got, start.Add(h.Window+h.InflightMaxAge), end)
				s.Check("the signal sat within the tolerance band", all > 0 && within*2 >= all,
					"%d of %d rounds after the signal settled read a ratio within %s", within, all, r.band())
			}
			s.judgeHPA(ctx, rounds)
			return nil
		},
	}
}
