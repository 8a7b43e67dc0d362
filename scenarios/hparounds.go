package scenarios

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
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

// roundRecorder polls an hpa zone's policy status and keeps every query
// round the console reports (its status keeps the last 64, so a poll every
// sample interval never misses one), oldest first.
type roundRecorder struct {
	s     *Scope
	rules HPARules

	mu     sync.Mutex
	rounds []consoleclient.PolicyRound
	polls  int
	failed int
}

// run polls every interval until ctx ends, and once more after.
func (r *roundRecorder) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		r.pollOnce(ctx)
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			r.pollOnce(fctx)
			cancel()
			return
		case <-t.C:
		}
	}
}

func (r *roundRecorder) pollOnce(ctx context.Context) {
	e := r.s.env
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	v, st, err := e.Console.GetPolicy(qctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, r.s.Zone)
	cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.polls++
	if err != nil || st != http.StatusOK || v.Status == nil {
		r.failed++
		return
	}
	var last time.Time
	if n := len(r.rounds); n > 0 {
		last = r.rounds[n-1].At
	}
	for _, rd := range v.Status.Rounds {
		if !rd.At.After(last) {
			continue
		}
		r.rounds = append(r.rounds, rd)
		rec := HPARoundRecord{Scenario: r.s.Name, Zone: r.s.Zone, T: r.s.Since(rd.At), Round: rd, Recommendation: -1}
		if x, ok := r.rules.recommend(rd); ok {
			rec.Recommendation, rec.WithinTol = x.Rec, x.Within
		}
		e.write(KindHPARound, rec)
	}
}

// snapshot returns the rounds so far and the polls' counts.
func (r *roundRecorder) snapshot() (rounds []consoleclient.PolicyRound, polls, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]consoleclient.PolicyRound(nil), r.rounds...), r.polls, r.failed
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
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); rec.run(rctx, s.env.Profile.SampleInterval) }()
	var once sync.Once
	return rec, func() []consoleclient.PolicyRound {
		once.Do(func() { cancel(); <-done })
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
	if !s.Check("the console's query rounds recorded", len(rounds) > 0 && failed*10 <= polls,
		"%d rounds from %d reads of the zone's policy status, %d failed", len(rounds), polls, failed) {
		return
	}
	entries, err := s.audit(ctx)
	if !s.Check("the zone's audit trail is readable (hpa facts)", err == nil, "%d entries%s", len(entries), errDetail(err)) {
		return
	}
	for _, f := range JudgeHPA(rec.rules, rounds, entries, s.Start) {
		s.Check(f.Name, f.Passed, "%s", f.Detail)
	}
}

func errDetail(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}
