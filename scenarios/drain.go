package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// Background load of the scale-in scenario: drainVUs VUs of drainCallMS
// calls keep calls in flight on every worker (about 2 each at 3 workers)
// while in-flight stays low (under 30 % of a 32 limit even on one worker),
// so the zone steps down under it.
const (
	drainVUs    = 6
	drainCallMS = 2000
)

// ScaleInDrain: "scale-in loses nothing". The zone is set to its max, then
// a small background load of long calls keeps calls in flight while the
// autoscaler steps it down to 1, so every DOWN removes a worker with calls
// on it. None may fail: 5xx, transport errors, truncated answers, JSON-RPC
// errors and 429 all fail the run (Ramen 0.7.5's autoscaling notes, "Staying up while nodes come
// and go": a worker leaving the zone drains). On the local platform the
// leaving worker gets SIGTERM as soon as it leaves the endpoints, as the
// kubelet sends it: only the worker's own drain saves its calls.
func ScaleInDrain() Scenario {
	return Scenario{
		Name:  "scale-in-drain",
		Title: "scale-in loses nothing",
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return time.Duration(p.Max-1)*(p.DownCooldown+lowRounds*p.SchedulerInterval) + drainCallMS*time.Millisecond + 10*time.Second
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			s.noFiveXX = true // judged below with every other failed class
			max := e.Profile.Max
			changed, err := s.zoneAt(ctx, max, max)
			if err != nil {
				return err
			}
			s.Phase(fmt.Sprintf("%d VUs of %d ms calls while the count comes down from %d", drainVUs, drainCallMS, max))
			lp := load.ConstantVUs(drainVUs, e.Profile.DownTimeout)
			lp.GracefulStop = drainCallMS*time.Millisecond + e.Profile.GracefulStop + 5*time.Second
			l := s.loadWork(ctx, lp, drainCallMS)
			wait := time.Duration(max-1)*(e.Profile.DownCooldown+(lowRounds+2)*e.Profile.SchedulerInterval) + 20*time.Second
			back, err := s.WaitFor(ctx, "count back to 1 under the background load", wait, func(x observe.Sample) bool { return x.Count == 1 })
			s.Check("count steps down to 1 under the background load", err == nil, "%v",
				errOr(err, "count 1 %.1f s after the change to %d", back.At.Sub(changed).Seconds(), max))
			// Let the last leaving worker's calls finish before the load stops.
			if err := s.Pause(ctx, drainCallMS*time.Millisecond+time.Second); err != nil {
				return err
			}
			l.Stop()
			l.Wait()
			entries, err := s.AuditTrail(ctx)
			if err != nil {
				return err
			}
			downs := autoscales(entries, "down")
			var secs = l.seconds()
			var atDown []string
			busy := 0
			for _, d := range downs {
				t := int(d.At.Sub(s.Start).Seconds())
				in := int64(-1)
				for _, sec := range secs {
					if sec.T <= t {
						in = sec.InFlight
					}
				}
				if in >= int64(atoi(d.Tags["from"])) {
					busy++
				}
				atDown = append(atDown, fmt.Sprintf("%s->%s with %d calls in flight", d.Tags["from"], d.Tags["to"], in))
			}
			s.Check("calls in flight at every DOWN (at least one per worker)", len(downs) > 0 && busy == len(downs),
				"%d DOWNs: %v", len(downs), orNone(atDown))
			c := l.Calls()
			s.Check("no call failed around the scale-ins", failedCalls(c) == 0 && c.OK > 0, "%s", callsDetail(c))
			return l.Err()
		},
	}
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + int(r-'0')
	}
	return n
}
