package scenarios

// The contract facts: how the count moved, judged against Ramen 0.7.5's
// autoscaling notes ("How it decides": up fast, down carefully; "Audit and
// logs"), not only where it ended. Everything here is pure: functions over
// what the harness observed of one zone (its audit trail with the console's
// exact times, its 1 s samples, the harness's own load) and the settings the
// rules depend on. They are table-tested with synthetic traces
// (contract_test.go).

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/observe"
)

// The audit actions of the "Audit and logs" table of Ramen 0.7.5's autoscaling notes.
const (
	auditAutoscale = "workers.autoscale"
	auditMaxCount  = "workers.max_count"
	auditCount     = "workers.count"
)

// Slack the facts allow, each stated in the fact's text.
const (
	// clockSlack: the console's audit times against the harness's sample
	// times (one machine on local; NTP-close elsewhere).
	clockSlack = 100 * time.Millisecond
	// exactSlack: cooldowns are compared on the console's own times, so
	// only rounding of the JSON times is forgiven.
	exactSlack = time.Millisecond
	// rateSlack, meanSlack: the harness's estimate of the load the
	// autoscaler saw (its calls per second, its mean in-flight) may read
	// this much high.
	rateSlack = 0.8
	meanSlack = 0.9
)

// ContractSettings are the settings the contract facts depend on.
type ContractSettings struct {
	UpCooldown   time.Duration // no step up within this of the last change
	DownCooldown time.Duration // no step down within this of the last change
	Interval     time.Duration // the scheduler's interval: one round per zone each
	LowRounds    int           // all-low rounds in a row before a step down (3)
	// LowFraction: a ready worker under this share of its in-flight limit
	// is low (0: unknown).
	LowFraction float64
	// MeanUpFraction and TargetRPS size the proportional step:
	// ceil(ready × max(mean / MeanUpFraction, rate per worker / TargetRPS)).
	MeanUpFraction float64
	TargetRPS      float64
	MaxInflight    int // each worker's in-flight limit
	// Slack is what the timing facts allow for a round's own scrape and the
	// scheduler's jitter: one sample interval (1 s).
	Slack time.Duration
	// Source says where the autoscaler's settings came from ("the console's
	// GET /api/v1/config/autoscale" or "the run's profile quick"); every
	// fact that uses them says so.
	Source string
}

// LoadWindow is one load phase as the harness drove it.
type LoadWindow struct {
	Start time.Time
	End   time.Time // when the load stopped; zero while it runs
	VUs   int       // constant VUs
	// OK is the ok calls of each second of the load: OK[k] ended in
	// [Start+k s, Start+k+1 s).
	OK []int64
}

// MaxLowering is one PUT max_count that lowered the max under the count,
// and what the harness read right after it.
type MaxLowering struct {
	At       time.Time
	To       int // the new max
	PutCount int // the count in the PUT's answer; -1 when unreadable
	GetCount int // the count of a GET right after the PUT; -1 when unreadable
	Detail   string
}

// Trace is what the harness observed of one zone.
type Trace struct {
	Max     int // the zone's max while under load
	Audit   []consoleclient.AuditEntry
	Samples []observe.Sample
	Loads   []LoadWindow
	Lowered []MaxLowering
	End     time.Time // when the observation ended
	// Rounds are the zone's step rounds as the console reported them (GET
	// …/policy step_rounds; nil when it keeps none), oldest first, and
	// RoundGaps the indexes before which some may be missing.
	Rounds    []consoleclient.StepRound
	RoundGaps map[int]bool
}

// Change is one change of a zone's count as its audit trail records it.
type Change struct {
	At       time.Time
	From, To int
	Kind     string // "up" or "down" (workers.autoscale), "set" (workers.count: creation, manual, lowered max)
	Reason   string
}

// Changes returns the changes of the count in the audit trail, oldest
// first: workers.autoscale up/down and workers.count entries that were not
// refused.
func Changes(audit []consoleclient.AuditEntry) []Change {
	es := slices.Clone(audit)
	slices.SortStableFunc(es, func(a, b consoleclient.AuditEntry) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return int(a.ID) - int(b.ID)
	})
	var out []Change
	for _, e := range es {
		if refused(e) {
			continue
		}
		from, ferr := strconv.Atoi(e.Tags["from"])
		to, terr := strconv.Atoi(e.Tags["to"])
		if ferr != nil || terr != nil {
			continue
		}
		switch {
		case e.Action == auditAutoscale && (e.Tags["action"] == "up" || e.Tags["action"] == "down") && from != to:
			out = append(out, Change{At: e.At, From: from, To: to, Kind: e.Tags["action"], Reason: e.Tags["reason"]})
		case e.Action == auditCount && from != to:
			out = append(out, Change{At: e.At, From: from, To: to, Kind: "set", Reason: e.Tags["reason"]})
		}
	}
	return out
}

func refused(e consoleclient.AuditEntry) bool { return e.Error != "" || e.Tags["error"] != "" }

// JudgeContract returns every contract fact the trace gives something to
// judge: the audit facts always, the step facts when the count stepped, the
// lowered-max fact when the max was lowered.
func JudgeContract(cs ContractSettings, tr Trace) []reports.Fact {
	ch := Changes(tr.Audit)
	var out []reports.Fact
	add := func(f *reports.Fact) {
		if f != nil {
			out = append(out, *f)
		}
	}
	add(FactAuditTags(tr.Audit))
	add(FactAuditOnce(ch, tr.Samples))
	add(FactHoldsNotAudited(tr.Audit))
	add(FactUpSpacing(cs, ch))
	add(FactFirstUpProportional(cs, tr, ch))
	add(FactTimeToMax(cs, tr, ch))
	add(FactDownByOne(ch))
	add(FactDownSpacing(cs, ch))
	add(FactLowRounds(cs, tr, ch))
	add(FactNoLinger(cs, tr, ch))
	for _, l := range tr.Lowered {
		add(FactLoweredMaxInRequest(l))
	}
	return out
}

func fact(name string, ok bool, format string, args ...any) *reports.Fact {
	return &reports.Fact{Name: name, Passed: ok, Detail: fmt.Sprintf(format, args...)}
}

// secs renders a duration in seconds for a fact ("3 s", "0.45 s").
func secs(d time.Duration) string {
	return strconv.FormatFloat(math.Round(d.Seconds()*100)/100, 'f', -1, 64) + " s"
}

// FactAuditTags: every audit entry of a change carries its audit tags
// (workers.autoscale action/from/to/reason, workers.max_count from/to,
// workers.count from/to).
func FactAuditTags(audit []consoleclient.AuditEntry) *reports.Fact {
	want := map[string][]string{
		auditAutoscale: {"action", "from", "to", "reason"},
		auditMaxCount:  {"from", "to"},
		auditCount:     {"from", "to"},
	}
	var bad []string
	n := 0
	for _, e := range audit {
		tags, ok := want[e.Action]
		if !ok || refused(e) {
			continue
		}
		n++
		for _, t := range tags {
			if e.Tags[t] == "" {
				bad = append(bad, fmt.Sprintf("%s #%d has no %s:", e.Action, e.ID, t))
			} else if t == "from" || t == "to" {
				if _, err := strconv.Atoi(e.Tags[t]); err != nil {
					bad = append(bad, fmt.Sprintf("%s #%d %s:%q is not a count", e.Action, e.ID, t, e.Tags[t]))
				}
			}
		}
	}
	return fact("every change's audit entry has its audit tags (autoscale action: from: to: reason:, max_count from: to:, count from: to:)",
		len(bad) == 0, "%d entries checked%s", n, listed(bad))
}

// FactAuditOnce: the audit's changes form one chain (each entry's from: is
// the previous entry's to:, so no change is missing or written twice), and
// every sample's count is the chain's count at some time since the previous
// sample (± clockSlack).
func FactAuditOnce(ch []Change, samples []observe.Sample) *reports.Fact {
	var bad []string
	for i := 1; i < len(ch); i++ {
		if ch[i].From != ch[i-1].To {
			bad = append(bad, fmt.Sprintf("%s %d->%d follows %s %d->%d", ch[i].Kind, ch[i].From, ch[i].To, ch[i-1].Kind, ch[i-1].From, ch[i-1].To))
		}
	}
	judged := 0
	var prevAt time.Time
	for _, s := range samples {
		if s.Err != "" {
			continue
		}
		from := prevAt
		prevAt = s.At
		if from.IsZero() {
			from = s.At.Add(-time.Second)
		}
		counts, known := countsBetween(ch, from.Add(-clockSlack), s.At.Add(clockSlack))
		if !known {
			continue
		}
		judged++
		if !slices.Contains(counts, s.Count) {
			bad = append(bad, fmt.Sprintf("a sample at %s read count %d, the audit says %v", s.At.Format("15:04:05.000"), s.Count, counts))
		}
	}
	return fact("every change of the count has exactly one audit entry",
		len(bad) == 0, "%d changes audited, %d samples agree with them (± %s)%s", len(ch), judged-countSample(bad), secs(clockSlack), listed(bad))
}

func countSample(bad []string) int {
	n := 0
	for _, b := range bad {
		if strings.HasPrefix(b, "a sample") {
			n++
		}
	}
	return n
}

// countsBetween returns the counts the chain shows during [from, to]; known
// is false before the first change.
func countsBetween(ch []Change, from, to time.Time) ([]int, bool) {
	cur, known := 0, false
	var out []int
	for _, c := range ch {
		if c.At.After(to) {
			break
		}
		if !c.At.After(from) {
			cur, known = c.To, true
			continue
		}
		if known && !slices.Contains(out, cur) {
			out = append(out, cur)
		}
		cur, known = c.To, true
	}
	if known && !slices.Contains(out, cur) {
		out = append(out, cur)
	}
	return out, known
}

// FactHoldsNotAudited: no workers.autoscale entry for a hold (seed: "A
// hold is not audited (it would flood the log)").
func FactHoldsNotAudited(audit []consoleclient.AuditEntry) *reports.Fact {
	n := 0
	example := ""
	for _, e := range audit {
		if e.Action != auditAutoscale || refused(e) {
			continue
		}
		a := e.Tags["action"]
		if (a != "up" && a != "down") || e.Tags["from"] == e.Tags["to"] {
			n++
			if example == "" {
				example = fmt.Sprintf(": e.g. #%d action:%s from:%s to:%s reason:%q", e.ID, a, e.Tags["from"], e.Tags["to"], e.Tags["reason"])
			}
		}
	}
	return fact("holds are not audited", n == 0, "%d workers.autoscale entries for a hold%s", n, example)
}

// FactUpSpacing: every step up comes at least the up cooldown after the
// previous change of the count for any reason (creation, forced change,
// autoscale), on the console's exact audit times. Nil without a step up.
func FactUpSpacing(cs ContractSettings, ch []Change) *reports.Fact {
	return spacing(cs, ch, "up", cs.UpCooldown)
}

// FactDownSpacing is FactUpSpacing for steps down and the down cooldown.
func FactDownSpacing(cs ContractSettings, ch []Change) *reports.Fact {
	return spacing(cs, ch, "down", cs.DownCooldown)
}

func spacing(cs ContractSettings, ch []Change, kind string, cooldown time.Duration) *reports.Fact {
	n := 0
	shortest := time.Duration(math.MaxInt64)
	var bad []string
	for i, c := range ch {
		if c.Kind != kind || i == 0 {
			continue
		}
		n++
		gap := c.At.Sub(ch[i-1].At)
		shortest = min(shortest, gap)
		if gap < cooldown-exactSlack {
			bad = append(bad, fmt.Sprintf("%s %d->%d %s after %s %d->%d", kind, c.From, c.To, secs(gap), ch[i-1].Kind, ch[i-1].From, ch[i-1].To))
		}
	}
	if n == 0 {
		return nil
	}
	return fact(fmt.Sprintf("no step %s within the %s cooldown (%s) of the last change of the count", kind, kind, secs(cooldown)),
		len(bad) == 0, "%d steps %s, the closest %s after the previous change (console's audit times; settings from %s)%s",
		n, kind, secs(shortest), cs.Source, listed(bad))
}

// loadAt returns the load window running at t, if any.
func loadAt(tr Trace, t time.Time) (LoadWindow, bool) {
	for _, l := range tr.Loads {
		if !t.Before(l.Start) && (l.End.IsZero() || !t.After(l.End)) {
			return l, true
		}
	}
	return LoadWindow{}, false
}

// readyBefore is the ready count of the last good sample before t (0 when none).
func readyBefore(samples []observe.Sample, t time.Time) int {
	r := 0
	for _, s := range samples {
		if s.Err == "" && s.At.Before(t) {
			r = s.Ready
		}
	}
	return r
}

// rateBefore estimates the calls per second the load made in the scheduler
// interval before t, the window an autoscaler's rate covers (its previous
// round's scrape to this one's): the ok calls of each second of the load
// weighted by its overlap with [t-interval, t] (calls spread evenly within a
// second), over the interval. Seconds before the load's start count as
// none, as they do for the autoscaler. ok is false for an interval <= 0 or
// a load with no second yet.
func rateBefore(l LoadWindow, t time.Time, interval time.Duration) (float64, bool) {
	if interval <= 0 || len(l.OK) == 0 {
		return 0, false
	}
	from := t.Add(-interval)
	calls := 0.0
	for k, n := range l.OK {
		s := l.Start.Add(time.Duration(k) * time.Second)
		e := s.Add(time.Second)
		lo, hi := max(s.UnixNano(), from.UnixNano()), min(e.UnixNano(), t.UnixNano())
		if hi > lo {
			calls += float64(n) * float64(hi-lo) / float64(time.Second)
		}
	}
	return calls / interval.Seconds(), true
}

// FactFirstUpProportional: under load the first step up goes straight to
// the proportional target, min(max, ceil(ready × max(mean / mean-up,
// rate per worker / target rate))), at least +1; not +1 at a time. The
// load the autoscaler saw is estimated from the harness's own: the mean
// in-flight is VUs over ready × the in-flight limit (at most 100 %), the rate
// the ok calls per second in the interval before the step over the ready
// workers (rateBefore); the estimates may read 10 % (mean) and 20 % (rate)
// high. Nil when no step up came under load.
func FactFirstUpProportional(cs ContractSettings, tr Trace, ch []Change) *reports.Fact {
	for _, c := range ch {
		if c.Kind != "up" {
			continue
		}
		p, ok := proportionalTarget(cs, tr, c)
		if !ok {
			return nil
		}
		return fact("the first step up under load goes straight to the proportional target, not +1",
			c.To >= p.want, "up %d->%d %s into the load; target at least %d = min(max %d, ceil(%d ready × max(%.0f%% mean in-flight / %.0f%%, %.0f calls/s per worker / %g))) from the harness's load, allowing it to read 10%%/20%% high (settings from %s)",
			c.From, c.To, secs(c.At.Sub(p.load.Start)), p.want, tr.Max, p.ready, p.mean*100, cs.MeanUpFraction*100, p.perWorker, cs.TargetRPS, cs.Source)
	}
	return nil
}

// proportional is the step up the harness's load asked for at a change.
type proportional struct {
	load      LoadWindow
	ready     int
	mean      float64 // the mean in-flight share, 0..1
	perWorker float64 // ok calls per second per ready worker over the interval before the step
	want      int     // the proportional target, read leniently (see FactFirstUpProportional)
}

// proportionalTarget estimates the proportional target of step up c from the
// harness's own load; ok is false when c came under no load or a load not
// far above the thresholds (nothing to size).
func proportionalTarget(cs ContractSettings, tr Trace, c Change) (proportional, bool) {
	l, ok := loadAt(tr, c.At)
	if !ok {
		return proportional{}, false
	}
	ready := max(1, min(readyBefore(tr.Samples, c.At), c.From))
	mean := min(1, float64(l.VUs)/float64(ready*max(cs.MaxInflight, 1)))
	if mean < cs.MeanUpFraction || cs.MeanUpFraction <= 0 || cs.TargetRPS <= 0 {
		return proportional{}, false
	}
	rate, hasRate := rateBefore(l, c.At, cs.Interval)
	perWorker := rate / float64(ready)
	f := meanSlack * mean / cs.MeanUpFraction
	if hasRate {
		f = max(f, rateSlack*perWorker/cs.TargetRPS)
	}
	want := min(tr.Max, max(c.From+1, int(math.Ceil(float64(ready)*f-1e-9))))
	return proportional{load: l, ready: ready, mean: mean, perWorker: perWorker, want: want}, true
}

// FactTimeToMax: under a load that starts below the max, the count reaches
// the max (the console's decision time) no later than the up cooldown still
// to run at the load's start + one scheduler interval + one sample (Slack)
// for the round's own scrape and the scheduler's jitter. When the first step
// up was all the load it saw asked for but short of the max (the
// proportional target early in the load, before the console had a rate of
// it), the max is due one up cooldown + one interval + Slack after that
// step instead. The workers' ready time is reported beside it (from the 1 s
// samples). Nil when the load started at the max or is too small to ask for
// it (fewer VUs than max × in-flight limit × mean-up).
func FactTimeToMax(cs ContractSettings, tr Trace, ch []Change) *reports.Fact {
	if len(tr.Loads) == 0 || tr.Max < 2 {
		return nil
	}
	l := tr.Loads[0]
	// Only a load far above the thresholds asks for the max: one that would
	// keep max workers at the mean-up threshold.
	if float64(l.VUs) < float64(tr.Max*max(cs.MaxInflight, 1))*cs.MeanUpFraction {
		return nil
	}
	var last *Change
	for i := range ch {
		if !ch[i].At.After(l.Start) {
			last = &ch[i]
		}
	}
	if last == nil || last.To >= tr.Max {
		return nil
	}
	left := max(0, last.At.Add(cs.UpCooldown).Sub(l.Start))
	bound := left + cs.Interval + cs.Slack
	name := fmt.Sprintf("count reaches %d within the up cooldown left + one scheduler interval of the load's start", tr.Max)
	var first *Change // the first step up under the load, when it fell short of the max
	for i, c := range ch {
		if c.At.After(l.Start) && c.Kind == "up" && c.To < tr.Max && first == nil {
			first = &ch[i]
			// A first step that was as big as the load it saw asked for, but
			// short of the max (early in the load, before the console had a
			// calls-per-second rate of it, the in-flight mean alone, capped
			// by the limit, asks for at most twice the ready workers): the
			// max may take one more step, due one up cooldown + one interval
			// after the first.
			if p, ok := proportionalTarget(cs, tr, c); ok && p.want < tr.Max && c.To >= p.want {
				bound = c.At.Sub(l.Start) + cs.UpCooldown + cs.Interval + cs.Slack
				name = fmt.Sprintf("count reaches %d within the up cooldown left + one scheduler interval of the load's start (one more step when the first was all the load asked for yet)", tr.Max)
			}
		}
		if c.At.After(l.Start) && c.Kind == "up" && c.To >= tr.Max {
			took := c.At.Sub(l.Start)
			if first != nil && bound > left+cs.Interval+cs.Slack {
				return fact(name, took <= bound, "decided %s into the load, after a first step up %d->%d at %s, all the load it saw asked for (the proportional target then); bound %s = %s + %s up cooldown + %s interval + %s slack (settings from %s)",
					secs(took), first.From, first.To, secs(first.At.Sub(l.Start)), secs(bound), secs(first.At.Sub(l.Start)), secs(cs.UpCooldown), secs(cs.Interval), secs(cs.Slack), cs.Source)
			}
			ready := "not all ready in the samples"
			for _, s := range tr.Samples {
				if s.Err == "" && !s.At.Before(c.At) && s.Ready >= tr.Max {
					ready = fmt.Sprintf("all %d ready %s after the decision (1 s samples)", tr.Max, secs(s.At.Sub(c.At)))
					break
				}
			}
			return fact(name, took <= bound, "decided %s into the load, bound %s = %s cooldown left + %s interval + %s slack; %s (settings from %s)",
				secs(took), secs(bound), secs(left), secs(cs.Interval), secs(cs.Slack), ready, cs.Source)
		}
	}
	end := tr.End
	if !l.End.IsZero() {
		end = l.End
	}
	if end.Sub(l.Start) <= bound {
		return nil // the load ended before the bound: nothing to judge
	}
	return fact(name, false, "not at %d after %s of load, bound %s (settings from %s)", tr.Max, secs(end.Sub(l.Start)), secs(bound), cs.Source)
}

// FactDownByOne: every step down by the autoscaler is exactly -1 (only a
// forced change may drop the count further). Nil without a step down.
func FactDownByOne(ch []Change) *reports.Fact {
	n := 0
	var bad []string
	for _, c := range ch {
		if c.Kind != "down" {
			continue
		}
		n++
		if c.From-c.To != 1 {
			bad = append(bad, fmt.Sprintf("down %d->%d", c.From, c.To))
		}
	}
	if n == 0 {
		return nil
	}
	return fact("every step down is exactly one worker", len(bad) == 0, "%d steps down (audit from:/to:)%s", n, listed(bad))
}

// lastLoadEndBefore is the latest load end at or before t (zero when none).
func lastLoadEndBefore(tr Trace, t time.Time) time.Time {
	var out time.Time
	for _, l := range tr.Loads {
		if !l.End.IsZero() && !l.End.After(t) && l.End.After(out) {
			out = l.End
		}
	}
	return out
}

// FactLowRounds: no step down before LowRounds low rounds in a row. A
// round is low on the workers' in-flight alone (every worker ready and
// under LowFraction of its limit), so under a load of short calls the low
// rounds can begin before the load ends. When the console reports its
// step rounds, each step down is matched to its round and the harness
// counts, from the rounds' own inputs (each checked against the workers'
// /metrics by FactStepWorkers), the low rounds in a row that end with it;
// a change of the count between two rounds ends the run. Otherwise (no
// rounds, a gap in the recording, the low fraction unknown) the step down
// comes no earlier than LowRounds-1 scheduler intervals after the later of
// the load's end and the last change, less a quarter interval for the
// rounds' jitter: a bound that holds only while the load keeps a worker at
// or over the low fraction. Nil without a step down after a load.
func FactLowRounds(cs ContractSettings, tr Trace, ch []Change) *reports.Fact {
	need := time.Duration(max(cs.LowRounds-1, 0)) * cs.Interval
	bound := need - cs.Interval/4
	n, counted := 0, 0
	shortest := time.Duration(math.MaxInt64)
	var bad []string
	for i, c := range ch {
		if c.Kind != "down" || i == 0 {
			continue
		}
		end := lastLoadEndBefore(tr, c.At)
		if end.IsZero() {
			continue
		}
		n++
		if low, ok := lowRoundsBefore(cs, tr, ch, c); ok {
			counted++
			if low < cs.LowRounds {
				bad = append(bad, fmt.Sprintf("down %d->%d after %d low rounds in a row (by the rounds' own inputs)", c.From, c.To, low))
			}
			continue
		}
		anchor, what := end, "the load's end"
		if ch[i-1].At.After(anchor) {
			anchor, what = ch[i-1].At, fmt.Sprintf("%s %d->%d", ch[i-1].Kind, ch[i-1].From, ch[i-1].To)
		}
		gap := c.At.Sub(anchor)
		shortest = min(shortest, gap)
		if gap < bound {
			bad = append(bad, fmt.Sprintf("down %d->%d %s after %s", c.From, c.To, secs(gap), what))
		}
	}
	if n == 0 {
		return nil
	}
	how := fmt.Sprintf("%d counted from the console's step rounds (a round is low when every worker is ready and under %g %% of its limit)", counted, cs.LowFraction*100)
	if timed := n - counted; timed > 0 {
		how += fmt.Sprintf(", %d timed: the earliest %s after the load's end or the last change, allowed from %s (%d intervals of %s less a quarter)",
			timed, secs(shortest), secs(bound), max(cs.LowRounds-1, 0), secs(cs.Interval))
	}
	return fact(fmt.Sprintf("no step down before %d low rounds in a row", cs.LowRounds), len(bad) == 0,
		"%d steps down: %s; settings from %s%s", n, how, cs.Source, listed(bad))
}

// lowRoundsBefore counts the low rounds in a row that end with the round
// of step down c (its round: the same instant and decision). ok is false
// when the rounds cannot tell: no round of c, the low fraction unknown, or
// the run reaches a gap in the recording or its first round before it
// reaches LowRounds.
func lowRoundsBefore(cs ContractSettings, tr Trace, ch []Change, c Change) (int, bool) {
	if cs.LowFraction <= 0 || len(tr.Rounds) == 0 {
		return 0, false
	}
	low := exactRat(cs.LowFraction)
	at := slices.IndexFunc(tr.Rounds, func(rd consoleclient.StepRound) bool {
		return near(rd.At, c.At) && rd.Action == "down" && rd.From == c.From && rd.To == c.To
	})
	if at < 0 {
		return 0, false
	}
	n := 0
	for i := at; i >= 0 && n < cs.LowRounds; i-- {
		if !StepRoundLow(low, tr.Rounds[i]) {
			return n, true
		}
		n++
		if n >= cs.LowRounds {
			break
		}
		if i == 0 || tr.RoundGaps[i] {
			return n, false
		}
		prev := tr.Rounds[i-1]
		// prev changed nothing (below), so a change stamped after its instant,
		// however close, came after it (see tookEffectBefore).
		if slices.ContainsFunc(ch, func(x Change) bool {
			return x.At.After(prev.At) && x.At.Before(tr.Rounds[i].At)
		}) {
			return n, true // a change of the count between the rounds ends the run
		}
		if prev.Action != "hold" {
			return n, true // the round before changed the count
		}
	}
	return n, true
}

// FactNoLinger: once a step down is allowed (the low rounds done, the down
// cooldown over) it comes within one scheduler interval, so an idle zone
// does not linger above 1. After the load's end, from each change P the
// next step down is due by max(P + down cooldown + 1 interval,
// max(P, load end, every worker ready again) + LowRounds intervals), plus
// one sample (Slack) for the round's own scrape (a sample with fewer ready
// workers than the count restarts the low rounds); a zone still above 1
// past that at the end of the observation lingered too. Nil when no load
// ended above a count of 1.
func FactNoLinger(cs ContractSettings, tr Trace, ch []Change) *reports.Fact {
	var end time.Time
	for _, l := range tr.Loads {
		if !l.End.IsZero() && l.End.After(end) {
			end = l.End
		}
	}
	if end.IsZero() {
		return nil
	}
	// A worker not ready (down, starting, frozen) blocks a step down and
	// restarts the low rounds: the low rounds count from the first sample
	// that shows every worker ready again.
	readyAgain := func(p, until time.Time) time.Time {
		var out time.Time
		blocked := false
		for _, s := range tr.Samples {
			if s.Err != "" || !s.At.After(p) || s.At.After(until) {
				continue
			}
			switch {
			case s.Ready < s.Count:
				blocked = true
			case blocked:
				out, blocked = s.At, false
			}
		}
		if blocked {
			return until // still not ready at the end of the window
		}
		return out
	}
	due := func(p, until time.Time) time.Time {
		a := p.Add(cs.DownCooldown + cs.Interval)
		b := p
		if end.After(b) {
			b = end
		}
		if r := readyAgain(p, until); r.After(b) {
			b = r
		}
		b = b.Add(time.Duration(cs.LowRounds) * cs.Interval)
		if b.After(a) {
			a = b
		}
		return a.Add(cs.Slack)
	}
	// The change in force at the load's end, then every change after it.
	var prev *Change
	var after []Change
	for i := range ch {
		if !ch[i].At.After(end) {
			prev = &ch[i]
		} else {
			after = append(after, ch[i])
		}
	}
	if prev == nil {
		return nil
	}
	judged := 0
	var bad []string
	worst := time.Duration(math.MinInt64)
	p := *prev
	for _, c := range after {
		if p.To <= 1 {
			break
		}
		if c.Kind == "down" {
			judged++
			late := c.At.Sub(due(p.At, c.At))
			worst = max(worst, late)
			if late > 0 {
				bad = append(bad, fmt.Sprintf("down %d->%d came %s after it was due", c.From, c.To, secs(late)))
			}
		}
		p = c
	}
	if p.To > 1 && !tr.End.IsZero() {
		if late := tr.End.Sub(due(p.At, tr.End)); late > 0 {
			judged++
			bad = append(bad, fmt.Sprintf("still at %d %s after a step down was due", p.To, secs(late)))
		}
	}
	if judged == 0 {
		return nil
	}
	detail := fmt.Sprintf("%d steps down judged", judged)
	if worst > time.Duration(math.MinInt64) && worst <= 0 {
		detail += fmt.Sprintf(", each at least %s before it was due", secs(-worst))
	}
	return fact("once a step down is allowed it comes within one scheduler interval (no lingering)", len(bad) == 0,
		"%s; due by max(last change + %s cooldown + %s, the later of load end, last change and all workers ready + %d intervals) + %s slack (settings from %s)%s",
		detail, secs(cs.DownCooldown), secs(cs.Interval), cs.LowRounds, secs(cs.Slack), cs.Source, listed(bad))
}

// FactLoweredMaxInRequest: a max lowered under the count takes effect in the
// request itself: the PUT's answer and a GET right after it show count <= the
// new max, before any scheduler round could bring it down.
func FactLoweredMaxInRequest(l MaxLowering) *reports.Fact {
	ok := l.PutCount >= 0 && l.PutCount <= l.To && l.GetCount >= 0 && l.GetCount <= l.To
	return fact(fmt.Sprintf("a lowered max applies in the request: the PUT's answer and a GET right after show count <= %d", l.To),
		ok, "PUT answered count %s, the GET right after count %s%s", countStr(l.PutCount), countStr(l.GetCount), suffix(l.Detail))
}

func countStr(n int) string {
	if n < 0 {
		return "unreadable"
	}
	return strconv.Itoa(n)
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

// listed renders up to five problems after a detail.
func listed(bad []string) string {
	if len(bad) == 0 {
		return ""
	}
	const show = 5
	more := ""
	if len(bad) > show {
		more = fmt.Sprintf("; and %d more", len(bad)-show)
		bad = bad[:show]
	}
	return ": " + strings.Join(bad, "; ") + more
}

// WorkerPressure is what one worker says of its back-pressure on its own
// /metrics: its in-flight limit, the most calls it held at once since it
// started (its high-water mark) and the calls it refused with 429.
type WorkerPressure struct {
	ID                        string
	Limit, HighWater, Refused float64
}

// FactBackPressureAtLimit: a worker holds at most its in-flight limit at
// once and refuses with 429 only at it (Ramen 0.7.5's autoscaling notes:
// RAMEN_MAX_INFLIGHT, "a worker at its limit answers 429"). A worker fails
// when its high-water mark is over its limit, or when it refused calls but
// never held its limit. ws with no worker fails: nothing was read.
func FactBackPressureAtLimit(ws []WorkerPressure) reports.Fact {
	var bad, per []string
	for _, w := range ws {
		per = append(per, fmt.Sprintf("%s held at most %.0f of %.0f, refused %.0f", w.ID, w.HighWater, w.Limit, w.Refused))
		switch {
		case w.Limit <= 0:
			bad = append(bad, fmt.Sprintf("%s reports no in-flight limit", w.ID))
		case w.HighWater > w.Limit:
			bad = append(bad, fmt.Sprintf("%s held %.0f calls at once, over its limit %.0f", w.ID, w.HighWater, w.Limit))
		case w.Refused > 0 && w.HighWater < w.Limit:
			bad = append(bad, fmt.Sprintf("%s answered 429 to %.0f calls but never held more than %.0f of its limit %.0f", w.ID, w.Refused, w.HighWater, w.Limit))
		}
	}
	if len(ws) == 0 {
		bad = append(bad, "no worker was read")
	}
	return *fact(factBackPressure, len(bad) == 0, "%d workers, from their own /metrics (%s, %s, %s): %s%s",
		len(ws), metricWorkerHighWater, metricWorkerLimit, metricWorkerRefused, strings.Join(per, "; "), listed(bad))
}
