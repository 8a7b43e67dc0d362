package scenarios

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/observe"
)

// KindHPARound is the results record of one query round of an hpa zone as
// the console reported it (HPARoundRecord). Readers that do not know it
// skip it.
const KindHPARound = "hpa_round"

// HPARoundRecord is one "hpa_round" record: at T seconds from the
// scenario's start the console's query read Value (nil: Error) over Pods
// pods and decided Action From -> To; Recommendation is the harness's
// recomputation of the round's recommendation (-1 when the metric failed).
type HPARoundRecord struct {
	Scenario       string                    `json:"scenario"`
	Zone           string                    `json:"zone"`
	T              float64                   `json:"t"`
	Round          consoleclient.PolicyRound `json:"round"`
	Recommendation int                       `json:"recommendation"`
	WithinTol      bool                      `json:"within_tolerance"`
}

// roundRecorder polls a zone's policy status and keeps every round the
// console reports, oldest first: an hpa zone's query rounds
// (PolicyStatus.Rounds) or a step zone's rounds (PolicyView.StepRounds; the
// console keeps the last 64 of either, so a poll every sample interval never
// misses one on a scheduler of 1 s or more). A poll that finds the oldest
// kept step round newer than the last one recorded marks a gap: the ring
// turned over or the console restarted, and rounds may be missing there.
type roundRecorder struct {
	s     *Scope
	rules HPARules

	mu     sync.Mutex
	rounds []consoleclient.PolicyRound
	steps  []consoleclient.StepRound
	gaps   map[int]bool // index into steps: rounds may be missing before it
	polls  int
	failed int
}

// run polls every interval until ctx ends, and once more after.
func (r *roundRecorder) run(ctx context.Context, interval time.Duration) {
	observe.Every(ctx, interval, func() bool { r.pollOnce(ctx); return true })
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r.pollOnce(fctx)
}

func (r *roundRecorder) pollOnce(ctx context.Context) {
	e := r.s.env
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	v, st, err := e.Console.GetPolicy(qctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, r.s.Zone)
	cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.polls++
	if err != nil || st != http.StatusOK {
		r.failed++
		return
	}
	r.addSteps(v.StepRounds)
	if v.Status == nil {
		return
	}
	for _, rd := range NewRounds(r.rounds, v.Status.Rounds) {
		r.rounds = append(r.rounds, rd)
		rec := HPARoundRecord{Scenario: r.s.Name, Zone: r.s.Zone, T: r.s.Since(rd.At), Round: rd, Recommendation: -1}
		if x, ok := r.rules.recommend(rd); ok {
			rec.Recommendation, rec.WithinTol = x.Rec, x.Within
		}
		e.write(KindHPARound, rec)
	}
}

// NewRounds returns the rounds of kept (a policy status's last rounds,
// oldest first) that are newer than the last of have.
func NewRounds(have, kept []consoleclient.PolicyRound) []consoleclient.PolicyRound {
	var last time.Time
	if n := len(have); n > 0 {
		last = have[n-1].At
	}
	i := 0
	for i < len(kept) && !kept[i].At.After(last) {
		i++
	}
	return kept[i:]
}

// addSteps records the step rounds newer than the last recorded one. Call
// with r.mu held.
func (r *roundRecorder) addSteps(kept []consoleclient.StepRound) {
	var last time.Time
	if n := len(r.steps); n > 0 {
		last = r.steps[n-1].At
	}
	for i, rd := range kept {
		if !rd.At.After(last) {
			continue
		}
		if i == 0 && len(r.steps) > 0 {
			// Every kept round is new: the console's ring turned over
			// since the last poll, or the console restarted.
			if r.gaps == nil {
				r.gaps = map[int]bool{}
			}
			r.gaps[len(r.steps)] = true
		}
		r.steps = append(r.steps, rd)
	}
}

// snapshot returns the rounds so far and the polls' counts.
func (r *roundRecorder) snapshot() (rounds []consoleclient.PolicyRound, polls, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]consoleclient.PolicyRound(nil), r.rounds...), r.polls, r.failed
}

// stepSnapshot returns the step rounds so far and where rounds may be
// missing.
func (r *roundRecorder) stepSnapshot() (rounds []consoleclient.StepRound, gaps map[int]bool, polls, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]consoleclient.StepRound(nil), r.steps...), maps.Clone(r.gaps), r.polls, r.failed
}

// startRounds starts recording the scenario zone's query rounds; stop ends
// the recording (after a last poll) and returns the rounds. nil when the
// zone is not on the hpa policy.
func (s *Scope) startRounds(ctx context.Context) (*roundRecorder, func() []consoleclient.PolicyRound) {
	rules, ok := HPARulesOf(s.policy)
	if !ok {
		return nil, func() []consoleclient.PolicyRound { return nil }
	}
	rec := &roundRecorder{s: s, rules: rules}
	stop := goUntilStopped(ctx, func(ctx context.Context) { rec.run(ctx, s.env.Profile.SampleInterval) })
	return rec, func() []consoleclient.PolicyRound {
		stop()
		rounds, _, _ := rec.snapshot()
		return rounds
	}
}

// judgeHPA adds the hpa facts (hpafacts.go) for the scenario's zone from
// its recorded rounds and its audit trail.
func (s *Scope) judgeHPA(ctx context.Context, rec *roundRecorder) {
	if rec == nil {
		return
	}
	rounds, polls, failed := rec.snapshot()
	judgeHPARounds(ctx, s, rec.rules, rounds, polls, failed, s.Start)
}

// judgeHPARounds adds the hpa facts on w from rounds (polls reads of the
// zone's policy status, failed of them failed) and the zone's audit
// entries from since on (a zone the simulator's earlier scenarios used has
// older ones, judged there).
func judgeHPARounds(ctx context.Context, w World, rules HPARules, rounds []consoleclient.PolicyRound, polls, failed int, since time.Time) {
	if !w.Check("the console's query rounds recorded", len(rounds) > 0 && failed*10 <= polls,
		"%d rounds from %d reads of the zone's policy status, %d failed", len(rounds), polls, failed) {
		return
	}
	entries, err := w.AuditTrail(ctx)
	if !w.Check("the zone's audit trail is readable (hpa facts)", err == nil, "%d entries%s", len(entries), errSuffix(err)) {
		return
	}
	entries = slices.DeleteFunc(entries, func(en consoleclient.AuditEntry) bool { return en.At.Before(since) })
	for _, f := range JudgeHPA(rules, rounds, entries, since) {
		record(w, f)
	}
}
