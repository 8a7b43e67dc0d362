package scenarios

// The step rounds judged one by one: the console's rounds (roundRecorder)
// recomputed by the oracle (steporacle.go), matched to the audit trail, and
// their inputs checked against the audit trail, the rounds before them and
// the workers' own /metrics.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
)

// The step-round facts (docs/verdicts.md, "Every step round").
const (
	FactStepRoundsDecided = "every step round decided as the step rules say (recomputed by the harness)"
	FactStepRoundsAudited = "every audited step of the count has its round"
	FactStepRoundsInputs  = "each step round's cooldown clock, low streak and previous samples agree with the audit trail and the rounds before it"
	FactStepRoundsWorkers = "each step round read its workers as their own /metrics show them"
)

// scrapeWindow is how long before it stamps a worker's sample the console
// may have read it: the reference console's scrape timeout
// (controller.DefaultScrapeTimeout).
const scrapeWindow = 2 * time.Second

// startStepRounds starts recording the scenario zone's step rounds (not
// for a zone on the hpa policy); judgeStepRounds or finish stops it.
func (s *Scope) startStepRounds(ctx context.Context) {
	if s.env.Policy == PolicyHPA || s.policy.Policy == PolicyHPA {
		return
	}
	rec := &roundRecorder{s: s}
	stop := goUntilStopped(context.WithoutCancel(ctx), func(ctx context.Context) { rec.run(ctx, s.env.Profile.SampleInterval) })
	s.mu.Lock()
	s.steps, s.stopSteps = rec, stop
	s.mu.Unlock()
}

// judgeStepRounds stops the step-round recording and adds the step-round
// facts, with audit the zone's trail.
func (s *Scope) judgeStepRounds(ctx context.Context, audit []consoleclient.AuditEntry) {
	s.mu.Lock()
	rec, stop := s.steps, s.stopSteps
	s.mu.Unlock()
	if rec == nil {
		return
	}
	stop()
	rounds, gaps, polls, failed := rec.stepSnapshot()
	if len(rounds) == 0 {
		why := fmt.Sprintf("the console reported no step round in %d reads of the zone's policy (%d failed)", polls, failed)
		if failed == 0 {
			why += ": no round ran while the scenario did (one every scheduler interval), or the console does not keep its rounds (GET …/policy step_rounds)"
		}
		s.NotApplicable(FactStepRoundsDecided, why)
		return
	}
	e := s.env
	ac, st, err := e.Console.GetAutoscaleConfig(ctx, e.Endpoints.Keys.SuperAdmin.Key)
	rules, ok := StepRulesOf(ac)
	if err != nil || st != http.StatusOK || !ok {
		s.NotApplicable(FactStepRoundsDecided, fmt.Sprintf("the step rules are unknown: GET /api/v1/config/autoscale %s", httpDetail(st, err)))
		return
	}
	for _, f := range JudgeStepRounds(rules, rounds, gaps, audit, s.Start) {
		record(s, f)
	}
	if f := FactStepWorkers(rounds, s.workerReads(), s.Start); f != nil {
		record(s, *f)
	}
}

// clockEntries are the audit entries that set a zone's cooldown clock and
// reset its low streak: every accepted workers.count entry (creation, a
// count set by hand even to the same value, a lowered max) and every
// workers.autoscale step; oldest first.
func clockEntries(audit []consoleclient.AuditEntry) []consoleclient.AuditEntry {
	var out []consoleclient.AuditEntry
	for _, e := range audit {
		if refused(e) {
			continue
		}
		if e.Action == auditCount || (e.Action == auditAutoscale && (e.Tags["action"] == "up" || e.Tags["action"] == "down")) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b consoleclient.AuditEntry) int { return a.At.Compare(b.At) })
	return out
}

// lastClock is the time of the last clock entry in the zone's state when
// the round rd read it (zero: none).
func lastClock(cl []consoleclient.AuditEntry, rd consoleclient.StepRound) time.Time {
	var last time.Time
	for _, e := range cl {
		if tookEffectBefore(e, rd) && e.At.After(last) {
			last = e.At
		}
	}
	return last
}

// ownEntry: e is the audit entry of the step rd decided (the same instant,
// the same decision).
func ownEntry(e consoleclient.AuditEntry, rd consoleclient.StepRound) bool {
	return e.Action == auditAutoscale && near(rd.At, e.At) && rd.Action == e.Tags["action"] &&
		fmt.Sprint(rd.From) == e.Tags["from"] && fmt.Sprint(rd.To) == e.Tags["to"]
}

// tookEffectBefore: the change e was in the zone's state when the round rd
// read it. The console stamps a change and a round with its clock while it
// holds the zone, so their instants order them, however close: a count set
// by hand that waited on a round lands a fraction of a millisecond after
// the round's instant, and one just before a round is read by it. Where
// the two instants are equal (times rounded in the JSON), the round's own
// cooldown clock tells: it reads the change if the change came first.
func tookEffectBefore(e consoleclient.AuditEntry, rd consoleclient.StepRound) bool {
	switch {
	case ownEntry(e, rd):
		return false
	case !e.At.Equal(rd.At):
		return e.At.Before(rd.At)
	default:
		return rd.LastChange.Equal(e.At)
	}
}

func near(a, b time.Time) bool { d := a.Sub(b); return d <= exactSlack && d >= -exactSlack }

// JudgeStepRounds recomputes each of the zone's step rounds with the rules
// and returns three facts: every decision agrees; every audited step has
// its round; each round's cooldown clock, low streak and previous samples
// agree with the audit trail and the rounds before it. gaps marks the
// rounds before which some may be missing (the oracle then takes the
// console's low streak, as it does for the first round). A round with no
// change of the count in the audit trail before it is not checked against
// the trail.
func JudgeStepRounds(r StepRules, rounds []consoleclient.StepRound, gaps map[int]bool, audit []consoleclient.AuditEntry, start time.Time) []reports.Fact {
	since := func(t time.Time) string { return fmt.Sprintf("t=%.1fs", t.Sub(start).Seconds()) }
	cl := clockEntries(audit)
	var bad, badIn []string
	counts := map[string]int{}
	streak := 0
	for i, rd := range rounds {
		continuous := i > 0 && !gaps[i]
		want := streak
		if continuous {
			prev := rounds[i-1]
			for _, c := range cl {
				if tookEffectBefore(c, rd) && !tookEffectBefore(c, prev) && !ownEntry(c, prev) {
					want = 0 // a change of the count between the rounds resets the streak
				}
			}
		}
		switch {
		case !continuous:
			want = rd.LowStreak
		case rd.LowStreak != want:
			badIn = append(badIn, fmt.Sprintf("%s: the console carried a low streak of %d, the rounds before it give %d", since(rd.At), rd.LowStreak, want))
		}
		if lc := lastClock(cl, rd); !lc.IsZero() && !near(lc, rd.LastChange) {
			badIn = append(badIn, fmt.Sprintf("%s: the cooldown clock read %s, the audit trail's last change of the count is %s",
				since(rd.At), stamp(rd.LastChange, start), stamp(lc, start)))
		}
		if continuous {
			badIn = append(badIn, prevMismatches(rounds[i-1], rd, since)...)
		}
		x := DecideStep(r, rd, want)
		streak = x.Streak
		counts[x.Action]++
		if rd.Action != x.Action || rd.To != x.To {
			bad = append(bad, fmt.Sprintf("%s (%s): the console decided %s %d -> %d (%q); the rules say %s to %d: %s; inputs: %s",
				since(rd.At), rd.Actor, rd.Action, rd.From, rd.To, rd.Reason, x.Action, x.To, x.Rule, describeRound(rd, want, start)))
		}
	}
	decided := fact(FactStepRoundsDecided, len(bad) == 0,
		"%d rounds recomputed (%d up, %d down, %d hold by the rules), %d differ%s; rules: %s",
		len(rounds), counts["up"], counts["down"], counts["hold"], len(bad), firstFew(bad), r)

	var unmatched []string
	matched := 0
	for _, e := range cl {
		if e.Action != auditAutoscale || e.At.Before(rounds[0].At.Add(-exactSlack)) {
			continue
		}
		ok := slices.ContainsFunc(rounds, func(rd consoleclient.StepRound) bool { return ownEntry(e, rd) })
		if ok {
			matched++
			continue
		}
		unmatched = append(unmatched, fmt.Sprintf("%s %s %s -> %s by %s", since(e.At), e.Tags["action"], e.Tags["from"], e.Tags["to"], e.Actor))
	}
	audited := fact(FactStepRoundsAudited, len(unmatched) == 0,
		"%d audited steps from %s on matched a round at the same instant with the same decision, %d did not%s",
		matched, since(rounds[0].At), len(unmatched), firstFew(unmatched))
	inputs := fact(FactStepRoundsInputs, len(badIn) == 0, "%d rounds (%d after a gap in the recording), %d disagree%s",
		len(rounds), len(gaps), len(badIn), firstFew(badIn))
	return []reports.Fact{*decided, *audited, *inputs}
}

// prevMismatches: each worker's previous sample in cur is the worker's
// sample in prev, the round before it (the rate is taken over one round).
func prevMismatches(prev, cur consoleclient.StepRound, since func(time.Time) string) []string {
	was := map[string]consoleclient.StepRoundSample{}
	for _, w := range prev.Workers {
		if w.Reachable {
			was[w.ID] = w.StepRoundSample
		}
	}
	var out []string
	for _, w := range cur.Workers {
		p, ok := was[w.ID]
		switch {
		case !w.Reachable || !w.Ready:
		case ok && w.Prev == nil:
			out = append(out, fmt.Sprintf("%s: worker %s has no previous sample, the round before read it", since(cur.At), w.ID))
		case ok && (!w.Prev.SampledAt.Equal(p.SampledAt) || w.Prev.CallsTotal != p.CallsTotal):
			out = append(out, fmt.Sprintf("%s: worker %s's previous sample (%d calls at %s) is not the round before's (%d at %s)",
				since(cur.At), w.ID, w.Prev.CallsTotal, since(w.Prev.SampledAt), p.CallsTotal, since(p.SampledAt)))
		case !ok && w.Prev != nil:
			out = append(out, fmt.Sprintf("%s: worker %s has a previous sample the round before did not read", since(cur.At), w.ID))
		}
	}
	return out
}

func stamp(t, start time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("t=%.3fs", t.Sub(start).Seconds())
}

// describeRound is a round's inputs in one line.
func describeRound(rd consoleclient.StepRound, streak int, start time.Time) string {
	parts := []string{fmt.Sprintf("count %d of max %d, last change %s, low streak %d before", rd.Count, rd.Max, stamp(rd.LastChange, start), streak)}
	if rd.Missing > 0 {
		parts = append(parts, fmt.Sprintf("%d missing", rd.Missing))
	}
	for _, w := range rd.Workers {
		st := "down"
		switch {
		case w.Reachable && w.Ready && w.Limit > 0:
			st = "ready"
		case w.Starting:
			st = "starting"
		}
		if w.Canary {
			st += " canary"
		}
		p := "no previous sample"
		if w.Prev != nil {
			p = fmt.Sprintf("%d calls %.3fs before", w.Prev.CallsTotal, w.SampledAt.Sub(w.Prev.SampledAt).Seconds())
		}
		parts = append(parts, fmt.Sprintf("%s %s %d/%d in flight, %d calls (%s)", w.ID, st, w.InFlight, w.Limit, w.CallsTotal, p))
	}
	return strings.Join(parts, "; ")
}

// firstFew is ": " and the first three items, "; …" when there are more.
func firstFew(items []string) string {
	if len(items) == 0 {
		return ""
	}
	s := ": " + strings.Join(items[:min(3, len(items))], " | ")
	if len(items) > 3 {
		s += fmt.Sprintf(" | … %d more", len(items)-3)
	}
	return s
}

// FactStepWorkers cross-checks the samples the rounds read against the
// harness's own reads of the same workers' /metrics (the in-flight watch,
// while a load runs; only where the platform gives worker addresses): a
// worker's in-flight limit is the one it reports; its calls counter, which
// only grows, lies between the harness's last read that ended scrapeWindow
// before the round's sample time (the console reads a worker at most that
// long before it stamps the sample) and its first read that began after
// it; its in-flight is at most the most it ever held (its high-water gauge)
// as read after. Nil when no round's sample falls between two reads of its
// worker.
func FactStepWorkers(rounds []consoleclient.StepRound, reads []workerRead, start time.Time) *reports.Fact {
	if len(reads) == 0 {
		return nil
	}
	byID := map[string][]workerRead{}
	for _, r := range reads {
		byID[r.ID] = append(byID[r.ID], r)
	}
	checked := 0
	var bad []string
	for _, rd := range rounds {
		for _, w := range rd.Workers {
			if !w.Reachable {
				continue
			}
			rs := byID[w.ID]
			var before, after *workerRead
			for i := range rs {
				if !rs[i].After.After(w.SampledAt.Add(-scrapeWindow)) {
					before = &rs[i]
				} else if after == nil && !rs[i].Before.Before(w.SampledAt) {
					after = &rs[i]
				}
			}
			if before == nil || after == nil || before.m.Calls > after.m.Calls {
				continue // not bracketed, or the worker restarted between the reads
			}
			checked++
			at := fmt.Sprintf("t=%.1fs worker %s", w.SampledAt.Sub(start).Seconds(), w.ID)
			calls := float64(w.CallsTotal)
			switch {
			case float64(w.Limit) != after.m.Limit:
				bad = append(bad, fmt.Sprintf("%s: the round read a limit of %d, the worker reports %.0f", at, w.Limit, after.m.Limit))
			case calls < before.m.Calls || calls > after.m.Calls:
				bad = append(bad, fmt.Sprintf("%s: the round read %d calls, the worker's counter read %.0f before and %.0f after", at, w.CallsTotal, before.m.Calls, after.m.Calls))
			case after.m.HasHighWater && float64(w.InFlight) > after.m.HighWater:
				bad = append(bad, fmt.Sprintf("%s: the round read %d in flight, the worker never held more than %.0f", at, w.InFlight, after.m.HighWater))
			}
		}
	}
	if checked == 0 {
		return nil
	}
	return fact(FactStepRoundsWorkers, len(bad) == 0,
		"%d worker samples of the rounds fell between two of the harness's reads of that worker's /metrics: limit equal, calls counter between the reads, in flight at most the worker's high-water; %d disagree%s",
		checked, len(bad), firstFew(bad))
}
