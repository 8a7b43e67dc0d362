package controller

// The step policy's rounds, kept so a harness can judge every decision and
// not only where the count ends up: for each step zone the controller keeps
// its last MaxPolicyRounds rounds (as PolicyStatus.Rounds does for an hpa
// zone) with everything the policy read (each worker's sample and the
// previous sample its rate is taken over, the zone's count, max, cooldown
// clock and low streak) and what the round decided, after every rule of
// the controller (the bounds check, the planted faults of the self-test).
// GET …/policy shows them (PolicyView.StepRounds).

import (
	"slices"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
)

// StepRound is one round of a step zone: its inputs and its decision.
type StepRound struct {
	// At is the round's time: the time its cooldowns and startup grace are
	// measured at, its decision's, and (when the count changed) its audit
	// entry's.
	At time.Time `json:"at"`
	// Actor is who ran the round: "scheduler" or the API key's name (a
	// rebalance).
	Actor string `json:"actor"`
	// Count, Max and LastChange are the zone's state the round read;
	// LastChange (zero: never changed) is the clock both cooldowns run from.
	Count      int       `json:"count"`
	Max        int       `json:"max_count"`
	LastChange time.Time `json:"last_change,omitzero"`
	// LowStreak is the consecutive all-low rounds before this one, as the
	// zone carried it; LowStreakAfter is the streak the round left.
	LowStreak      int `json:"low_streak"`
	LowStreakAfter int `json:"low_streak_after"`
	// Missing is the workers the count asks for that discovery did not
	// list (autoscaler.Observation.Missing).
	Missing int `json:"missing"`
	// Workers are the listed workers' samples as the policy read them.
	Workers []StepRoundWorker `json:"workers"`
	// Action, From, To and Reason are the round's decision (hold: From ==
	// To).
	Action string `json:"action"`
	From   int    `json:"from"`
	To     int    `json:"to"`
	Reason string `json:"reason"`
}

// StepRoundWorker is one worker's sample in a round, and the sample of the
// zone's previous round its calls per second are taken over (nil: the
// previous round had no reachable sample of it, so it has no rate).
type StepRoundWorker struct {
	autoscaler.WorkerSample
	Prev *autoscaler.WorkerSample `json:"prev,omitempty"`
}

// stepRounds is the last rounds of every step zone. mu guards the map.
type stepRounds struct {
	mu    sync.Mutex
	zones map[string][]StepRound
}

// record keeps r as the zone's newest round, at most MaxPolicyRounds.
func (s *stepRounds) record(group, zone string, r StepRound) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zones == nil {
		s.zones = map[string][]StepRound{}
	}
	k := key(group, zone)
	rs := s.zones[k]
	if len(rs) >= MaxPolicyRounds {
		rs = rs[len(rs)-MaxPolicyRounds+1:]
	}
	s.zones[k] = append(slices.Clip(rs), r)
}

// get returns a copy of the zone's rounds, oldest first.
func (s *stepRounds) get(group, zone string) []StepRound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.zones[key(group, zone)])
}

// forget drops a zone's rounds (the zone was removed, or turned hpa).
func (s *stepRounds) forget(group, zone string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.zones, key(group, zone))
}

// stepRound builds the record of a step round from what the policy read
// (st, obs) and what the round decided (d, next).
func stepRound(actor string, st autoscaler.ZoneState, obs autoscaler.Observation, d autoscaler.Decision, next autoscaler.ZoneState) StepRound {
	r := StepRound{At: d.At, Actor: actor, Count: st.Count, Max: st.Max, LastChange: st.LastChange,
		LowStreak: st.LowStreak, LowStreakAfter: next.LowStreak, Missing: obs.Missing,
		Workers: make([]StepRoundWorker, len(obs.Workers)),
		Action:  string(d.Action), From: d.From, To: d.To, Reason: d.Reason}
	for i, w := range obs.Workers {
		r.Workers[i].WorkerSample = w
		if p, ok := st.Prev[w.ID]; ok {
			r.Workers[i].Prev = &p
		}
	}
	return r
}
