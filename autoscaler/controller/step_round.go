package controller

// The step policy's rounds, kept so a harness can judge every decision and
// not only where the count ends up: for each step zone the controller keeps
// its last api.MaxPolicyRounds rounds (as PolicyStatus.Rounds does for an hpa
// zone) with everything the policy read (each worker's sample and the
// previous sample its rate is taken over, the zone's count, max, cooldown
// clock and low streak) and what the round decided, after every rule of
// the controller (the bounds check, the planted faults of the self-test).
// GET …/policy shows them (PolicyView.StepRounds).

import (
	"slices"
	"sync"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/api"
)

// StepRound and StepRoundWorker are the API's (autoscaler/api).
type (
	StepRound       = api.StepRound
	StepRoundWorker = api.StepRoundWorker
)

// stepRounds is the last rounds of every step zone. mu guards the map.
type stepRounds struct {
	mu    sync.Mutex
	zones map[string][]StepRound
}

// record keeps r as the zone's newest round, at most api.MaxPolicyRounds.
func (s *stepRounds) record(group, zone string, r StepRound) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zones == nil {
		s.zones = map[string][]StepRound{}
	}
	k := key(group, zone)
	rs := s.zones[k]
	if len(rs) >= api.MaxPolicyRounds {
		rs = rs[len(rs)-api.MaxPolicyRounds+1:]
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
		r.Workers[i].StepRoundSample = roundSample(w)
		if p, ok := st.Prev[w.ID]; ok {
			ps := roundSample(p)
			r.Workers[i].Prev = &ps
		}
	}
	return r
}

func roundSample(w autoscaler.WorkerSample) api.StepRoundSample {
	return api.StepRoundSample{ID: w.ID, Reachable: w.Reachable, Ready: w.Ready, Starting: w.Starting, Canary: w.Canary,
		InFlight: w.InFlight, Limit: w.Limit, CallsTotal: w.CallsTotal, SampledAt: w.SampledAt, Created: w.Created, Down: w.Down}
}
