package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// The rate path's load: an arrival rate (k6's constant-arrival-rate) of
// 1 ms calls at rateFactor × TargetRPS calls per second, from at most
// rateVUs VUs: the rate does not fall when the calls' latency rises (a
// closed model's VUs with a think time would offer less as each call takes
// longer, and a correct step down would follow the dip), and at most 8 of a
// 32 limit are in flight, about rate × latency (under 1) on average, far
// under the in-flight triggers. Only the calls-per-second trigger can
// fire: from 1 worker it steps to 2 (ceil(1.5) = 2), and 1 worker would
// then carry 1.5 × the target rate, so the zone must hold at 2.
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
		Expected: func(p Profile, _ target.Contracts) time.Duration {
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
			s.Phase(fmt.Sprintf("%.0f calls/s of %d ms calls (constant arrival rate, at most %d VUs): low in-flight", target, rateCallMS, rateVUs))
			ap := load.ConstantArrivalRate(target, time.Second, p.UpTimeout+rateHold(p), rateVUs, rateVUs)
			ap.GracefulStop = p.GracefulStop
			start := s.Now()
			l := s.loadArrival(ctx, ap, rateCallMS)
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
			holdFrom := s.Now()
			if err := s.Pause(ctx, rateHold(p)); err != nil {
				return err
			}
			holdTo := s.Now()
			// the load runs one more second, so that the second holdTo
			// falls in is whole: rateBefore spreads a second's calls over
			// all of it, and a load stopped at holdTo would read low there
			if err := s.Pause(ctx, time.Second); err != nil {
				return err
			}
			l.Stop()
			l.Wait()
			carry := func(count int) float64 { return float64(count-1+canaries) * p.TargetRPS }
			w := l.window()
			short, low := shortIntervals(w, holdFrom, holdTo, p.SchedulerInterval, carry(reached))
			s.Check("the load's rate stayed above what count − 1 workers carry", len(short) == 0,
				"%s; %d workers carry %.0f calls/s at the target rate %.0f (from the profile)",
				describeIntervals(short, low, s.Start, p.SchedulerInterval), reached-1+canaries, carry(reached), p.TargetRPS)
			entries, err := s.AuditTrail(ctx)
			if err != nil {
				return err
			}
			var downs []consoleclient.AuditEntry
			for _, d := range autoscales(entries, "down") {
				if d.At.After(up.At.Add(-p.SampleInterval)) {
					downs = append(downs, d)
				}
			}
			bad, excused := judgeDowns(w, downs, p.SchedulerInterval, carry)
			lowest := s.minCount(holdFrom, holdTo)
			s.Check("no step down while count − 1 workers could not carry the rate", len(bad) == 0 && (lowest >= reached || len(downs) > 0),
				"lowest count sampled %d over %.0f s (down cooldown %s, %d low rounds of %s, from the profile); each DOWN judged against the load's rate in the scheduler intervals before it: unjustified %s; after the load fell short %s",
				lowest, holdTo.Sub(holdFrom).Seconds(), p.DownCooldown, lowRounds, p.SchedulerInterval, describe(bad, s.Start), describe(excused, s.Start))
			return l.Err()
		},
	}
}

// rateHold is how long the rate path holds the rate after the step up: the
// down cooldown, three low rounds, and four rounds more.
func rateHold(p Profile) time.Duration {
	return p.DownCooldown + (lowRounds+4)*p.SchedulerInterval
}

// rateInterval is the load's ok calls per second over one window.
type rateInterval struct {
	To   time.Time // the window is [To − interval, To]
	Rate float64
}

// shortIntervals splits [from, to] into scheduler intervals (the last one
// may be shorter and is judged only when it is at least half an interval)
// and returns those where the load's ok calls per second (rateBefore) fell
// under carry, and the lowest of all, the load's rate as the console's
// rounds read it (Δcalls ÷ Δt between two rounds).
func shortIntervals(w LoadWindow, from, to time.Time, interval time.Duration, carry float64) (short []rateInterval, lowest rateInterval) {
	lowest.Rate = -1
	for start := from; interval > 0 && start.Before(to); start = start.Add(interval) {
		end := start.Add(interval)
		if end.After(to) {
			if to.Sub(start) < interval/2 {
				break
			}
			end = to // a shorter last window
		}
		r, ok := rateBefore(w, end, end.Sub(start))
		if !ok {
			continue
		}
		ri := rateInterval{To: end, Rate: r}
		if lowest.Rate < 0 || r < lowest.Rate {
			lowest = ri
		}
		if r < carry {
			short = append(short, ri)
		}
	}
	return short, lowest
}

func describeIntervals(short []rateInterval, lowest rateInterval, since time.Time, interval time.Duration) string {
	if lowest.Rate < 0 {
		return "no interval of the load was measured"
	}
	if len(short) == 0 {
		return fmt.Sprintf("lowest %.1f calls/s ok, in the interval of %s to +%.1f s", lowest.Rate, interval, lowest.To.Sub(since).Seconds())
	}
	var parts []string
	for i, r := range short {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(short)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%.1f calls/s to +%.1f s", r.Rate, r.To.Sub(since).Seconds()))
	}
	return fmt.Sprintf("the load fell short in %d intervals of %s: %s", len(short), interval, strings.Join(parts, ", "))
}

// judgeDowns splits DOWNs by the load's rate in the rounds that decided
// them. A DOWN from count c is justified when c − 1 workers would carry the
// load's calls per second (carry(c), from the profile's target rate) in the
// deciding round's window: one scheduler interval of the load's ok calls,
// ending anywhere from one interval before the DOWN's audit time to the
// audit time itself (the round's scrape comes before its decision is
// audited; ends are tried every quarter interval; a window is cut at the
// load's start). A DOWN whose every such
// window carried carry(c) or more is bad: the console stepped down while
// the rate said count − 1 could not carry it. A DOWN whose from tag is not
// a count is bad too.
func judgeDowns(w LoadWindow, downs []consoleclient.AuditEntry, interval time.Duration, carry func(count int) float64) (bad, excused []consoleclient.AuditEntry) {
	for _, d := range downs {
		from, err := strconv.Atoi(d.Tags["from"])
		if err != nil || interval <= 0 {
			bad = append(bad, d)
			continue
		}
		justified := false
		for k := range 5 {
			end := d.At.Add(-time.Duration(k) * interval / 4)
			span := min(interval, end.Sub(w.Start)) // no window reaches before the load
			if span <= 0 {
				continue
			}
			if r, ok := rateBefore(w, end, span); ok && r < carry(from) {
				justified = true
				break
			}
		}
		if justified {
			excused = append(excused, d)
		} else {
			bad = append(bad, d)
		}
	}
	return bad, excused
}
