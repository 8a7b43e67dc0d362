package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/target"
)

// TargetRoles: with no load and the count at min, a viewer's change of the
// bounds (max + 1) and of the count (count + 1) is refused with 403 and
// changes nothing (FactViewerRefused); an admin sets the count to min + 2
// by hand, and what happens is the target's contract (FactCountSet): a
// contract with a Bound says the autoscaler puts the count back to its
// desiredReplicas within it (an HPA owns the count: the count must be back
// at the desiredReplicas read before the change within Bound plus one
// sample interval), one without says the count is kept (the console: the
// count must stay min + 2 for CountHold, then the scenario puts it back);
// the trail since the scenario's start has at least one entry and every
// entry names its actor (FactTrailActor).
func TargetRoles() Scenario {
	return Scenario{
		Name:  "target-roles",
		Title: "a viewer is refused; a count set by hand is kept or put back as the contract says; the trail names the actor",
		Facts: []target.Fact{target.FactViewerRefused, target.FactCountSet, target.FactTrailActor},
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return p.CountHold + 2*p.SyncPeriod + p.MetricResolution
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			t := e.Target
			if err := s.settle(ctx); err != nil {
				return err
			}
			before := s.sample(ctx)
			if before.Err != "" {
				return fmt.Errorf("reading the target: %s", before.Err)
			}
			if s.applies(target.FactViewerRefused) {
				s.Phase("a viewer tries to change the max and the count")
				ob, err := t.SetBounds(ctx, target.Viewer, before.Min, before.Max+1)
				if err != nil {
					return fmt.Errorf("viewer SetBounds: %w", err)
				}
				oc, err := t.SetCount(ctx, target.Viewer, before.Count+1)
				if err != nil {
					return fmt.Errorf("viewer SetCount: %w", err)
				}
				after, err := s.next(ctx)
				if err != nil {
					return err
				}
				same := after.Count == before.Count && after.Min == before.Min && after.Max == before.Max
				s.check(target.FactViewerRefused, ob.Status == http.StatusForbidden && oc.Status == http.StatusForbidden && same,
					"viewer max %d → %d: %s; viewer count %d → %d: %s; before count %d, min %d, max %d; after count %d, min %d, max %d",
					before.Max, before.Max+1, outcome(ob), before.Count, before.Count+1, outcome(oc),
					before.Count, before.Min, before.Max, after.Count, after.Min, after.Max)
				if !same { // put back what the viewer changed, so the next facts start from the same place
					_, _ = t.SetBounds(context.WithoutCancel(ctx), target.Admin, before.Min, before.Max)
				}
			}
			if s.applies(target.FactCountSet) {
				if err := countSet(ctx, e, s, before); err != nil {
					return err
				}
			}
			if s.applies(target.FactTrailActor) {
				entries, err := t.Trail(ctx, s.Start)
				if err != nil {
					return fmt.Errorf("reading the trail: %w", err)
				}
				var anon []string
				for _, c := range entries {
					if c.Actor == "" {
						anon = append(anon, describeChange(c, s.Start))
					}
				}
				s.check(target.FactTrailActor, len(entries) > 0 && len(anon) == 0,
					"%d trail entries since the scenario's start, %d name no actor%s", len(entries), len(anon), listFirst(anon, 5))
			}
			return nil
		},
	}
}

// countSet judges FactCountSet: an admin sets the count to min + 2; a
// contract with a Bound means "put back within Bound", one without "kept".
func countSet(ctx context.Context, e *Env, s *Scope, before target.Sample) error {
	c := s.contract(target.FactCountSet)
	want := before.Min + 2
	if want > before.Max {
		return fmt.Errorf("a count set by hand: min + 2 = %d is above the target's max %d", want, before.Max)
	}
	s.Phase(fmt.Sprintf("an admin sets the count to %d by hand", want))
	o, err := e.Target.SetCount(ctx, target.Admin, want)
	if err != nil {
		return fmt.Errorf("admin SetCount: %w", err)
	}
	setAt := s.now()
	if !o.Accepted() {
		s.check(target.FactCountSet, false, "the admin's count %d was refused: %s", want, outcome(o))
		return nil
	}
	iv := e.Profile.SampleInterval
	if c.Bound > 0 {
		// back at the count the autoscaler had settled at before the
		// change (its desiredReplicas then, with no load); not the status's
		// desiredReplicas, which reads 0 before a new HPA's first sync
		x, err := s.waitFor(ctx, fmt.Sprintf("the count back at %d, the autoscaler's before the change", before.Count), c.Bound+iv,
			func(x target.Sample) bool { return x.Count == before.Count })
		if err != nil && !isTimeout(err) {
			return err
		}
		s.check(target.FactCountSet, err == nil, "count set to %d by hand; %s (put back within %s, sampled every %s)",
			want, errOr(err, "back at %d %.1f s later", x.Count, x.At.Sub(setAt).Seconds()), c.Bound, iv)
		return nil
	}
	x, err := s.waitFor(ctx, "the hold's end", e.Profile.CountHold, func(x target.Sample) bool { return x.Count != want })
	if err != nil && !isTimeout(err) {
		return err
	}
	kept := isTimeout(err)
	detail := fmt.Sprintf("kept at %d for %s", want, e.Profile.CountHold)
	if !kept {
		detail = fmt.Sprintf("count %d %.1f s after it was set to %d", x.Count, x.At.Sub(setAt).Seconds(), want)
	}
	s.check(target.FactCountSet, kept, "count set to %d by hand: %s (the contract keeps it)", want, detail)
	if o, err := e.Target.SetCount(context.WithoutCancel(ctx), target.Admin, before.Count); err != nil || !o.Accepted() {
		return fmt.Errorf("putting the count back to %d: %s %v", before.Count, outcome(o), err)
	}
	return nil
}

// next waits one sample interval and reads the target.
func (s *Scope) next(ctx context.Context) (target.Sample, error) {
	if err := s.env.clock().Sleep(ctx, s.env.Profile.SampleInterval); err != nil {
		return target.Sample{}, err
	}
	x := s.sample(ctx)
	if x.Err != "" {
		return x, fmt.Errorf("reading the target: %s", x.Err)
	}
	return x, nil
}

func outcome(o target.Outcome) string {
	if o.Message != "" {
		return fmt.Sprintf("HTTP %d (%s)", o.Status, o.Message)
	}
	return fmt.Sprintf("HTTP %d", o.Status)
}

func describeChange(c target.Change, from time.Time) string {
	return fmt.Sprintf("t=%.1fs %d->%d %s (%s)", c.At.Sub(from).Seconds(), c.From, c.To, c.Reason, c.Source)
}
