package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// TargetOutage: "an outage never scales in" (FactOutageHolds), on a target.
// A target that does not promise it reports it not applicable (the
// scenario is then skipped: nothing judged). Otherwise it needs the
// platform's fault actions on the target's workers (Faults, addressed as
// group = namespace, zone = Deployment); a platform without them skips it
// with the reason, never passes it. With them: under a low load (2 VUs)
// the newest worker is frozen for OutageHold, and the count never falls
// below the count at the freeze while it is frozen.
func TargetOutage() Scenario {
	return Scenario{
		Name:     "target-outage",
		Title:    "a frozen worker: the count never falls while it cannot answer",
		Facts:    []target.Fact{target.FactOutageHolds},
		Expected: func(p Profile, _ target.Contracts) time.Duration { return p.OutageHold },
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if !s.applies(target.FactOutageHolds) {
				return nil
			}
			f := e.Faults
			if f == nil {
				return skip(&platform.NotOfferedError{Platform: "of this run", Action: "freeze a worker of the target",
					Reason: "it offers no fault actions on a target's pods"})
			}
			ws, err := f.Workers(ctx, e.Namespace, e.Deployment)
			if err != nil {
				return skip(err)
			}
			if len(ws) < 1 {
				return fmt.Errorf("the platform lists no worker of %s/%s", e.Namespace, e.Deployment)
			}
			victim := ws[len(ws)-1]
			lp := load.ConstantVUs(2, e.Profile.OutageHold+e.Profile.GracefulStop)
			lp.GracefulStop, lp.ThinkTime = e.Profile.OutageHold+e.Profile.GracefulStop, 100*time.Millisecond
			l := s.startLoad(ctx, lp)
			at := s.sample(ctx)
			if at.Err != "" {
				return fmt.Errorf("reading the target: %s", at.Err)
			}
			s.Phase(fmt.Sprintf("worker %s frozen for %s", victim.ID, e.Profile.OutageHold))
			if err := f.Freeze(ctx, e.Namespace, e.Deployment, victim.ID); err != nil {
				return skip(err)
			}
			froze := s.now()
			herr := s.hold(ctx, e.Profile.OutageHold, nil)
			terr := f.Thaw(context.WithoutCancel(ctx), e.Namespace, e.Deployment, victim.ID)
			if herr != nil {
				return herr
			}
			low := at.Count
			for _, x := range s.good(froze) {
				low = min(low, x.Count)
			}
			s.check(target.FactOutageHolds, low >= at.Count, "worker %s frozen %s at count %d; lowest count while frozen %d",
				victim.ID, e.Profile.OutageHold, at.Count, low)
			l.Stop()
			l.Wait()
			if terr != nil {
				return fmt.Errorf("thaw %s: %w", victim.ID, terr)
			}
			return l.Err()
		},
	}
}
