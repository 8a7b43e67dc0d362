package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// doubleFreeze is how long the no-double-execution scenario keeps a worker
// frozen in the middle of its calls: longer than an edge's usual per-try
// timeout of a second, shorter than any call timeout.
const doubleFreeze = 3 * time.Second

// NoDoubleExecution: "no call runs twice". A zone at count 2 (its max)
// under a steady load; one worker is frozen in the middle of its calls for
// a few seconds and thawed, so it finishes them late. The workers' own call
// totals (their /metrics, read before and after) must not exceed the calls
// the harness sent: an edge that sends a call again to another worker once
// it reached one (a tool call is not idempotent) shows up here. The load is
// heavy enough that the zone is never low, so no worker leaves it and every
// total can be read at the end.
func NoDoubleExecution() Scenario {
	return Scenario{
		Name:  "no-double-execution",
		Title: "no call runs twice",
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return doubleFreeze + 10*time.Second
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if err := needsFaults(e, "freeze a worker"); err != nil {
				return err
			}
			f := e.faults()
			if _, err := s.zoneAt(ctx, 2, 2); err != nil {
				return err
			}
			ws, err := f.Workers(ctx, e.Endpoints.Group, s.Zone)
			if err != nil {
				return skip(err)
			}
			ws = countWorkers(ws) // the canary is not one of the count's
			if len(ws) != 2 {
				return fmt.Errorf("the platform lists %d workers of a zone at count 2", len(ws))
			}
			for _, w := range ws {
				if !readable(w) {
					return skip(&platform.NotOfferedError{Platform: "under test", Action: "read a worker's /metrics",
						Reason: "it gives no worker addresses"})
				}
			}
			before, err := readWorkers(ctx, e, s.Zone, ws)
			if err != nil {
				return skip(err) // a platform that cannot read the workers (platform.MetricsReader)
			}
			// 24 VUs over 2 workers: 12 in flight each (37 % of 32), not low;
			// at the max, so no step either way.
			vus := max(e.Profile.MaxInflight*3/4, 2)
			s.Phase(fmt.Sprintf("%d VUs; worker %s frozen for %s in the middle of its calls", vus, ws[0].ID, doubleFreeze))
			lp := load.ConstantVUs(vus, time.Minute)
			lp.GracefulStop = doubleFreeze + e.Profile.GracefulStop + 5*time.Second
			l := s.loadProfile(ctx, lp)
			if err := s.Pause(ctx, time.Second); err != nil {
				return err
			}
			if err := f.Freeze(ctx, e.Endpoints.Group, s.Zone, ws[0].ID); err != nil {
				return skip(err)
			}
			perr := s.Pause(ctx, doubleFreeze)
			if err := f.Thaw(context.WithoutCancel(ctx), e.Endpoints.Group, s.Zone, ws[0].ID); err != nil {
				return err
			}
			if perr != nil {
				return perr
			}
			if err := s.Pause(ctx, time.Second); err != nil {
				return err
			}
			l.Stop()
			l.Wait()
			// The thawed worker finishes late: wait (bounded) until neither has a call in flight.
			var after []workerMetrics
			deadline := s.Now().Add(10 * time.Second)
			for {
				after, err = readWorkers(ctx, e, s.Zone, ws)
				if err != nil {
					return err
				}
				idle := true
				for _, m := range after {
					idle = idle && m.InFlight == 0
				}
				if idle || s.Now().After(deadline) {
					break
				}
				if err := s.Pause(ctx, 200*time.Millisecond); err != nil {
					return err
				}
			}
			c := l.Calls()
			sent := c.Total()
			var executed float64
			var per []string
			for i := range ws {
				d := after[i].Calls - before[i].Calls
				executed += d
				per = append(per, fmt.Sprintf("%s %.0f", ws[i].ID, d))
			}
			s.Check("no call runs twice: executions never exceed calls sent", executed <= float64(sent) && c.OK > 0,
				"workers executed %.0f calls (%s), the harness sent %d (%s)", executed, strings.Join(per, ", "), sent, callsDetail(c))
			return l.Err()
		},
	}
}

func readWorkers(ctx context.Context, e *Env, zone string, ws []platform.Worker) ([]workerMetrics, error) {
	out := make([]workerMetrics, len(ws))
	for i, w := range ws {
		m, err := e.readWorker(ctx, zone, w)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}
