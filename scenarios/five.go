package scenarios

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// ViewerRefused: "a viewer refused", on the console, its model and every
// target. With no load and the count at rest:
//   - where the world answers the console's API: viewer and MCP-user keys
//     PUT max_count: 403 each; an admin's invalid count 0 is refused (4xx);
//     count and max unchanged; the audit has error:forbidden with each
//     actor and error:invalid with the admin; a viewer reads the count only
//     (Ramen 0.7.5's autoscaling notes, "The bounds", "Audit and logs").
//     Viewer and MCP-user keys get 403 on every admin-only read (the audit
//     log, the zone's policy); the admin's bounds probes (a count above the
//     max, a max below 1, a max and count that disagree) are 422 and change
//     nothing (probeBounds); the group's other zone, created beside the
//     scenario's, does not move (ensureSibling);
//   - everywhere: a viewer's change of the max (max + 1) and of the count
//     (count + 1) is refused with 403 and changes nothing
//     (FactViewerRefused; the model has no API keys: not applicable);
//   - an admin sets the count to min + 2 by hand, and what happens is the
//     contract (FactCountSet): one with a Bound says the autoscaler puts the
//     count back to where it had settled within it (an HPA owns the count:
//     back at the count read before the change within Bound plus one
//     sample interval), one without says the count is kept (the console as
//     a target: it must stay min + 2 for the profile's CountHold, then the
//     scenario puts it back); where the world answers the console's API
//     (the console's own zone, its model) the count is left alone and the
//     fact is not applicable (countSetLeftAlone);
//   - every entry of the trail since the scenario's start names its actor,
//     and on a target there is one at least (FactTrailActor).
func ViewerRefused() Scenario {
	return Scenario{
		Name:  "viewer-refused",
		Title: "a viewer refused",
		Facts: []target.Fact{target.FactViewerRefused, target.FactCountSet, target.FactTrailActor},
		Expected: func(p Profile, c target.Contracts) time.Duration {
			if c != nil {
				return p.CountHold + 2*p.SyncPeriod + p.MetricResolution
			}
			return 5 * time.Second
		},
		Flow: viewerRefusedFlow,
	}
}

// viewerRefusedFlow is viewer-refused on any world: the other roles' and
// the admin's refused changes and the bounds probes leave the count and the
// max as they were (console API only); the viewer is refused, a count set
// by hand is kept or put back as the contract says, and the trail names
// every actor (every world, as it applies).
func viewerRefusedFlow(ctx context.Context, w World) error {
	if err := w.CreateZone(ctx, w.Profile().Max); err != nil {
		return err
	}
	if err := w.WatchGroup(ctx); err != nil {
		return err
	}
	before := w.SampleNow(ctx)
	if w.ConsoleAPI() {
		w.Phase("refused attempts")
		w.TryOtherRoles(ctx)
		w.Phase("bounds probes")
		probeBounds(ctx, w)
		after := w.SampleNow(ctx)
		w.Check("count and max unchanged", after.Count == before.Count && after.Max == before.Max,
			"before count %d max %d, after count %d max %d", before.Count, before.Max, after.Count, after.Max)
		w.CheckRefusalsAudited(ctx)
		before = after // the viewer's facts are judged from here, not from what a probe may have changed
	}
	if before.Err != "" {
		return fmt.Errorf("reading the zone: %s", before.Err)
	}
	if w.Applies(target.FactViewerRefused) {
		if err := viewerChanges(ctx, w, before); err != nil {
			return err
		}
	}
	switch {
	case w.ConsoleAPI():
		w.NotApplicable(string(target.FactCountSet), countSetLeftAlone)
	case w.Applies(target.FactCountSet):
		if err := countSet(ctx, w, before); err != nil {
			return err
		}
	}
	if w.Applies(target.FactTrailActor) {
		entries, err := w.Trail(ctx)
		if err != nil {
			return fmt.Errorf("reading the trail: %w", err)
		}
		var anon []string
		for _, c := range entries {
			if c.Actor == "" {
				anon = append(anon, fmt.Sprintf("t=%.1fs %d->%d %s (%s)", w.Since(c.At), c.From, c.To, c.Reason, c.Source))
			}
		}
		// where the count is left alone, a zone made before the scenario
		// (the simulator's one zone) may have no change since its start
		none := ""
		if w.ConsoleAPI() && len(entries) == 0 {
			none = " (the scenario changed no count)"
		}
		w.Check(string(target.FactTrailActor), (len(entries) > 0 || w.ConsoleAPI()) && len(anon) == 0,
			"%d trail entries since the scenario's start%s, %d name no actor%s", len(entries), none, len(anon), listed(anon))
	}
	return nil
}

// countSetLeftAlone is why viewer-refused does not set a count where the
// world answers the console's API (the console's own zone, its model).
const countSetLeftAlone = "the console's own viewer-refused leaves the count alone (a count set by hand restarts the cooldowns, and the published load test's times count from the run's start): judged on the console as a target (--target console --scenarios targets)"

// viewerChanges judges FactViewerRefused: the viewer's max + 1 and count +
// 1 are each 403, and the next reading shows the count and the bounds as
// before. What the viewer changed is put back, so the next facts start
// from the same place.
func viewerChanges(ctx context.Context, w World, before target.Sample) error {
	p := w.Profile()
	w.Phase("a viewer tries to change the max and the count")
	upMax, upCount := before.Max+1, before.Count+1
	ob, err := w.PutBounds(ctx, target.Viewer, consoleclient.Update{MaxCount: &upMax})
	if err != nil {
		return fmt.Errorf("the viewer's max %d: %w", upMax, err)
	}
	oc, err := w.PutBounds(ctx, target.Viewer, consoleclient.Update{Count: &upCount})
	if err != nil {
		return fmt.Errorf("the viewer's count %d: %w", upCount, err)
	}
	after, err := w.WaitFor(ctx, "the next reading", 2*p.SampleInterval+5*time.Second, func(target.Sample) bool { return true })
	if err != nil {
		return err
	}
	same := after.Count == before.Count && after.Min == before.Min && after.Max == before.Max
	w.Check(string(target.FactViewerRefused), ob.Status == http.StatusForbidden && oc.Status == http.StatusForbidden && same,
		"viewer max %d → %d: %s; viewer count %d → %d: %s; before count %d, min %d, max %d; after count %d, min %d, max %d",
		before.Max, upMax, outcome(ob), before.Count, upCount, outcome(oc),
		before.Count, before.Min, before.Max, after.Count, after.Min, after.Max)
	if !same {
		_, _ = w.PutBounds(context.WithoutCancel(ctx), target.Admin, consoleclient.Update{MaxCount: &before.Max})
	}
	return nil
}

// countSet judges FactCountSet: an admin sets the count to min + 2; a
// contract with a Bound means "put back within Bound", one without "kept"
// (for the profile's CountHold, then the scenario puts it back).
func countSet(ctx context.Context, w World, before target.Sample) error {
	p := w.Profile()
	c := w.Contract(target.FactCountSet)
	fact := string(target.FactCountSet)
	want := before.Min + 2
	if want > before.Max {
		return fmt.Errorf("a count set by hand: min + 2 = %d is above the max %d", want, before.Max)
	}
	w.Phase(fmt.Sprintf("an admin sets the count to %d by hand", want))
	o, err := w.PutBounds(ctx, target.Admin, consoleclient.Update{Count: &want})
	if err != nil {
		return fmt.Errorf("the admin's count %d: %w", want, err)
	}
	answered := w.SampleNow(ctx) // a reading right after the answer, for its instant
	if !o.Accepted() {
		w.Check(fact, false, "the admin's count %d was refused: %s", want, outcome(o))
		return nil
	}
	iv := p.SampleInterval
	if c.Bound > 0 {
		// back at the count the autoscaler had settled at before the
		// change (its desiredReplicas then, with no load); not the status's
		// desiredReplicas, which reads 0 before a new HPA's first sync
		x, err := w.WaitFor(ctx, fmt.Sprintf("the count back at %d, the autoscaler's before the change", before.Count), c.Bound+iv,
			func(x target.Sample) bool { return x.Count == before.Count })
		if err != nil && ctx.Err() != nil { // stopped, not judged
			return err
		}
		w.Check(fact, err == nil, "count set to %d by hand; %s (put back within %s, sampled every %s)",
			want, errOr(err, "back at %d %.1f s later", x.Count, x.At.Sub(answered.At).Seconds()), c.Bound, iv)
		return nil
	}
	hold := p.CountHold
	x, err := w.WaitFor(ctx, "the hold's end", hold, func(x target.Sample) bool { return x.Count != want })
	if err != nil && ctx.Err() != nil {
		return err
	}
	kept := err != nil // the wait for a change ran out: kept
	detail := fmt.Sprintf("kept at %d for %s", want, hold)
	if !kept {
		detail = fmt.Sprintf("count %d %.1f s after it was set to %d", x.Count, x.At.Sub(answered.At).Seconds(), want)
	}
	w.Check(fact, kept, "count set to %d by hand: %s (the contract keeps it)", want, detail)
	if o, err := w.PutBounds(context.WithoutCancel(ctx), target.Admin, consoleclient.Update{Count: &before.Count}); err != nil || !o.Accepted() {
		return fmt.Errorf("putting the count back to %d: %s %v", before.Count, outcome(o), err)
	}
	return nil
}

// TryOtherRoles is the console's (World): the viewer's and the MCP
// user's PUT max_count and count are 403, their GET shows the count only,
// their admin-only reads and mutating routes are refused, and an admin's
// count 0 is refused with 4xx.
func (s *Scope) TryOtherRoles(ctx context.Context) {
	e := s.env
	g := e.Endpoints.Group
	wanted := 5
	for _, k := range []struct{ who, key, name string }{
		{"viewer", e.Endpoints.Keys.Viewer.Key, e.Endpoints.Keys.Viewer.Name},
		{"MCP user", e.Endpoints.Keys.MCPUser.Key, e.Endpoints.Keys.MCPUser.Name},
	} {
		st, err := e.Console.PutZone(ctx, k.key, g, s.Zone, consoleclient.Update{MaxCount: &wanted})
		s.Check(k.who+" PUT max_count is 403", err == nil && st == http.StatusForbidden, "%s", httpDetail(st, err))
		st, err = e.Console.PutZone(ctx, k.key, g, s.Zone, consoleclient.Update{Count: &wanted})
		s.Check(k.who+" PUT count is 403", err == nil && st == http.StatusForbidden, "%s", httpDetail(st, err))
		z, st, err := e.Console.GetZone(ctx, k.key, g, s.Zone)
		s.Check(k.who+" reads the count only", err == nil && st == http.StatusOK && z.MaxCount == nil,
			"%s, max_count shown: %v", httpDetail(st, err), z.MaxCount != nil)
		s.probeAdminReads(ctx, k.who, k.key)
	}
	s.probeMutatingRoutes(ctx)
	zero := 0
	st, err := e.Console.PutZone(ctx, s.admin(), g, s.Zone, consoleclient.Update{Count: &zero})
	s.Check("an admin's invalid count 0 is refused with 4xx", err == nil && st/100 == 4 && st != http.StatusForbidden,
		"%s", httpDetail(st, err))
}

// CheckRefusalsAudited is the console's (World): the super
// admin reads the zone's audit, which has error:forbidden (at least two)
// for the viewer and for the MCP user and error:invalid for the group admin.
func (s *Scope) CheckRefusalsAudited(ctx context.Context) {
	e := s.env
	entries, st, err := e.Console.Audit(ctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, s.Zone)
	if !s.Check("audit readable by the super admin", err == nil && st == http.StatusOK, "%s", httpDetail(st, err)) {
		return
	}
	count := func(actor, tag string) int {
		n := 0
		for _, en := range entries {
			if en.Actor == actor && (en.Error == tag || en.Tags["error"] == tag) {
				n++
			}
		}
		return n
	}
	for _, name := range []string{e.Endpoints.Keys.Viewer.Name, e.Endpoints.Keys.MCPUser.Name} {
		n := count(name, "forbidden")
		s.Check("audit has error:forbidden for "+name, n >= 2, "%d entries", n)
	}
	admin := e.Endpoints.Keys.GroupAdmin.Name
	invalid := count(admin, "invalid")
	s.Check("audit has error:invalid for "+admin, invalid >= 1, "%d entries", invalid)
}

// MaxOneNeverScales: "max 1 never scales". 64 VUs against a zone with max 1:
// the count is 1 at every sample, the worker refuses beyond its in-flight
// limit (429 > 0), and nothing answers 5xx.
func MaxOneNeverScales() Scenario {
	return Scenario{
		Name:     "max-1",
		Title:    "max 1 never scales",
		Expected: func(p Profile, _ target.Contracts) time.Duration { return p.MaxOneLoad + p.GracefulStop },
		Flow:     maxOneFlow,
		OnPlatform: func(ctx context.Context, _ *Env, s *Scope) error {
			s.judgeBackPressure(ctx)
			return nil
		},
	}
}

// maxOneFlow is max-1 on any world: the profile's VUs for MaxOneLoad
// against a zone at max 1; the count is 1 at every sample, the load is
// refused beyond count 1's capacity (FactRefusedAtMaxOne), and calls are
// served.
func maxOneFlow(ctx context.Context, w World) error {
	p := w.Profile()
	if err := w.CreateZone(ctx, 1); err != nil {
		return err
	}
	w.Phase(fmt.Sprintf("%d VUs for %s", p.VUs, p.MaxOneLoad))
	l := loadFor(ctx, w, p.MaxOneLoad)
	l.Wait()
	if err := l.Err(); err != nil {
		return err
	}
	record(w, FactCountAlwaysOne(w.Samples()))
	c := l.Calls()
	if f, judged := FactRefusedAtMaxOne(c, w.Canary(), p); judged {
		record(w, f)
	}
	w.Check("calls served", c.OK > 0, "%d calls ok", c.OK)
	return nil
}

// factBackPressure is FactBackPressureAtLimit's name.
const factBackPressure = "back-pressure exactly at the limit: no worker held more calls at once than its in-flight limit, and none answered 429 before it reached it"

// judgeBackPressure reads every worker of the scope's zone (the platform's
// Faulter.Workers and each worker's /metrics) and judges
// FactBackPressureAtLimit on them. Not applicable where the platform gives
// no worker addresses or no worker reports its high-water mark (a system
// other than the reference one).
func (s *Scope) judgeBackPressure(ctx context.Context) {
	e := s.env
	ws, err := e.faults().Workers(ctx, e.Endpoints.Group, s.Zone)
	if err != nil {
		if errors.Is(err, platform.ErrNotOffered) {
			s.NotApplicable(factBackPressure, "the workers' own /metrics cannot be read: "+err.Error())
			return
		}
		s.Check(factBackPressure, false, "list the zone's workers: %v", err)
		return
	}
	var read []WorkerPressure
	for _, w := range ws {
		if !readable(w) {
			s.NotApplicable(factBackPressure, fmt.Sprintf("the platform gives no address for worker %s, so its /metrics cannot be read", w.ID))
			return
		}
		m, err := e.readWorker(ctx, s.Zone, w)
		if errors.Is(err, platform.ErrNotOffered) {
			s.NotApplicable(factBackPressure, "the workers' own /metrics cannot be read: "+err.Error())
			return
		}
		if err != nil {
			s.Check(factBackPressure, false, "%v", err)
			return
		}
		if !m.HasHighWater {
			s.NotApplicable(factBackPressure, fmt.Sprintf("worker %s reports no %s (the most calls it held at once)", w.ID, metricWorkerHighWater))
			return
		}
		read = append(read, WorkerPressure{ID: w.ID, Limit: m.Limit, HighWater: m.HighWater, Refused: m.Refused})
	}
	record(s, FactBackPressureAtLimit(read))
}

// loadUntilMax applies load for d and waits, each for at most up, until
// the count reaches max (the decision) and then all max workers are ready
// (the canaries a sample's Ready counts aside: World.CanariesInReady). It
// records both times.
func loadUntilMax(ctx context.Context, w World, d, up time.Duration) WorldLoad {
	p := w.Profile()
	max := p.Max
	w.Phase(fmt.Sprintf("%d VUs until count reaches %d", p.VUs, max))
	l := loadFor(ctx, w, d)
	reach, err := w.WaitFor(ctx, fmt.Sprintf("count to reach %d", max), up,
		func(x target.Sample) bool { return x.Count >= max })
	if !w.Check(fmt.Sprintf("count reaches %d under load", max), err == nil, "%v", errOr(err, "at %.0f s", w.Since(reach.At))) {
		return l
	}
	w.Times().UpToMaxS = w.Since(reach.At)
	ready, err := w.WaitFor(ctx, fmt.Sprintf("%d workers ready", max), up,
		func(x target.Sample) bool { return x.Ready >= max+w.CanariesInReady() })
	if w.Check(fmt.Sprintf("all %d workers ready", max), err == nil, "%v", errOr(err, "at %.0f s", w.Since(ready.At))) {
		w.Times().ReadyMaxS = w.Since(ready.At)
	}
	return l
}

// WaitBackTo1 waits for the count to come back to 1 after the load and
// records the time.
func WaitBackTo1(ctx context.Context, w World) {
	if f, left := FactNeverLeftOne(w.Samples()); !left {
		record(w, f)
		return
	}
	w.Phase("idle until count is back to 1")
	back, err := w.WaitFor(ctx, "count back to 1", w.Profile().DownTimeout, func(x target.Sample) bool { return x.Count == 1 })
	if w.Check("count back to 1 after the load", err == nil, "%v", errOr(err, "at %.0f s", w.Since(back.At))) {
		w.Times().BackTo1S = w.Since(back.At)
	}
}

// CheckBounds checks 1 <= count <= max at every sample.
func CheckBounds(w World, max int) { record(w, FactCountWithin(w.Samples(), max)) }

// The facts below judge the console scenarios from what any world records
// (its samples, its load's calls), so every world judges them by the same
// code. A sample with Err set is
// not judged.

// FactCountAlwaysOne is max-1's "count is 1 at every sample".
func FactCountAlwaysOne(samples []target.Sample) reports.Fact {
	bad := 0
	for _, smp := range samples {
		if smp.Err == "" && smp.Count != 1 {
			bad++
		}
	}
	return *fact("count is 1 at every sample", bad == 0, "%d of %d samples had another count", bad, len(samples))
}

// FactRefusedAtMaxOne is max-1's "back-pressure: 429 > 0": with the count
// held at 1, the worker refuses what is over its in-flight limit. Not
// judged (false) where a canary is deployed and the profile's VUs fit count
// 1 and the canary, 2 × the in-flight limit: the canary counts as capacity,
// so those VUs need not be refused (the canary's own fact checks that it
// took its share).
func FactRefusedAtMaxOne(c reports.Calls, canary bool, p Profile) (reports.Fact, bool) {
	if canary && p.VUs <= 2*p.MaxInflight {
		return reports.Fact{}, false
	}
	return *fact("back-pressure: 429 > 0", c.TooMany > 0, "%d calls answered 429", c.TooMany), true
}

// FactNeverLeftOne is "count back to 1 after the load" when no sample
// showed a count above 1 (left false): there is no way back to measure, and
// a "back to 1" time here would read as the autoscaler's. When left is true
// the fact is the wait's, and the returned fact is zero.
func FactNeverLeftOne(samples []target.Sample) (f reports.Fact, left bool) {
	if PeakCount(samples) > 1 {
		return reports.Fact{}, true
	}
	return *fact("count back to 1 after the load", true, "the count never left 1: no time back to 1 measured"), false
}

// FactCountWithin is "count within 1..max at every sample".
func FactCountWithin(samples []target.Sample, max int) reports.Fact {
	bad := 0
	for _, smp := range samples {
		if smp.Err == "" && (smp.Count < 1 || smp.Count > max) {
			bad++
		}
	}
	return *fact(fmt.Sprintf("count within 1..%d at every sample", max), bad == 0, "%d samples outside", bad)
}

// httpDetail renders an API answer for a fact: "HTTP 403", plus the error when there is one.
func httpDetail(status int, err error) string {
	return fmt.Sprintf("HTTP %d%s", status, errSuffix(err))
}

// errSuffix is ": " and err's text to end a detail with, or "" for no error.
func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

func errOr(err error, format string, args ...any) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf(format, args...)
}

// Sustained: "sustained load up to the max and back to 1", on the console,
// its model and every target. From count 1 (the console's fresh zone) or
// the count at rest (a target settled at its min), the profile's VUs until
// the count reaches the profile's max (3) and that many workers are ready,
// held SustainHold; then the load stops.
//   - the count is above min within the contract's Bound (plus one sample
//     interval) of the load's start, or of the first reading of the
//     autoscaler's metric above its target where the world shows one
//     (FactScalesUp);
//   - the console's own zone and its model: the count comes back to 1 and
//     stays within 1..max at every sample (the published table's "Up to 3"
//     and "Back to 1" are this scenario's times from its start); a target
//     leaves the way back to the next scenario's settle (KEDA's queue takes
//     longer than the quick profile's wait; spike judges FactBackToMin);
//   - every reading has min <= count <= max (FactWithinBounds), and every
//     change of the count the readings saw has a trail entry to the same
//     count within the contract's Bound (FactTrail).
//
// On a target the waits for the count and the ready replicas last the
// profile's UpTimeout or the scale-up bound and a sample interval, the
// longer; a target whose max is below 3 is an error, one that promises none
// of the three facts is skipped with its reasons.
func Sustained() Scenario {
	return Scenario{
		Name:  "sustained",
		Title: "sustained load up to the max and back to 1",
		Facts: sustainedFacts,
		Expected: func(p Profile, c target.Contracts) time.Duration {
			if c != nil {
				return 2*p.SyncPeriod + p.MetricResolution + p.SustainHold
			}
			return 2*p.SchedulerInterval + p.SustainHold + p.DownCooldown*time.Duration(p.Max-1) + 4*p.SchedulerInterval
		},
		Flow: sustainedFlow,
	}
}

// sustainedFlow is sustained on any world.
func sustainedFlow(ctx context.Context, w World) error {
	p := w.Profile()
	if err := w.CreateZone(ctx, p.Max); err != nil {
		return err
	}
	up, d := p.UpTimeout, p.UpTimeout+p.SustainHold
	if !w.ConsoleAPI() {
		if !anyPromised(w, sustainedFacts...) { // nothing to judge: each n/a with the target's reason, the verdict skipped
			for _, f := range sustainedFacts {
				w.Applies(f)
			}
			return nil
		}
		if x := lastGood(w.Samples()); x.Max < p.Max {
			return fmt.Errorf("the target's max %d: sustained's load must reach a count of %d", x.Max, p.Max)
		}
		// a target's scale-up bound may be longer than the profile's wait
		// (a long scale-up stabilization window); its load lasts both
		// waits and the hold, as max-lowered's does
		if c := w.Contract(target.FactScalesUp); c.Applies {
			up = max(up, c.Bound+p.SampleInterval)
		}
		d = 2*up + p.SustainHold + 2*p.SampleInterval
	}
	from := w.Now()
	l := loadUntilMax(ctx, w, d, up)
	reached := w.Times().UpToMaxS >= 0
	if reached {
		w.Phase(fmt.Sprintf("hold at %d for %s", p.Max, p.SustainHold))
		if err := w.Pause(ctx, p.SustainHold); err != nil {
			return err
		}
	}
	// judged after the hold: a target whose min is the profile's max
	// already is "at 3" at rest and rises above min under the load; from
	// the load's own start (a sharded load's pods begin a lead later)
	if st := l.Start(); st.After(from) {
		from = st
	}
	judgeScalesUp(w, from, from, "")
	if !reached && w.ConsoleAPI() {
		return nil
	}
	w.Phase("load stops")
	l.Stop()
	l.Wait()
	if w.ConsoleAPI() {
		WaitBackTo1(ctx, w)
		CheckBounds(w, p.Max)
	}
	if err := judgeBoundsAndTrail(ctx, w); err != nil {
		return err
	}
	return l.Err()
}

// sustainedFacts are the contract facts sustained judges.
var sustainedFacts = []target.Fact{target.FactScalesUp, target.FactWithinBounds, target.FactTrail}

// anyPromised reports whether the world promises any of fs (recording
// nothing).
func anyPromised(w World, fs ...target.Fact) bool {
	return slices.ContainsFunc(fs, func(f target.Fact) bool { return w.Contract(f).Applies })
}

// judgeScalesUp judges FactScalesUp over the samples since from, the
// load's start: the first reading with the count above min comes within
// the contract's Bound and one sample interval of start (startWhat names
// it; "" when start is from), or of the first reading of the autoscaler's
// metric above its target where the world shows one no earlier than start
// (the metric pipeline's delay is not the autoscaler's); the detail gives
// the time from the load's start too.
func judgeScalesUp(w World, from, start time.Time, startWhat string) {
	if !w.Applies(target.FactScalesUp) {
		return
	}
	b, iv := w.Contract(target.FactScalesUp).Bound, w.Profile().SampleInterval
	good := goodIn(w.Samples(), from, time.Time{})
	i := slices.IndexFunc(good, func(x target.Sample) bool { return x.Count > x.Min })
	if i < 0 {
		w.Check(string(target.FactScalesUp), false, "the count never rose above min: %d readings since the load started (bound %s, sampled every %s)", len(good), b, iv)
		return
	}
	x := good[i]
	ref, what := start, startWhat
	if m, wh := scaleUpFrom(good, from, x); wh != "" && !m.Before(start) {
		ref, what = m, wh
	}
	detail := fmt.Sprintf("count %d > min %d %.1f s after the load started", x.Count, x.Min, x.At.Sub(from).Seconds())
	if what != "" {
		detail += fmt.Sprintf(", %.1f s after %s", x.At.Sub(ref).Seconds(), what)
	}
	w.Check(string(target.FactScalesUp), x.At.Sub(ref) <= b+iv, "%s (bound %s, sampled every %s)", detail, b, iv)
}

// judgeBoundsAndTrail judges, over the scenario's good readings, that each
// has min <= count <= max (FactWithinBounds) and that every change of the
// count they saw has a trail entry to the same count within the contract's
// Bound (FactTrail; the trail read now).
func judgeBoundsAndTrail(ctx context.Context, w World) error {
	samples := goodIn(w.Samples(), time.Time{}, time.Time{})
	judgeWithinBounds(w, samples)
	if w.Applies(target.FactTrail) {
		trail, err := w.Trail(ctx)
		if err != nil {
			return fmt.Errorf("reading the trail: %w", err)
		}
		changes := countChanges(samples)
		bound := w.Contract(target.FactTrail).Bound
		missing := missingFromTrail(changes, trail, bound, w.Since)
		w.Check(string(target.FactTrail), len(changes) > 0 && len(missing) == 0,
			"%d changes of the count seen, %d trail entries, %d changes with no entry within %s%s",
			len(changes), len(trail), len(missing), bound, listed(missing))
	}
	return nil
}

// judgeWithinBounds judges FactWithinBounds over the good readings
// samples: there is one, and each has min <= count <= max.
func judgeWithinBounds(w World, samples []target.Sample) {
	if !w.Applies(target.FactWithinBounds) {
		return
	}
	bad := outOfBounds(samples, w.Since)
	w.Check(string(target.FactWithinBounds), len(samples) > 0 && len(bad) == 0, "%d readings, %d outside min and max%s",
		len(samples), len(bad), listed(bad))
}

// Burst: "a 45 s burst". Load for the burst's length, then idle: the peak
// count and the time back to 1.
func Burst() Scenario {
	return Scenario{
		Name:  "burst",
		Title: "a 45 s burst",
		TitleFor: func(p Profile) string {
			return fmt.Sprintf("a %g s burst", p.Burst.Seconds())
		},
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return p.Burst + p.DownCooldown*time.Duration(p.Max-1) + 4*p.SchedulerInterval
		},
		Flow: burstFlow,
	}
}

// burstFlow is burst on any world.
func burstFlow(ctx context.Context, w World) error {
	p := w.Profile()
	if err := w.CreateZone(ctx, p.Max); err != nil {
		return err
	}
	w.Phase(fmt.Sprintf("burst: %d VUs for %s", p.VUs, p.Burst))
	l := loadFor(ctx, w, p.Burst)
	l.Wait()
	w.Check("burst registered", l.Calls().OK > 0, "peak count %d, %d calls ok", PeakCount(w.Samples()), l.Calls().OK)
	WaitBackTo1(ctx, w)
	CheckBounds(w, p.Max)
	return l.Err()
}

// MaxLowered: "the max lowered under load", on the console, its model
// and every target. Under the profile's load, once the count reaches the
// profile's max (a target run's 3), an admin lowers the max to 1. The count
// is at most 1 within the contract's bound (FactLoweredMax; the console's
// and its model's bound is 0: at the very next sample, which shows max 1
// too; a target's, at a reading no later than its bound plus one sample
// interval) and stays there while the load holds LoweredHold; then the
// admin puts the max back, and both changes are accepted
// (FactAdminAllowed). The bounds are put back also when the scenario
// fails. Where the world answers the console's API, held at the max before
// the lowering, the admin's bounds probes are 422 and change nothing
// (probeBounds), the audit shows workers.max_count from:max to:1, and the
// group's other zone, created beside the scenario's with its own max and
// no load, does not move (ensureSibling): the table's calls are the
// scenario zone's alone.
func MaxLowered() Scenario {
	return Scenario{
		Name:  "max-lowered",
		Title: "the max lowered under load",
		Facts: []target.Fact{target.FactLoweredMax, target.FactAdminAllowed},
		Expected: func(p Profile, c target.Contracts) time.Duration {
			if c != nil {
				return 3*p.SyncPeriod + p.MetricResolution + p.LoweredHold
			}
			return 2*p.SchedulerInterval + p.LoweredHold + p.GracefulStop
		},
		Flow: maxLoweredFlow,
	}
}

// loweredTo is the max max-lowered sets.
const loweredTo = 1

// maxLoweredFlow is max-lowered on any world. The audit fact needs the
// trail read to succeed.
func maxLoweredFlow(ctx context.Context, w World) error {
	p := w.Profile()
	if err := w.CreateZone(ctx, p.Max); err != nil {
		return err
	}
	if err := w.WatchGroup(ctx); err != nil {
		return err
	}
	judgeLowered, judgeAdmin := w.Applies(target.FactLoweredMax), w.Applies(target.FactAdminAllowed)
	if !judgeLowered && !judgeAdmin { // nothing to judge: the verdict is skipped with the target's reasons
		return nil
	}
	if !w.ConsoleAPI() {
		if x := lastGood(w.Samples()); x.Min > loweredTo || x.Max < p.Max {
			return fmt.Errorf("the target's min %d and max %d: lowering the max to %d from a count of %d needs min <= %d and max >= %d",
				x.Min, x.Max, loweredTo, p.Max, loweredTo, p.Max)
		}
	}
	c := w.Contract(target.FactLoweredMax)
	l := loadUntilMax(ctx, w, 2*p.UpTimeout+c.Bound+p.LoweredHold+4*p.SampleInterval, p.UpTimeout)
	if w.Times().UpToMaxS < 0 {
		return nil
	}
	before := lastGood(w.Samples())
	if w.ConsoleAPI() {
		w.Phase("bounds probes at the max under load")
		probeBounds(ctx, w)
	}
	w.Phase(fmt.Sprintf("an admin lowers max to %d under load", loweredTo))
	answer, err := w.LowerMax(ctx, loweredTo)
	restored := false
	restore := func() (int, error) { // also when the run is stopped: the next run finds the bounds it had
		o, err := w.PutBounds(context.WithoutCancel(ctx), target.Admin, consoleclient.Update{MaxCount: &before.Max})
		restored = err == nil && o.Status == http.StatusOK
		return o.Status, err
	}
	defer func() {
		if !restored {
			_, _ = restore()
		}
	}()
	lowered := errOr(err, "%s", answer)
	switch {
	case !judgeLowered:
	case err != nil:
		w.Check(string(target.FactLoweredMax), false, "the admin's max %d was refused: %s", loweredTo, lowered)
	default:
		if err := judgeLoweredMax(ctx, w, c); err != nil {
			return err
		}
	}
	if w.ConsoleAPI() {
		entries, err := w.AuditTrail(ctx)
		want := strconv.Itoa(before.Max)
		found := slices.ContainsFunc(entries, func(en consoleclient.AuditEntry) bool {
			return en.Action == "workers.max_count" && en.Tags["from"] == want && en.Tags["to"] == strconv.Itoa(loweredTo)
		})
		w.Check(fmt.Sprintf("audit shows workers.max_count from:%s to:%d", want, loweredTo), err == nil && found, "%d entries%s", len(entries), errSuffix(err))
	}
	w.Phase(fmt.Sprintf("an admin puts max %d back", before.Max))
	st, rerr := restore()
	if judgeAdmin {
		w.Check(string(target.FactAdminAllowed), err == nil && rerr == nil && st == http.StatusOK, "max %d → %d: %s; put back to %d: %s",
			before.Max, loweredTo, lowered, before.Max, httpDetail(st, rerr))
	}
	l.Stop()
	l.Wait()
	return l.Err()
}

// judgeLoweredMax judges FactLoweredMax once the max is lowered: the count
// at most loweredTo within the contract's bound c.Bound (0: at the next
// sample, which also shows the new max), then at every sample while the
// load holds LoweredHold. A stopped run is the error.
func judgeLoweredMax(ctx context.Context, w World, c target.Contract) error {
	p := w.Profile()
	fact := string(target.FactLoweredMax)
	from := len(w.Samples())
	var x target.Sample
	var err error
	within := "at the next sample"
	if c.Bound == 0 {
		x, err = w.WaitFor(ctx, "the next sample", 2*p.SampleInterval+5*time.Second, func(target.Sample) bool { return true })
		if err == nil && (x.Count > loweredTo || x.Max != loweredTo) {
			err = fmt.Errorf("count %d, max %d at the next sample", x.Count, x.Max)
		}
	} else {
		within = fmt.Sprintf("within %s (sampled every %s)", c.Bound, p.SampleInterval)
		x, err = w.WaitFor(ctx, fmt.Sprintf("the count at most %d", loweredTo), c.Bound+p.SampleInterval,
			func(x target.Sample) bool { return x.Count <= loweredTo })
	}
	if err != nil {
		if ctx.Err() != nil { // stopped, not judged
			return err
		}
		w.Check(fact, false, "max %d: %v", loweredTo, err)
		return nil
	}
	w.Phase(fmt.Sprintf("load on for %s at max %d", p.LoweredHold, loweredTo))
	if err := w.Pause(ctx, p.LoweredHold); err != nil {
		return err
	}
	var above []string
	reached := false // from the sample that met the bound on
	for _, y := range w.Samples()[from:] {
		switch {
		case y.Err != "":
		case !reached:
			reached = !y.At.Before(x.At) && y.Count <= loweredTo
		case y.Count > loweredTo:
			above = append(above, fmt.Sprintf("t=%.1fs count %d", w.Since(y.At), y.Count))
		}
	}
	w.Check(fact, len(above) == 0, "count %d, max %d at t=%.1fs (%s); %d samples above %d while the load held %s more%s",
		x.Count, x.Max, w.Since(x.At), within, len(above), loweredTo, p.LoweredHold, listed(above))
	return nil
}

// Pause holds a phase for d (a load phase's length, not a synchronisation)
// on the run's clock (Env.Clock), returning early with an error wrapping
// errStopped when ctx ends (World).
func (s *Scope) Pause(ctx context.Context, d time.Duration) error {
	if s.env.Target != nil { // a target is read only when a scenario reads it: it is read while it pauses
		if err := s.hold(ctx, d, nil); err != nil {
			return fmt.Errorf("%w: %v", errStopped, err)
		}
		return nil
	}
	if err := s.env.clock().Sleep(ctx, d); err != nil {
		return fmt.Errorf("%w: %v", errStopped, err)
	}
	return nil
}
