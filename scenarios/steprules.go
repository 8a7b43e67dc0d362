package scenarios

// Step rules by construction: two loads built so that one rule of the step
// policy (Ramen 0.7.5's autoscaling notes, "How it decides") alone decides
// what the count must do.
//
//   - low-streak-reset: "DOWN when every ready worker is low (under 30 %)
//     for 3 rebalances in a row". A zone at 2 idles for 2 low rounds, gets
//     one round's worth of load that makes a worker not low but fires no UP
//     trigger, and idles again: the step down must wait for 3 NEW low
//     rounds after that round.
//   - uneven-load: "UP when any ready worker is high (over 80 % of its
//     limit), or the zone's mean in-flight is 50 % or more". One worker is
//     busy between 50 % and 80 % of its limit, the others idle, so the mean
//     is under 50 % and no worker is high: the zone must not scale up.
//
// The phases of low-streak-reset follow the console's own rounds: the
// harness polls the zone's last decision (GET …/workers last_decision, which
// a hold updates too: "A hold is not audited … but is kept as the last
// decision") and changes the load right after a round, so no round lands
// while the load changes. The facts are judged on the console's audit times,
// the scheduler interval and the harness's own load times.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// The step policy's worker thresholds (Ramen 0.7.5's autoscaling notes, "How
// it decides": high over 80 % of a worker's limit, low under 30 %); the mean
// threshold and the target rate come from the contract settings.
const (
	highFraction = 0.8
	lowFraction  = 0.3
)

// The loads of the step-rule scenarios.
const (
	// streakCallMS: low-streak-reset's calls of 500 ms: long enough that
	// the rate per worker (in-flight ÷ call length, 30 calls/s at 15 in
	// flight) stays under the target and that a slow client's turnaround
	// between two calls costs little in-flight, short enough that a cut
	// load has drained before the next round of a 1 s scheduler (the
	// calls in flight finish; a worker does not stop a call its client
	// gave up).
	streakCallMS = 500
	// unevenCallMS: uneven-load's calls of 1 s, so the rate per worker
	// stays far under the target: only in-flight counts.
	unevenCallMS = 1000
	// unevenShare is the busy worker's share of its limit in uneven-load:
	// 70 %, over the mean-up 50 % even when a loaded client leaves a
	// fifth of its VUs between two calls, and under the high 80 %.
	unevenShare = 0.7
	// bootShare: while the count's new worker boots, the edge may route
	// every call to the workers already ready; the load then is at most
	// 75 % of their limit, under the high 80 %.
	bootShare = 0.75
	// decisionPoll is how often the harness reads the zone's last decision
	// while low-streak-reset follows the rounds.
	decisionPoll = 100 * time.Millisecond
	// staggerRamp: the VUs of a load start evenly over this (staggered).
	staggerRamp = 100 * time.Millisecond
	// scrapeSlack: a round decided this soon after the load started may
	// have scraped the workers before its calls were all in flight (the
	// stagger ramp, then 200 ms for the calls to reach the workers).
	scrapeSlack = staggerRamp + 200*time.Millisecond
)

// settings is the run's contract settings (read once per run), or read now
// when the run has none yet.
func (e *Env) settings(ctx context.Context) ContractSettings {
	if e.contract.Interval > 0 {
		return e.contract
	}
	return e.contractSettings(ctx)
}

// canaries is the number of canary workers a zone runs beside its count.
func (e *Env) canaries() int {
	if e.Endpoints.Canary {
		return 1
	}
	return 0
}

// streakVUs is the VUs through the edge for low-streak-reset's busy rounds
// over n workers (the canary included), and how many of them may run while
// the count's new worker boots. The VUs are 2 under the mean-up threshold
// of the n workers' limits (30 of 2 × 32), so the mean stays under it
// whatever the edge does, and one worker carries at least the average (15,
// 47 %): not low even when a loaded client leaves a third of the VUs
// between two calls. While a worker boots, boot VUs run (at most 75 % of
// the other n − 1 workers' limits: 24 of 32, not high even on one worker).
// The calls per second per worker (VUs ÷ n × 1000 ÷ streakCallMS) stay
// under 3/4 of the target. An error says which cannot hold.
func streakVUs(cs ContractSettings, n int) (vus, boot int, err error) {
	limit := float64(max(cs.MaxInflight, 1))
	vus = int(math.Ceil(cs.MeanUpFraction*limit*float64(n))) - 2
	boot = min(vus, int(math.Floor(bootShare*limit*float64(n-1))))
	perWorker := float64(vus) / float64(n)
	rate := perWorker * 1000 / streakCallMS
	switch {
	case n < 2:
		return 0, 0, fmt.Errorf("low-streak-reset: %d workers, want at least 2", n)
	case perWorker < 1.25*lowFraction*limit:
		return 0, 0, fmt.Errorf("low-streak-reset: %d VUs over %d workers of limit %d do not keep a worker surely not low", vus, n, cs.MaxInflight)
	case rate > 0.75*cs.TargetRPS:
		return 0, 0, fmt.Errorf("low-streak-reset: %d VUs of %d ms calls over %d workers make %.1f calls/s per worker, over 3/4 of the target %g", vus, streakCallMS, n, rate, cs.TargetRPS)
	}
	return vus, boot, nil
}

// unevenVUs is the VUs straight to one worker in uneven-load: 70 % of its
// limit, over the mean-up threshold and at most the high one, while the
// mean over n workers (the canary included) stays under the mean-up
// threshold and the rate per worker under half the target.
func unevenVUs(cs ContractSettings, n int) (int, error) {
	limit := float64(max(cs.MaxInflight, 1))
	vus := int(math.Round(unevenShare * limit))
	rate := float64(vus) * 1000 / unevenCallMS / float64(n)
	switch {
	case float64(vus) < cs.MeanUpFraction*limit || float64(vus) > highFraction*limit:
		return 0, fmt.Errorf("uneven-load: %d VUs on a worker of limit %d are not between %.0f %% and %.0f %% of it", vus, cs.MaxInflight, cs.MeanUpFraction*100, highFraction*100)
	case float64(vus) >= cs.MeanUpFraction*limit*float64(n):
		return 0, fmt.Errorf("uneven-load: %d VUs over %d workers reach the mean-up %.0f %%", vus, n, cs.MeanUpFraction*100)
	case rate >= cs.TargetRPS/2:
		return 0, fmt.Errorf("uneven-load: %d VUs of %d ms calls make %.1f calls/s per worker, not under half the target %g", vus, unevenCallMS, rate, cs.TargetRPS)
	}
	return vus, nil
}

// staggered is vus VUs of calls for at most d, started evenly over
// staggerRamp: VUs started at once run their calls in step, and a round
// that scrapes the workers in the instant between two calls reads nothing
// in flight.
func staggered(vus int, d time.Duration) load.Profile {
	return load.RampingVUs(0, load.Stage{Duration: staggerRamp, Target: vus}, load.Stage{Duration: max(d-staggerRamp, time.Second), Target: vus})
}

// errNoDecision: the console does not report a zone's last decision.
var errNoDecision = errors.New("the console does not report the zone's last decision (GET …/workers last_decision)")

// decisionWatch follows the zone's rounds on its last decision.
type decisionWatch struct {
	s    *Scope
	seen []consoleclient.Decision // every decision returned, in order
}

// next returns the zone's first last decision decided after `after`,
// reading it every decisionPoll for at most timeout. errNoDecision when the
// console never reported one.
func (w *decisionWatch) next(ctx context.Context, after time.Time, timeout time.Duration) (consoleclient.Decision, error) {
	e := w.s.env
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	reported := false
	var last string
	for i := 0; i <= int(timeout/decisionPoll); i++ {
		z, st, err := e.Console.GetZone(ctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, w.s.Zone)
		switch {
		case err != nil || st != http.StatusOK:
			last = httpDetail(st, err)
		case z.LastDecision != nil:
			reported = true
			if z.LastDecision.At.After(after) {
				w.seen = append(w.seen, *z.LastDecision)
				return *z.LastDecision, nil
			}
		}
		if err := w.s.Pause(ctx, decisionPoll); err != nil {
			break
		}
	}
	if !reported {
		if last != "" {
			return consoleclient.Decision{}, fmt.Errorf("%w: last read %s", errNoDecision, last)
		}
		return consoleclient.Decision{}, errNoDecision
	}
	return consoleclient.Decision{}, fmt.Errorf("no round of zone %s decided within %s after %s", w.s.Zone, timeout, after.Format("15:04:05.000"))
}

// roundsAfter renders the decisions of ds after t, in seconds after t.
func roundsAfter(ds []consoleclient.Decision, t time.Time) string {
	var parts []string
	for _, d := range ds {
		if d.At.After(t) {
			parts = append(parts, fmt.Sprintf("+%.2f s (%s)", d.At.Sub(t).Seconds(), d.Action))
		}
	}
	return joinOrNone(parts, ", ")
}

// LowStreakReset: "a round that is not low restarts the low rounds". A zone
// is set to count 2 under a load that keeps a worker not low (30 VUs of
// 500 ms calls through the edge: 47 % of the limit on average, the mean
// under 50 %, 30 calls/s per worker: no UP trigger) past the
// down cooldown; the load is cut right after a round, the zone idles for
// LowRounds − 1 rounds (2), the same load comes back for one round and is
// cut right after it, and the zone idles. Ramen 0.7.5's autoscaling notes
// ("How it decides"): DOWN when every ready worker is low for 3 rebalances
// in a row, so the step down must wait for 3 new low rounds after the busy
// round.
func LowStreakReset() Scenario {
	return Scenario{
		Name:  "low-streak-reset",
		Title: "a round that is not low restarts the low rounds",
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return p.DownCooldown + (2*lowRounds+4)*p.SchedulerInterval + 2*p.BootDelay
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if err := stepOnly(e); err != nil {
				return err
			}
			p := e.Profile
			cs := e.settings(ctx)
			n := 2
			vus, boot, err := streakVUs(cs, n+e.canaries())
			if err != nil {
				return err
			}
			if err := s.CreateZone(ctx, p.Max); err != nil {
				return err
			}
			// The count and the load at once, so no low round comes
			// between the change (which resets the low rounds) and the load.
			st, err := e.Console.PutZone(ctx, s.admin(), e.Endpoints.Group, s.Zone, consoleclient.Update{Count: &n})
			changed := s.Now()
			if err != nil || st != http.StatusOK {
				return fmt.Errorf("admin PUT count %d: %s", n, httpDetail(st, err))
			}
			lp := staggered(vus, cs.DownCooldown+time.Duration(2*cs.LowRounds+6)*cs.Interval+time.Minute) // a bound: the scenario cuts it
			lp.GracefulStop = p.GracefulStop
			s.Phase(fmt.Sprintf("count %d; %d VUs of %d ms calls keep a worker not low past the %s down cooldown", n, vus, streakCallMS, secs(cs.DownCooldown)))
			bootLoad := lp
			bootLoad.Stages = []load.Stage{{Duration: staggerRamp, Target: boot}, {Duration: lp.Stages[1].Duration, Target: boot}}
			first := []*loadRun{s.loadWork(ctx, bootLoad, streakCallMS)}
			if _, err := s.WaitFor(ctx, fmt.Sprintf("%d workers ready", n), 30*time.Second+4*p.BootDelay,
				func(x observe.Sample) bool { return x.Count == n && x.Ready >= n }); err != nil {
				return err
			}
			if rest := vus - boot; rest > 0 {
				// The edge routes to the new worker a discovery after it is ready.
				if err := s.Pause(ctx, cs.Interval); err != nil {
					return err
				}
				more := lp
				more.Stages = []load.Stage{{Duration: staggerRamp, Target: rest}, {Duration: lp.Stages[1].Duration, Target: rest}}
				first = append(first, s.loadWork(ctx, more, streakCallMS))
			}
			if err := s.Pause(ctx, changed.Add(cs.DownCooldown).Sub(s.Now())); err != nil {
				return err
			}
			w := &decisionWatch{s: s}
			roundWait := 3*cs.Interval + 5*time.Second
			// The busy rounds: the first one after the down cooldown, then
			// the one of the second load. Each is cut right after its round.
			r, err := w.next(ctx, s.Now(), roundWait)
			if err != nil {
				return skipNoDecision(err)
			}
			for _, l := range first {
				l.Stop()
			}
			busyRounds := []consoleclient.Decision{r}
			for _, l := range first {
				l.Wait()
			}

			s.Phase(fmt.Sprintf("idle for %d rounds", cs.LowRounds-1))
			var idle []consoleclient.Decision
			for len(idle) < cs.LowRounds-1 && r.Action != "down" {
				if r, err = w.next(ctx, r.At, roundWait); err != nil {
					return err
				}
				idle = append(idle, r)
			}
			var busy *loadRun
			var busyCut time.Time
			if r.Action != "down" {
				s.Phase(fmt.Sprintf("one busy round: %d VUs again", vus))
				busy = s.loadWork(ctx, lp, streakCallMS)
				busyAt := s.Now()
				var br consoleclient.Decision
				// A round decided too soon after the load started may have
				// read it low (a third low round: a step down is then right):
				// the busy round is the next one.
				for i := 0; br.At.IsZero() && r.Action != "down" && i < 3; i++ {
					if r, err = w.next(ctx, r.At, roundWait); err != nil {
						busy.Stop()
						return err
					}
					if r.At.After(busyAt.Add(scrapeSlack)) && r.Action != "down" {
						br = r
					}
				}
				busy.Stop()
				busyCut = s.Now()
				busy.Wait()
				switch {
				case !br.At.IsZero():
					busyRounds = append(busyRounds, br)
				case r.Action != "down":
					return fmt.Errorf("no round decided in the %s the busy load ran (rounds seen: %s)", secs(busyCut.Sub(busyAt)), roundsAfter(w.seen, busyAt))
				}
			}

			s.Phase(fmt.Sprintf("idle: a step down after %d new low rounds", cs.LowRounds))
			wait := cs.DownCooldown + time.Duration(cs.LowRounds+3)*cs.Interval + 10*time.Second
			back, werr := s.WaitFor(ctx, "count back to 1", wait, func(x observe.Sample) bool { return x.Count == 1 })
			entries, err := s.auditShowing(ctx, 1)
			if err != nil {
				return err
			}
			ch := changesSince(Changes(entries), changed.Add(-time.Minute))
			ups := 0
			for _, c := range ch {
				if c.Kind == "up" {
					ups++
				}
			}
			s.Check("the rounds that are not low fire no step up (mean under 50 %, no worker over 80 %, rate under the target)", ups == 0,
				"%d VUs of %d ms calls through the edge over %d workers (%.1f %% of the in-flight limit %d each on average, about %.0f calls/s per worker; mean-up %.0f %%, target %g, settings from %s); step ups: %d",
				vus, streakCallMS, n+e.canaries(), float64(vus)/float64(n+e.canaries())/float64(max(cs.MaxInflight, 1))*100, cs.MaxInflight, float64(vus)*1000/streakCallMS/float64(n+e.canaries()), cs.MeanUpFraction*100, cs.TargetRPS, cs.Source, ups)
			t0 := busyRounds[0].At
			rounds := fmt.Sprintf("the first load's last round at +0, idle rounds at %s", roundsAfter(idle, t0))
			if len(busyRounds) > 1 {
				rounds += fmt.Sprintf(", the busy round at +%.2f s (its load cut at +%.2f s)", busyRounds[1].At.Sub(t0).Seconds(), busyCut.Sub(t0).Seconds())
			} else {
				rounds += ": the zone stepped down before the busy round"
			}
			var at []time.Time
			for _, b := range busyRounds {
				at = append(at, b.At)
			}
			if f := FactStreakReset(cs, at, ch, rounds); f != nil {
				record(s, *f)
			}
			last := busyRounds[len(busyRounds)-1].At
			s.Check(fmt.Sprintf("steps down once %d new low rounds have passed", cs.LowRounds), werr == nil, "%v",
				errOr(werr, "count 1 sampled %s after the last busy round", secs(back.At.Sub(last))))
			var errs []error
			for _, l := range append(first, busy) {
				if l != nil {
					errs = append(errs, l.Err())
				}
			}
			return errors.Join(errs...)
		},
	}
}

// skipNoDecision turns errNoDecision into a skip: the scenario cannot follow
// the rounds of a console that does not report them.
func skipNoDecision(err error) error {
	if errors.Is(err, errNoDecision) {
		return &skipError{reason: err.Error() + ", which the scenario follows the rounds on"}
	}
	return err
}

// changesSince is the changes at or after t.
func changesSince(ch []Change, t time.Time) []Change {
	return slices.DeleteFunc(slices.Clone(ch), func(c Change) bool { return c.At.Before(t) })
}

// FactStreakReset: no step down until LowRounds NEW low rounds after a
// round that is not low. busy are the console's decision times of rounds
// the harness's load surely covered (decided after the load's calls were in
// flight and before it was cut); the LowRounds rounds after the latest one
// before a step down (or after the previous change, which resets the low
// rounds too) must all come first, so the step down comes no earlier than
// LowRounds scheduler intervals after it, less half an interval for the
// rounds' jitter. A count that kept the low rounds from before the busy
// round steps down one or two intervals after it. rounds is added to the
// detail. Nil without a busy round.
func FactStreakReset(cs ContractSettings, busy []time.Time, ch []Change, rounds string) *reports.Fact {
	if len(busy) == 0 {
		return nil
	}
	bound := time.Duration(cs.LowRounds)*cs.Interval - cs.Interval/2
	n := 0
	shortest := time.Duration(math.MaxInt64)
	var bad []string
	for i, c := range ch {
		if c.Kind != "down" {
			continue
		}
		var anchor time.Time
		what := ""
		for k, t := range busy {
			if t.Before(c.At) && t.After(anchor) {
				anchor, what = t, fmt.Sprintf("busy round %d", k+1)
			}
		}
		if anchor.IsZero() {
			continue
		}
		if i > 0 && ch[i-1].At.After(anchor) {
			anchor, what = ch[i-1].At, fmt.Sprintf("%s %d->%d", ch[i-1].Kind, ch[i-1].From, ch[i-1].To)
		}
		n++
		gap := c.At.Sub(anchor)
		shortest = min(shortest, gap)
		if gap < bound {
			bad = append(bad, fmt.Sprintf("down %d->%d %s after %s", c.From, c.To, secs(gap), what))
		}
	}
	detail := fmt.Sprintf("%d steps down after a busy round", n)
	if n > 0 {
		detail += fmt.Sprintf(", the earliest %s after it", secs(shortest))
	}
	return fact(fmt.Sprintf("no step down until %d new low rounds after a round that is not low", cs.LowRounds), len(bad) == 0,
		"%s; allowed from %s (%d intervals of %s less half an interval, on the console's audit and decision times; settings from %s); %s%s",
		detail, secs(bound), cs.LowRounds, secs(cs.Interval), cs.Source, rounds, listed(bad))
}

// UnevenLoad: "one busy worker is not a busy zone". A zone at count 2; one
// worker gets calls straight to its own /mcp (the platform's
// Faulter.Workers address), 70 % of its in-flight limit in 1 s calls, the
// others none: no worker is high (over 80 %), the zone's mean is under
// 50 % and the rate far under the target. Ramen 0.7.5's autoscaling notes
// ("How it decides"): UP when any ready worker is high, or the zone's mean
// in-flight is 50 % or more, or the rate per worker reaches the target; none
// holds, so the zone must not scale up, past the up cooldown and several
// rounds. The workers' own /metrics are read while the load runs to show
// the load was as planned. Skipped where the platform cannot reach workers
// directly.
func UnevenLoad() Scenario {
	return Scenario{
		Name:  "uneven-load",
		Title: "one busy worker is not a busy zone",
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return p.UpCooldown + (lowRounds+2)*p.SchedulerInterval + 2*p.BootDelay
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if err := stepOnly(e); err != nil {
				return err
			}
			if err := needsFaults(e, "list a zone's workers"); err != nil {
				return err
			}
			p := e.Profile
			cs := e.settings(ctx)
			n := 2
			changed, err := s.zoneAt(ctx, p.Max, n)
			if err != nil {
				return err
			}
			all, err := e.faults().Workers(ctx, e.Endpoints.Group, s.Zone)
			if err != nil {
				return skip(err)
			}
			ws := countWorkers(all)
			if len(ws) < n {
				return fmt.Errorf("the platform lists %d workers of a zone at count %d", len(ws), n)
			}
			for _, w := range all {
				if !loopbackAddr(w.Addr) {
					return &skipError{reason: (&platform.NotOfferedError{Platform: "under test", Action: "send calls straight to a worker",
						Reason: fmt.Sprintf("it gives worker %s no loopback address (%q)", w.ID, w.Addr)}).Error()}
				}
			}
			busy := ws[0]
			vus, err := unevenVUs(cs, len(all))
			if err != nil {
				return err
			}
			// Hold past the up cooldown of the change to 2 and lowRounds+1 rounds more.
			hold := max(0, changed.Add(cs.UpCooldown).Sub(s.Now())) + (lowRounds+1)*cs.Interval
			s.Phase(fmt.Sprintf("%d VUs of %d ms calls straight to worker %s for %s, the others idle", vus, unevenCallMS, busy.ID, secs(hold)))
			lp := staggered(vus, hold+time.Minute)
			lp.GracefulStop = p.GracefulStop
			l := s.loadDirect(ctx, lp, "http://"+busy.Addr+"/mcp", unevenCallMS)
			start := s.Now()
			var reads []unevenRead
			for i := 0; s.Now().Sub(start) < hold && i < int(hold/(500*time.Millisecond))+2; i++ {
				if err := s.Pause(ctx, 500*time.Millisecond); err != nil {
					l.Stop()
					return err
				}
				if r, ok := readUneven(ctx, e, s.Zone, all, busy.ID); ok {
					reads = append(reads, r)
				}
			}
			l.Stop()
			l.Wait()
			end := s.Now()
			entries, err := s.AuditTrail(ctx)
			if err != nil {
				return err
			}
			allowed := max(0, end.Sub(changed.Add(cs.UpCooldown)))
			if f := FactUnevenPlanned(cs, reads); f != nil {
				record(s, *f)
			}
			upTo := end.Add(cs.Interval) // a round just after the load's end may still see it
			s.Check("no step up while one worker is busy and the mean is under 50 % (no worker over 80 %)",
				FactNoUpUneven(Changes(entries), s.Samples(), start, upTo, n),
				"%d VUs straight to worker %s of %d (%.0f %% of its limit %d, the mean %.1f %%, about %.0f calls/s per worker) for %s, %s of them after the up cooldown of the change to %d (settings from %s); changes: %s",
				vus, busy.ID, len(all), float64(vus)/float64(max(cs.MaxInflight, 1))*100, cs.MaxInflight,
				float64(vus)/float64(max(cs.MaxInflight, 1)*len(all))*100, float64(vus)*1000/unevenCallMS/float64(len(all)),
				secs(end.Sub(start)), secs(allowed), n, cs.Source, describeChanges(changesSince(Changes(entries), start), start))
			return l.Err()
		},
	}
}

// loadDirect is a load of profile lp against url (one worker's own /mcp), in
// this process, counted in the scenario's calls. The in-flight watch is not
// started: the load is uneven on purpose.
func (s *Scope) loadDirect(ctx context.Context, lp load.Profile, url string, workMS int) *loadRun {
	return s.addLoad(startLoadAt(ctx, s.env.HTTP, s, lp, url, workMS))
}

// unevenRead is one read of every worker's /metrics in uneven-load.
type unevenRead struct {
	Busy  float64 // the busy worker's in-flight ÷ its limit
	Other float64 // the largest share among the others
	Mean  float64 // Σ in-flight ÷ Σ limit over the workers read
}

// readUneven reads every worker's /metrics once (bounded by 2 s); ok is
// false when one did not answer or reports no limit.
func readUneven(ctx context.Context, e *Env, zone string, ws []platform.Worker, busy string) (unevenRead, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var r unevenRead
	var in, limit float64
	for _, w := range ws {
		m, err := e.readWorker(ctx, zone, w)
		if err != nil || m.Limit <= 0 {
			return r, false
		}
		share := m.InFlight / m.Limit
		if w.ID == busy {
			r.Busy = share
		} else {
			r.Other = max(r.Other, share)
		}
		in += m.InFlight
		limit += m.Limit
	}
	r.Mean = in / limit
	return r, true
}

// FactUnevenPlanned: the load was as uneven-load meant it: the busy worker
// at or over the mean-up threshold in at least one read (a loaded client
// leaves VUs between two calls: the median is reported, not judged) and
// over the high one in none, the others under the low one, and the mean
// under the mean-up threshold in every read. With none over the mean-up
// threshold the scenario tested nothing; with one over the high threshold
// or the mean over the mean-up one, a step up would be right.
func FactUnevenPlanned(cs ContractSettings, reads []unevenRead) *reports.Fact {
	if len(reads) == 0 {
		return fact("the load was uneven as planned: one worker between 50 % and 80 % of its limit, the mean under 50 %", false,
			"no read of the workers' /metrics answered")
	}
	busy := make([]float64, len(reads))
	var maxBusy, maxOther, maxMean float64
	for i, r := range reads {
		busy[i] = r.Busy
		maxBusy, maxOther, maxMean = max(maxBusy, r.Busy), max(maxOther, r.Other), max(maxMean, r.Mean)
	}
	slices.Sort(busy)
	med := busy[len(busy)/2]
	ok := maxBusy >= cs.MeanUpFraction && maxBusy <= highFraction && maxOther < lowFraction && maxMean < cs.MeanUpFraction
	return fact(fmt.Sprintf("the load was uneven as planned: one worker between %.0f %% and %.0f %% of its limit, the mean under %.0f %%", cs.MeanUpFraction*100, highFraction*100, cs.MeanUpFraction*100), ok,
		"%d reads of the workers' /metrics, 0.5 s apart: the busy worker at %.1f %% (median), at most %.1f %% (at least one read at %.0f %% or more, none high: over %.0f %%); the others at most %.1f %% (low under %.0f %%); the mean at most %.1f %%",
		len(reads), med*100, maxBusy*100, cs.MeanUpFraction*100, highFraction*100, maxOther*100, lowFraction*100, maxMean*100)
}

// FactNoUpUneven reports whether no step up came in [from, to] (the
// console's audit times, ± clockSlack) and no sample in it read a count
// over count.
func FactNoUpUneven(ch []Change, samples []observe.Sample, from, to time.Time, count int) bool {
	return !slices.ContainsFunc(ch, func(c Change) bool {
		return c.Kind == "up" && !c.At.Before(from.Add(-clockSlack)) && !c.At.After(to.Add(clockSlack))
	}) && !slices.ContainsFunc(goodIn(samples, from, to), func(x observe.Sample) bool { return x.Count > count })
}

// describeChanges renders changes in seconds after t.
func describeChanges(ch []Change, t time.Time) string {
	var parts []string
	for _, c := range ch {
		parts = append(parts, fmt.Sprintf("%s %d->%d at +%.1f s (%s)", c.Kind, c.From, c.To, c.At.Sub(t).Seconds(), c.Reason))
	}
	return joinOrNone(parts, "; ")
}
