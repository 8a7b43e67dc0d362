package autoscaler

import (
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every expected value below is worked out by hand in the comment next to
// it, with the seed-002 defaults unless a case says otherwise: high > 80 %,
// up at a mean >= 50 %, low < 30 %, 50 calls/s per worker, 3 low rounds,
// 30 s up cooldown, 120 s down cooldown, 120 s startup grace. With the
// default limit of 32: high is > 25.6 in flight (26 and up), low is < 9.6
// (9 and under).

var (
	now     = time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)
	longAgo = now.Add(-24 * time.Hour) // a last change outside every cooldown and the startup grace
)

const base = 1_000_000 // every test worker's call total this round

// ready is a reachable, ready worker sampled at now.
func ready(id string, inFlight, limit int) WorkerSample {
	return WorkerSample{
		ID: id, Reachable: true, Ready: true, InFlight: inFlight, Limit: limit,
		CallsTotal: base, SampledAt: now, Created: now.Add(-time.Hour),
	}
}

func unreachable(id string) WorkerSample { return WorkerSample{ID: id, SampledAt: now} }

func notReady(id string, inFlight, limit int) WorkerSample {
	w := ready(id, inFlight, limit)
	w.Ready = false
	return w
}

// starting is a worker discovery lists as not ready within the startup grace;
// it does not answer yet.
func starting(id string) WorkerSample { return WorkerSample{ID: id, Starting: true, SampledAt: now} }

func created(w WorkerSample, age time.Duration) WorkerSample {
	w.Created = now.Add(-age)
	return w
}

// prevOver returns a Prev map in which each named worker of ws was sampled dt
// before now, having served calls[id] calls since.
func prevOver(dt time.Duration, calls map[string]uint64, ws ...WorkerSample) map[string]WorkerSample {
	prev := map[string]WorkerSample{}
	for _, w := range ws {
		if c, ok := calls[w.ID]; ok {
			w.CallsTotal -= c
			w.SampledAt = w.SampledAt.Add(-dt)
			prev[w.ID] = w
		}
	}
	return prev
}

// rps10 is prevOver for a round 10 s ago with each named worker at rps calls/s.
func rps10(rps map[string]uint64, ws ...WorkerSample) map[string]WorkerSample {
	calls := map[string]uint64{}
	for id, r := range rps {
		calls[id] = r * 10
	}
	return prevOver(10*time.Second, calls, ws...)
}

type stepCase struct {
	name       string
	cfg        *StepConfig // nil: DefaultStepConfig()
	st         ZoneState
	obs        Observation
	want       Decision // At is always now
	wantStreak int
}

func runStepCases(t *testing.T, cases []stepCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultStepConfig()
			if tc.cfg != nil {
				cfg = *tc.cfg
			}
			got, next := Step(cfg, tc.st, tc.obs, now)
			want := tc.want
			want.At = now
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decision\n got %+v\nwant %+v", got, want)
			}
			if next.Count != want.To || next.Max != tc.st.Max {
				t.Errorf("next count/max = %d/%d, want %d/%d", next.Count, next.Max, want.To, tc.st.Max)
			}
			wantLast := tc.st.LastChange
			if want.Action == ActionUp || want.Action == ActionDown {
				wantLast = now
			}
			if !next.LastChange.Equal(wantLast) {
				t.Errorf("next LastChange = %v, want %v", next.LastChange, wantLast)
			}
			if next.LowStreak != tc.wantStreak {
				t.Errorf("next LowStreak = %d, want %d", next.LowStreak, tc.wantStreak)
			}
		})
	}
}

func obs(ws ...WorkerSample) Observation { return Observation{Workers: ws} }

func up(from, to int, reason string) Decision {
	return Decision{Action: ActionUp, From: from, To: to, Reason: reason}
}

func hold(count int, reason string) Decision {
	return Decision{Action: ActionHold, From: count, To: count, Reason: reason}
}

func down(from int, reason string, victims ...string) Decision {
	return Decision{Action: ActionDown, From: from, To: from - 1, Reason: reason, Victims: victims}
}

// The four cases the issue spells out, round by round.

type simWorker struct {
	id        string
	inFlight  int
	rps       uint64 // calls/s served since the last round
	down      bool   // does not answer this round
	notReady  bool   // answers, not ready
	restartTo uint64 // > 0: the worker restarted and its total is now this
}

// sim runs Step round after round, every `every`, keeping each worker's call
// total the way a real worker would.
type sim struct {
	cfg     StepConfig
	st      ZoneState
	now     time.Time
	every   time.Duration
	totals  map[string]uint64
	created map[string]time.Time
}

func (s *sim) round(ws ...simWorker) Decision {
	var o Observation
	for _, w := range ws {
		s.totals[w.id] += w.rps * uint64(s.every/time.Second)
		if w.restartTo > 0 {
			s.totals[w.id] = w.restartTo
		}
		o.Workers = append(o.Workers, WorkerSample{
			ID: w.id, Reachable: !w.down, Ready: !w.down && !w.notReady,
			InFlight: w.inFlight, Limit: 32, CallsTotal: s.totals[w.id],
			SampledAt: s.now, Created: s.created[w.id],
		})
	}
	d, next := Step(s.cfg, s.st, o, s.now)
	s.st = next
	s.now = s.now.Add(s.every)
	return d
}

type simRound struct {
	repeat  int // how many identical rounds (0 means 1)
	workers []simWorker
	// expected after every one of those rounds
	action Action
	to     int
	reason string // checked on the last of the rounds; "" skips it
	streak int    // LowStreak after the last of the rounds
}

func runSim(t *testing.T, s *sim, rounds []simRound) {
	t.Helper()
	n := 0
	for i, r := range rounds {
		for k := range max(r.repeat, 1) {
			n++
			from := s.st.Count
			d := s.round(r.workers...)
			if d.Action != r.action || d.To != r.to || d.From != from {
				t.Fatalf("round %d (step %d, repeat %d): %s %d→%d (%q), want %s to %d",
					n, i, k, d.Action, d.From, d.To, d.Reason, r.action, r.to)
			}
			if k == max(r.repeat, 1)-1 {
				if r.reason != "" && d.Reason != r.reason {
					t.Errorf("round %d: reason %q, want %q", n, d.Reason, r.reason)
				}
				if s.st.LowStreak != r.streak {
					t.Errorf("round %d: LowStreak %d, want %d", n, s.st.LowStreak, r.streak)
				}
			}
		}
	}
}

func TestStepIssueCases(t *testing.T) {
	t.Run("outage never scales in; DOWN on the third all-reachable low round", func(t *testing.T) {
		// Count 4, max 6, rounds every 10 s, each worker 10 calls/s. Low is
		// under 9.6 of 32, so 4, 5 and 6 in flight are all low.
		s := &sim{
			cfg: DefaultStepConfig(), every: 10 * time.Second, now: now,
			st:     ZoneState{Count: 4, Max: 6, LastChange: longAgo},
			totals: map[string]uint64{},
			created: map[string]time.Time{ // w4 is the newest, w1 the oldest
				"w1": now.Add(-4 * time.Hour), "w2": now.Add(-3 * time.Hour),
				"w3": now.Add(-2 * time.Hour), "w4": now.Add(-time.Hour),
			},
		}
		all := []simWorker{{id: "w1", inFlight: 5, rps: 10}, {id: "w2", inFlight: 4, rps: 10},
			{id: "w3", inFlight: 6, rps: 10}, {id: "w4", inFlight: 5, rps: 10}}
		outage := []simWorker{{id: "w1", down: true}, {id: "w2", down: true},
			{id: "w3", inFlight: 4, rps: 10}, {id: "w4", inFlight: 5, rps: 10}}
		runSim(t, s, []simRound{
			// Round 1: all four low; first sample, so no rate yet. Streak 1.
			{workers: all, action: ActionHold, to: 4, streak: 1,
				reason: "4 workers low for 1 of 3 rounds"},
			// Rounds 2-7: w1, w2 do not answer: down, never low; the streak
			// resets every round.
			{repeat: 6, workers: outage, action: ActionHold, to: 4, streak: 0,
				reason: "2 of 4 workers down (w1, w2): no scale-in"},
			// Rounds 8-9: all back; w1 and w2 have no previous sample (it
			// was dropped while they were unreachable). Streak 1, then 2.
			{workers: all, action: ActionHold, to: 4, streak: 1, reason: "4 workers low for 1 of 3 rounds"},
			{workers: all, action: ActionHold, to: 4, streak: 2, reason: "4 workers low for 2 of 3 rounds"},
			// Round 10, third all-reachable low round: 3 workers would carry
			// 20/96 = 20.8 % in flight and 10 × 4 / 3 = 13.3 calls/s each.
			// Victims: w2 (4), then w1 and w4 (5 each, w4 newer), then w3 (6).
			{workers: all, action: ActionDown, to: 3, streak: 0,
				reason: "4 workers low for 3 rounds; 3 would stay under the up thresholds"},
		})
	})

	t.Run("two ready workers high, two not ready: UP to 5 by the +1 rule", func(t *testing.T) {
		// Ready: g-a-1 30/32, g-a-2 28/32, 40 calls/s each. g-a-3, g-a-4
		// answer not ready at 32/32: down, not capacity.
		// Mean 58/64 = 90.625 % → 90.625/50 = 1.8125; rate 40/50 = 0.8.
		// ceil(2 × 1.8125) = ceil(3.625) = 4 = count → count+1 = 5.
		ws := []WorkerSample{ready("g-a-1", 30, 32), ready("g-a-2", 28, 32),
			notReady("g-a-3", 32, 32), notReady("g-a-4", 32, 32)}
		runStepCases(t, []stepCase{{
			name: "step",
			st: ZoneState{Count: 4, Max: 8, LastChange: longAgo,
				Prev: rps10(map[string]uint64{"g-a-1": 40, "g-a-2": 40}, ws...)},
			obs:  obs(ws...),
			want: up(4, 5, "worker g-a-1 high: 30/32 in flight > 80%; mean in-flight 90.6% >= 50%"),
		}})
	})

	t.Run("a restart's total going backwards gives no rate, so no DOWN and no UP", func(t *testing.T) {
		// Count 2, 6/32 and 7/32 in flight (about 20 %, both low), 45 calls/s
		// each. The state starts with a low streak of 1 so that round 2, the
		// restart, is the third all-low round.
		s := &sim{
			cfg: DefaultStepConfig(), every: 10 * time.Second, now: now,
			st:      ZoneState{Count: 2, Max: 4, LastChange: longAgo, LowStreak: 1},
			totals:  map[string]uint64{"a": 98_000, "b": 50_000},
			created: map[string]time.Time{},
		}
		steady := []simWorker{{id: "a", inFlight: 6, rps: 45}, {id: "b", inFlight: 7, rps: 45}}
		restart := []simWorker{{id: "a", inFlight: 6, restartTo: 150}, {id: "b", inFlight: 7, rps: 45}}
		runSim(t, s, []simRound{
			// Round 1: a at 98,450, b at 50,450; first samples, no rate.
			{workers: steady, action: ActionHold, to: 2, streak: 2, reason: "2 workers low for 2 of 3 rounds"},
			// Round 2: a drops from 98,450 to 150: no rate for a. b: 45/s.
			// Rate per worker 45 (a taken to carry the average); one worker
			// would carry 45 × 2 / 1 = 90 ≥ 50 calls/s: no DOWN. A negative
			// rate, (150 - 98,450)/10 = -9,830, would have let it through; a
			// wrapped one would have scaled up.
			{workers: restart, action: ActionHold, to: 2, streak: 3,
				reason: "2 workers low for 3 rounds; 1 would carry 90.0 calls/s each >= 50"},
			// Rounds 3-12: a counts from 150 again; both at 45/s. Still no
			// change: 45 < 50 (no UP), 90 ≥ 50 after a DOWN (no DOWN).
			{repeat: 10, workers: steady, action: ActionHold, to: 2, streak: 13,
				reason: "2 workers low for 13 rounds; 1 would carry 90.0 calls/s each >= 50"},
		})
	})

	t.Run("ten minutes at 9/32 and 42 calls/s: no change at all", func(t *testing.T) {
		// Count 4, max 6. 9 < 9.6: every worker low; mean 36/128 = 28.1 %;
		// 42 < 50 calls/s: no UP. After a DOWN 3 workers would carry
		// 42 × 4 / 3 = 56 ≥ 50 calls/s: no DOWN. 60 rounds of 10 s.
		s := &sim{
			cfg: DefaultStepConfig(), every: 10 * time.Second, now: now,
			st:     ZoneState{Count: 4, Max: 6, LastChange: longAgo},
			totals: map[string]uint64{}, created: map[string]time.Time{},
		}
		ws := []simWorker{{id: "w1", inFlight: 9, rps: 42}, {id: "w2", inFlight: 9, rps: 42},
			{id: "w3", inFlight: 9, rps: 42}, {id: "w4", inFlight: 9, rps: 42}}
		runSim(t, s, []simRound{
			{repeat: 2, workers: ws, action: ActionHold, to: 4, streak: 2},
			{repeat: 58, workers: ws, action: ActionHold, to: 4, streak: 60,
				reason: "4 workers low for 60 rounds; 3 would carry 56.0 calls/s each >= 50"},
		})
	})
}

func TestStepOutageVictims(t *testing.T) {
	// The DOWN of the outage case names its victims: fewest in flight first,
	// ties newest first. Round 10 of that case, in one step.
	ws := []WorkerSample{
		created(ready("w1", 5, 32), 4*time.Hour), created(ready("w2", 4, 32), 3*time.Hour),
		created(ready("w3", 6, 32), 2*time.Hour), created(ready("w4", 5, 32), time.Hour),
	}
	runStepCases(t, []stepCase{{
		name: "victims",
		st:   ZoneState{Count: 4, Max: 6, LastChange: longAgo, LowStreak: 2},
		obs:  obs(ws...),
		want: down(4, "4 workers low for 3 rounds; 3 would stay under the up thresholds", "w2", "w4", "w1", "w3"),
	}})
}

func TestStepUpTriggers(t *testing.T) {
	rate := func(rps uint64, ws ...WorkerSample) map[string]WorkerSample {
		m := map[string]uint64{}
		for _, w := range ws {
			m[w.ID] = rps
		}
		return rps10(m, ws...)
	}
	low2 := []WorkerSample{ready("a", 2, 32), ready("b", 2, 32)}
	low3 := []WorkerSample{ready("a", 2, 32), ready("b", 2, 32), ready("c", 2, 32)}
	runStepCases(t, []stepCase{
		{
			// 26/32 = 81.25 % > 80 %. Mean 26/64 = 40.6 %: only the high
			// trigger. ceil(2 × 0.8125) = 2 → count+1 = 3.
			name: "high worker",
			st:   ZoneState{Count: 2, Max: 4, LastChange: longAgo},
			obs:  obs(ready("a", 26, 32), ready("b", 0, 32)),
			want: up(2, 3, "worker a high: 26/32 in flight > 80%"),
		},
		{
			// 8/10 is exactly 80 %: not over it. Mean 8/20 = 40 %. a is not
			// low (8 >= 3), so no low streak either.
			name: "exactly 80% is not high",
			st:   ZoneState{Count: 2, Max: 4, LastChange: longAgo},
			obs:  obs(ready("a", 8, 10), ready("b", 0, 10)),
			want: hold(2, "steady: mean in-flight 40.0%, no rate yet; worker a not low: 8/10 in flight >= 30%"),
		},
		{
			// The hottest worker is named: b at 31/32 over a at 27/32.
			// Mean 58/64 = 90.6 %; ceil(2 × 1.8125) = 4.
			name: "hottest worker named",
			st:   ZoneState{Count: 2, Max: 8, LastChange: longAgo},
			obs:  obs(ready("a", 27, 32), ready("b", 31, 32)),
			want: up(2, 4, "worker b high: 31/32 in flight > 80%; mean in-flight 90.6% >= 50%"),
		},
		{
			// Mean 48/96 = exactly 50 %: fires. ceil(3 × 1) = 3 = count → 4.
			name: "mean exactly 50%",
			st:   ZoneState{Count: 3, Max: 10, LastChange: longAgo},
			obs:  obs(ready("a", 16, 32), ready("b", 16, 32), ready("c", 16, 32)),
			want: up(3, 4, "mean in-flight 50.0% >= 50%"),
		},
		{
			// Mean 47/96 = 48.96 %: under 50 %, nothing high (max 17/32).
			name: "mean just under 50%",
			st:   ZoneState{Count: 3, Max: 10, LastChange: longAgo},
			obs:  obs(ready("a", 15, 32), ready("b", 16, 32), ready("c", 16, 32)),
			want: hold(3, "steady: mean in-flight 49.0%, no rate yet; worker a not low: 15/32 in flight >= 30%"),
		},
		{
			// Exact ceiling: mean 48/64 = exactly 75 %; 2 × 75/50 = 3 → 3, not 4.
			name: "exact ceiling: ready 2 × mean 75% is 3",
			st:   ZoneState{Count: 2, Max: 10, LastChange: longAgo},
			obs:  obs(ready("a", 24, 32), ready("b", 24, 32)),
			want: up(2, 3, "mean in-flight 75.0% >= 50%"),
		},
		{
			// Mean 50/64 = 78.125 %; 2 × 1.5625 = 3.125 → 4: a proportional step.
			name: "proportional mean step",
			st:   ZoneState{Count: 2, Max: 10, LastChange: longAgo},
			obs:  obs(ready("a", 25, 32), ready("b", 25, 32)),
			want: up(2, 4, "mean in-flight 78.1% >= 50%"),
		},
		{
			// 80 calls/s each; 80/50 = 1.6 beats the mean (4/64 ÷ 50 % = 0.125).
			// ceil(2 × 1.6) = ceil(3.2) = 4. Both workers are low, but the
			// change resets the streak.
			name: "rate",
			st:   ZoneState{Count: 2, Max: 10, LastChange: longAgo, Prev: rate(80, low2...)},
			obs:  obs(low2...),
			want: up(2, 4, "rate 80.0 calls/s per worker >= 50"),
		},
		{
			// 50 calls/s is exactly the target: fires. ceil(2 × 1) = 2 → 3.
			name: "rate exactly at target",
			st:   ZoneState{Count: 2, Max: 10, LastChange: longAgo, Prev: rate(50, low2...)},
			obs:  obs(low2...),
			want: up(2, 3, "rate 50.0 calls/s per worker >= 50"),
		},
		{
			// 499 calls in 10 s = 49.9 calls/s: under the target.
			name: "rate just under target",
			st: ZoneState{Count: 2, Max: 10, LastChange: longAgo,
				Prev: prevOver(10*time.Second, map[string]uint64{"a": 499, "b": 499}, low2...)},
			obs:        obs(low2...),
			want:       hold(2, "2 workers low for 1 of 3 rounds"),
			wantStreak: 1,
		},
		{
			// 2000 calls in 30 s = 200/3 calls/s each (66.67, not a finite
			// binary float). ceil(3 × (200/3) / 50) = ceil(4) = 4, not 5.
			name: "exact ceiling: rate 200/3 over 3 workers is 4",
			st: ZoneState{Count: 3, Max: 10, LastChange: longAgo,
				Prev: prevOver(30*time.Second, map[string]uint64{"a": 2000, "b": 2000, "c": 2000}, low3...)},
			obs:  obs(low3...),
			want: up(3, 4, "rate 66.7 calls/s per worker >= 50"),
		},
		{
			// Only a has a rate (100/s); b is taken to carry the average.
			// ceil(2 × 100/50) = 4.
			name: "rate per worker is the mean of the workers that have one",
			st:   ZoneState{Count: 2, Max: 10, LastChange: longAgo, Prev: rate(100, low2[0])},
			obs:  obs(low2...),
			want: up(2, 4, "rate 100.0 calls/s per worker >= 50"),
		},
		{
			// a: 60/s, b: 40/s → mean 50/s, fires. ceil(2 × 1) = 2 → 3.
			name: "rates averaged over the workers",
			st: ZoneState{Count: 2, Max: 10, LastChange: longAgo,
				Prev: rps10(map[string]uint64{"a": 60, "b": 40}, low2...)},
			obs:  obs(low2...),
			want: up(2, 3, "rate 50.0 calls/s per worker >= 50"),
		},
	})
}

func TestStepMaxAndCooldowns(t *testing.T) {
	loaded := obs(ready("a", 24, 32), ready("b", 24, 32)) // mean 75 %: UP to 3 (see the exact-ceiling case)
	lowObs := obs(ready("a", 2, 32), ready("b", 3, 32), ready("c", 4, 32))
	// lowObs after a DOWN: 9/64 = 14.1 % in flight, no rate: stays under.
	const lowDown = "3 workers low for 3 rounds; 2 would stay under the up thresholds"
	runStepCases(t, []stepCase{
		{
			// Mean 64/64 = 100 %: ceil(2 × 2) = 4, capped at the max 3.
			name: "UP capped at max",
			st:   ZoneState{Count: 2, Max: 3, LastChange: longAgo},
			obs:  obs(ready("a", 32, 32), ready("b", 32, 32)),
			want: up(2, 3, "worker a high: 32/32 in flight > 80%; mean in-flight 100.0% >= 50%"),
		},
		{
			// At max 3 with a high worker and a mean of 50/96 = 52.1 %.
			name: "at max under load: hold with the warning flag",
			st:   ZoneState{Count: 3, Max: 3, LastChange: longAgo},
			obs:  obs(ready("a", 30, 32), ready("b", 10, 32), ready("c", 10, 32)),
			want: Decision{Action: ActionHold, From: 3, To: 3, AtMaxUnderLoad: true,
				Reason: "at max 3 under load: worker a high: 30/32 in flight > 80%; mean in-flight 52.1% >= 50%"},
		},
		{
			// Count above the max (the console brings it down): no UP,
			// warning. Mean 60/64 = 93.75 %.
			name: "count above max under load",
			st:   ZoneState{Count: 5, Max: 3, LastChange: longAgo},
			obs:  obs(ready("a", 30, 32), ready("b", 30, 32)),
			want: Decision{Action: ActionHold, From: 5, To: 5, AtMaxUnderLoad: true,
				Reason: "at max 3 under load: worker a high: 30/32 in flight > 80%; mean in-flight 93.8% >= 50%"},
		},
		{
			// At max, mean 30/96 = 31.25 %: a plain hold, no warning.
			name: "at max without load",
			st:   ZoneState{Count: 3, Max: 3, LastChange: longAgo},
			obs:  obs(ready("a", 10, 32), ready("b", 10, 32), ready("c", 10, 32)),
			want: hold(3, "steady: mean in-flight 31.3%, no rate yet; worker a not low: 10/32 in flight >= 30%"),
		},
		{
			// Changed 18 s ago: 30 - 18 = 12 s of up cooldown left.
			name: "up cooldown",
			st:   ZoneState{Count: 2, Max: 10, LastChange: now.Add(-18 * time.Second)},
			obs:  loaded,
			want: hold(2, "up cooldown: 12s left; mean in-flight 75.0% >= 50%"),
		},
		{
			// 11.5 s left is shown rounded up.
			name: "up cooldown rounds the time left up",
			st:   ZoneState{Count: 2, Max: 10, LastChange: now.Add(-18500 * time.Millisecond)},
			obs:  loaded,
			want: hold(2, "up cooldown: 12s left; mean in-flight 75.0% >= 50%"),
		},
		{
			name: "up cooldown over at exactly 30 s",
			st:   ZoneState{Count: 2, Max: 10, LastChange: now.Add(-30 * time.Second)},
			obs:  loaded,
			want: up(2, 3, "mean in-flight 75.0% >= 50%"),
		},
		{
			name: "zero LastChange: no up cooldown",
			st:   ZoneState{Count: 2, Max: 10},
			obs:  loaded,
			want: up(2, 3, "mean in-flight 75.0% >= 50%"),
		},
		{
			// The down cooldown does not hold an UP: 40 s since the change.
			name: "UP 40 s after a change",
			st:   ZoneState{Count: 2, Max: 10, LastChange: now.Add(-40 * time.Second)},
			obs:  loaded,
			want: up(2, 3, "mean in-flight 75.0% >= 50%"),
		},
		{
			// Changed 80 s ago: 40 s of down cooldown left. The streak
			// still counts: 2 → 3.
			name:       "down cooldown",
			st:         ZoneState{Count: 3, Max: 5, LastChange: now.Add(-80 * time.Second), LowStreak: 2},
			obs:        lowObs,
			want:       hold(3, "down cooldown: 40s left; 3 workers low for 3 rounds"),
			wantStreak: 3,
		},
		{
			name:       "low streak keeps counting in the down cooldown",
			st:         ZoneState{Count: 3, Max: 5, LastChange: now.Add(-80 * time.Second), LowStreak: 5},
			obs:        lowObs,
			want:       hold(3, "down cooldown: 40s left; 3 workers low for 6 rounds"),
			wantStreak: 6,
		},
		{
			name: "down cooldown over at exactly 120 s",
			st:   ZoneState{Count: 3, Max: 5, LastChange: now.Add(-120 * time.Second), LowStreak: 2},
			obs:  lowObs,
			want: down(3, lowDown, "a", "b", "c"),
		},
		{
			name: "zero LastChange: no down cooldown",
			st:   ZoneState{Count: 3, Max: 5, LowStreak: 2},
			obs:  lowObs,
			want: down(3, lowDown, "a", "b", "c"),
		},
	})
}

func TestStepDown(t *testing.T) {
	cfgHigh50 := DefaultStepConfig()
	cfgHigh50.HighFraction, cfgHigh50.MeanUpFraction = 0.5, 1
	cfgRounds1 := DefaultStepConfig()
	cfgRounds1.LowRounds = 1
	low2 := []WorkerSample{ready("a", 2, 32), ready("b", 2, 32)}
	runStepCases(t, []stepCase{
		{
			// 2, 3, 4 of 32 with 10 calls/s each: 2 workers would carry
			// 9/64 = 14.1 % and 10 × 3 / 2 = 15 calls/s. Victims by in-flight.
			name: "DOWN after three low rounds",
			st: ZoneState{Count: 3, Max: 5, LastChange: longAgo, LowStreak: 2,
				Prev: rps10(map[string]uint64{"a": 10, "b": 10, "c": 10},
					ready("a", 2, 32), ready("b", 3, 32), ready("c", 4, 32))},
			obs:  obs(ready("c", 4, 32), ready("b", 3, 32), ready("a", 2, 32)),
			want: down(3, "3 workers low for 3 rounds; 2 would stay under the up thresholds", "a", "b", "c"),
		},
		{
			name:       "two low rounds are not enough",
			st:         ZoneState{Count: 3, Max: 5, LastChange: longAgo, LowStreak: 1},
			obs:        obs(ready("a", 2, 32), ready("b", 3, 32), ready("c", 4, 32)),
			want:       hold(3, "3 workers low for 2 of 3 rounds"),
			wantStreak: 2,
		},
		{
			name: "LowRounds 1: the current round is enough",
			cfg:  &cfgRounds1,
			st:   ZoneState{Count: 2, Max: 5, LastChange: longAgo},
			obs:  obs(low2...),
			want: down(2, "2 workers low for 1 round; 1 would stay under the up thresholds", "a", "b"),
		},
		{
			name:       "count 1 never goes down",
			st:         ZoneState{Count: 1, Max: 3, LastChange: longAgo, LowStreak: 7},
			obs:        obs(ready("a", 0, 32)),
			want:       hold(1, "steady: mean in-flight 0.0%, no rate yet; at the minimum of 1 worker"),
			wantStreak: 8,
		},
		{
			// 9/32 each is low, but one worker would sit at 18/32 = 56.25 %.
			name:       "one fewer would reach the mean",
			st:         ZoneState{Count: 2, Max: 4, LastChange: longAgo, LowStreak: 2},
			obs:        obs(ready("a", 9, 32), ready("b", 9, 32)),
			want:       hold(2, "2 workers low for 3 rounds; 1 would sit at mean in-flight 56.3% >= 50%"),
			wantStreak: 3,
		},
		{
			// High 50 %, mean up 100 %: one worker would carry 18 in flight,
			// over 50 % of the average limit 32 (16), though under the mean.
			name:       "one fewer would be high",
			cfg:        &cfgHigh50,
			st:         ZoneState{Count: 2, Max: 4, LastChange: longAgo, LowStreak: 2},
			obs:        obs(ready("a", 9, 32), ready("b", 9, 32)),
			want:       hold(2, "2 workers low for 3 rounds; 1 would carry 18.0 in flight each > 50% of the average limit"),
			wantStreak: 3,
		},
		{
			// 30 calls/s each; one worker would carry 30 × 2 / 1 = 60.
			name:       "one fewer would reach the target rate",
			st:         ZoneState{Count: 2, Max: 4, LastChange: longAgo, LowStreak: 2, Prev: rps10(map[string]uint64{"a": 30, "b": 30}, low2...)},
			obs:        obs(low2...),
			want:       hold(2, "2 workers low for 3 rounds; 1 would carry 60.0 calls/s each >= 50"),
			wantStreak: 3,
		},
		{
			// a has no rate this round: taken to carry b's 20/s.
			// One worker would carry 20 × 2 = 40 < 50: DOWN.
			name: "a worker without a rate is taken to carry the average",
			st:   ZoneState{Count: 2, Max: 4, LastChange: longAgo, LowStreak: 2, Prev: rps10(map[string]uint64{"b": 20}, low2...)},
			obs:  obs(low2...),
			want: down(2, "2 workers low for 3 rounds; 1 would stay under the up thresholds", "a", "b"),
		},
		{
			// LowFraction 0.3 is exactly 3/10: 3 of 10 is not under it (the
			// float64 0.3 × 10 is 3.0000000000000004, which would call it low).
			name: "exact low threshold: 3/10 is not low",
			st:   ZoneState{Count: 2, Max: 4, LastChange: longAgo, LowStreak: 2},
			obs:  obs(ready("a", 3, 10), ready("b", 0, 10)),
			want: hold(2, "steady: mean in-flight 15.0%, no rate yet; worker a not low: 3/10 in flight >= 30%"),
		},
		{
			// Victims: fewest in flight first (w2, w4 at 1; w1, w3 at 3),
			// ties newest first (w4 is newer than w2, w3 newer than w1).
			name: "victims order",
			st:   ZoneState{Count: 4, Max: 6, LastChange: longAgo, LowStreak: 2},
			obs: obs(created(ready("w1", 3, 32), 4*time.Hour), created(ready("w2", 1, 32), 3*time.Hour),
				created(ready("w3", 3, 32), time.Hour), created(ready("w4", 1, 32), 2*time.Hour)),
			want: down(4, "4 workers low for 3 rounds; 3 would stay under the up thresholds", "w4", "w2", "w3", "w1"),
		},
		{
			// A negative in-flight report counts as 0: both at 0, tie on
			// Created too, so by ID.
			name: "negative in-flight counts as zero",
			st:   ZoneState{Count: 2, Max: 4, LastChange: longAgo, LowStreak: 2},
			obs:  obs(ready("b", 0, 32), ready("a", -5, 32)),
			want: down(2, "2 workers low for 3 rounds; 1 would stay under the up thresholds", "a", "b"),
		},
		{
			// Starting flag left on a worker that is now ready: it is ready.
			name: "a ready worker still flagged starting is ready",
			st:   ZoneState{Count: 2, Max: 4, LastChange: longAgo, LowStreak: 2},
			obs:  obs(ready("a", 2, 32), func() WorkerSample { w := ready("b", 2, 32); w.Starting = true; return w }()),
			want: down(2, "2 workers low for 3 rounds; 1 would stay under the up thresholds", "a", "b"),
		},
	})
}

func TestStepDownWorkers(t *testing.T) {
	runStepCases(t, []stepCase{
		{
			name: "unreachable worker: no scale-in, streak reset",
			st:   ZoneState{Count: 3, Max: 5, LastChange: longAgo, LowStreak: 2},
			obs:  obs(ready("a", 2, 32), ready("b", 2, 32), unreachable("c")),
			want: hold(3, "1 of 3 workers down (c): no scale-in"),
		},
		{
			name: "not ready worker is down",
			st:   ZoneState{Count: 3, Max: 5, LastChange: longAgo, LowStreak: 2},
			obs:  obs(ready("a", 2, 32), ready("b", 2, 32), notReady("c", 0, 32)),
			want: hold(3, "1 of 3 workers down (c): no scale-in"),
		},
		{
			name: "limit 0 is down, never low",
			st:   ZoneState{Count: 2, Max: 5, LastChange: longAgo, LowStreak: 2},
			obs:  obs(ready("a", 0, 32), ready("b", 0, 0)),
			want: hold(2, "1 of 2 workers down (b: reports an in-flight limit of 0): no scale-in"),
		},
		{
			name: "a /metrics without the in-flight limit is down, and the reason says so",
			st:   ZoneState{Count: 2, Max: 5, LastChange: longAgo, LowStreak: 2},
			obs: obs(ready("a", 0, 32), func() WorkerSample {
				w := unreachable("b")
				w.Down = "its /metrics has no in-flight limit (scaleproof_worker_inflight_limit)"
				return w
			}()),
			want: hold(2, "1 of 2 workers down (b: its /metrics has no in-flight limit (scaleproof_worker_inflight_limit)): no scale-in"),
		},
		{
			// c reports limit 0: not capacity. Mean 40/64 = 62.5 %;
			// ceil(2 × 1.25) = 3 → count+1 = 4. Counted with the average
			// limit, the mean would be 40/96 = 41.7 %: no UP.
			name: "limit 0 is never capacity",
			st:   ZoneState{Count: 3, Max: 10, LastChange: longAgo},
			obs:  obs(ready("a", 20, 32), ready("b", 20, 32), ready("c", 0, 0)),
			want: up(3, 4, "mean in-flight 62.5% >= 50%"),
		},
		{
			// Missing past the startup grace (last change a day ago): down.
			name: "missing worker past the grace is down",
			st:   ZoneState{Count: 3, Max: 5, LastChange: longAgo, LowStreak: 2},
			obs:  Observation{Workers: []WorkerSample{ready("a", 2, 32), ready("b", 2, 32)}, Missing: 1},
			want: hold(3, "1 of 3 workers down (1 missing): no scale-in"),
		},
		{
			name: "many down workers are summarised",
			st:   ZoneState{Count: 8, Max: 8, LastChange: longAgo},
			obs: Observation{Missing: 1, Workers: []WorkerSample{ready("a", 2, 32), unreachable("b"),
				unreachable("c"), unreachable("d"), unreachable("e"), unreachable("f"), unreachable("g")}},
			want: hold(8, "7 of 8 workers down (b, c, d, e, f, 1 more, 1 missing): no scale-in"),
		},
		{
			name: "no ready worker",
			st:   ZoneState{Count: 2, Max: 5, LastChange: longAgo, LowStreak: 2},
			obs:  obs(unreachable("a"), notReady("b", 3, 32)),
			want: hold(2, "no ready worker (2 down)"),
		},
		{
			name: "no worker at all",
			st:   ZoneState{Count: 1, Max: 5, LastChange: longAgo},
			want: hold(1, "no ready worker (no worker listed)"),
		},
		{
			name: "only starting workers",
			st:   ZoneState{Count: 1, Max: 5, LastChange: now.Add(-10 * time.Second)},
			obs:  Observation{Workers: []WorkerSample{starting("a")}, Missing: 1},
			want: hold(1, "no ready worker (2 starting)"),
		},
	})
}

func TestStepStarting(t *testing.T) {
	after := now.Add(-40 * time.Second) // past the up cooldown, within the startup grace
	hot := []WorkerSample{ready("a", 30, 32), ready("b", 30, 32)}
	runStepCases(t, []stepCase{
		{
			// The first UP (2 → 4) was 40 s ago; c and d are still starting.
			// Mean 60 / (4 × 32) = 46.9 %: under 50 %. a is high, but the
			// capacity on its way will relieve it: no second UP.
			name: "starting workers block a second UP",
			st:   ZoneState{Count: 4, Max: 8, LastChange: after},
			obs:  obs(append(slices.Clone(hot), starting("c"), starting("d"))...),
			want: hold(4, "worker a high: 30/32 in flight > 80%, but 2 workers on the way"),
		},
		{
			// The same zone once the grace is over and c, d are down:
			// mean 60/64 = 93.75 %; ceil(2 × 1.875) = 4 = count → 5.
			name: "the same workers down instead of starting: UP",
			st:   ZoneState{Count: 4, Max: 8, LastChange: after},
			obs:  obs(append(slices.Clone(hot), notReady("c", 0, 32), unreachable("d"))...),
			want: up(4, 5, "worker a high: 30/32 in flight > 80%; mean in-flight 93.8% >= 50%"),
		},
		{
			name: "missing workers within the grace are starting",
			st:   ZoneState{Count: 4, Max: 8, LastChange: after},
			obs:  Observation{Workers: hot, Missing: 2},
			want: hold(4, "worker a high: 30/32 in flight > 80%, but 2 workers on the way"),
		},
		{
			// Past the grace the missing workers are down: as two cases up.
			name: "missing workers past the grace are down",
			st:   ZoneState{Count: 4, Max: 8, LastChange: now.Add(-121 * time.Second)},
			obs:  Observation{Workers: hot, Missing: 2},
			want: up(4, 5, "worker a high: 30/32 in flight > 80%; mean in-flight 93.8% >= 50%"),
		},
		{
			// Still short with c starting: mean 64/96 = 66.7 %;
			// ceil(3 × 4/3) = 4: one more, from the load.
			name: "starting capacity still short: UP from the mean",
			st:   ZoneState{Count: 3, Max: 10, LastChange: after},
			obs:  obs(ready("a", 32, 32), ready("b", 32, 32), starting("c")),
			want: up(3, 4, "mean in-flight 66.7% >= 50%"),
		},
		{
			// a serves 160 calls/s alone; b is starting. Spread over 2:
			// 80/s per worker, ceil(2 × 80/50) = ceil(3.2) = 4.
			name: "starting workers share the rate",
			st: ZoneState{Count: 2, Max: 10, LastChange: after,
				Prev: rps10(map[string]uint64{"a": 160}, ready("a", 10, 32))},
			obs:  obs(ready("a", 10, 32), starting("b")),
			want: up(2, 4, "rate 80.0 calls/s per worker >= 50"),
		},
		{
			// A starting worker that answers with calls in flight still
			// counts at zero in flight: mean 10/64, nothing high.
			name: "a starting worker counts at zero in flight",
			st:   ZoneState{Count: 2, Max: 10, LastChange: after},
			obs: obs(ready("a", 10, 32), func() WorkerSample {
				w := notReady("b", 30, 32)
				w.Starting = true
				return w
			}()),
			want: hold(2, "1 worker starting: no scale-in"),
		},
		{
			name: "starting workers block DOWN and reset the streak",
			st:   ZoneState{Count: 3, Max: 5, LastChange: longAgo, LowStreak: 5},
			obs:  obs(ready("a", 2, 32), ready("b", 2, 32), starting("c")),
			want: hold(3, "1 worker starting: no scale-in"),
		},
	})
}

func TestStepInvalid(t *testing.T) {
	bad := DefaultStepConfig()
	bad.TargetRPS = 0
	runStepCases(t, []stepCase{
		{
			name: "count 0",
			st:   ZoneState{Count: 0, Max: 3, LastChange: longAgo},
			obs:  obs(ready("a", 32, 32)),
			want: hold(0, "invalid zone state: count 0, max 3"),
		},
		{
			name: "max 0",
			st:   ZoneState{Count: 1, Max: 0, LastChange: longAgo},
			obs:  obs(ready("a", 32, 32)),
			want: hold(1, "invalid zone state: count 1, max 0"),
		},
		{
			name: "invalid config holds, no division by zero",
			cfg:  &bad,
			st:   ZoneState{Count: 1, Max: 3, LastChange: longAgo},
			obs:  obs(ready("a", 32, 32)),
			want: hold(1, "invalid step config: autoscaler: step config TargetRPS = 0, want > 0 and finite"),
		},
	})
}

func TestStepPrevReplaced(t *testing.T) {
	old := map[string]WorkerSample{"gone": ready("gone", 1, 32), "a": ready("a", 1, 32)}
	oldCopy := maps.Clone(old)
	ws := []WorkerSample{ready("a", 2, 32), unreachable("b"), notReady("c", 0, 32), starting("d")}
	wsCopy := slices.Clone(ws)
	st := ZoneState{Count: 4, Max: 4, LastChange: longAgo, LowStreak: 1, Prev: old}
	_, next := Step(DefaultStepConfig(), st, obs(ws...), now)

	if got := slices.Sorted(maps.Keys(next.Prev)); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("next.Prev keys = %v, want the reachable workers [a c]", got)
	}
	if next.Prev["a"] != ws[0] {
		t.Errorf("next.Prev[a] = %+v, want this round's sample", next.Prev["a"])
	}
	if !maps.Equal(old, oldCopy) || !reflect.DeepEqual(ws, wsCopy) || st.LowStreak != 1 {
		t.Error("Step modified its input")
	}
}

func TestRate(t *testing.T) {
	at := func(calls uint64, sec int) WorkerSample {
		return WorkerSample{ID: "w", CallsTotal: calls, SampledAt: now.Add(time.Duration(sec) * time.Second)}
	}
	reborn := at(2000, 10)
	reborn.Created = now.Add(5 * time.Second)
	born := at(1000, 0)
	born.Created = now.Add(-time.Hour)
	tests := []struct {
		name      string
		prev, cur WorkerSample
		want      string // "" means no rate
	}{
		{"100 calls in 10 s", at(1000, 0), at(2000, 10), "100"},
		{"no calls", at(1000, 0), at(1000, 10), "0"},
		{"one third", at(0, 0), at(1, 3), "1/3"},
		{"total went backwards (restart)", at(98_450, 0), at(150, 10), ""},
		{"Δt zero", at(1000, 10), at(2000, 10), ""},
		{"Δt negative", at(1000, 10), at(2000, 0), ""},
		{"re-created worker", born, reborn, ""},
		{"counter near the top", at(1<<64-11, 0), at(1<<64-1, 10), "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rate(tc.prev, tc.cur)
			switch {
			case tc.want == "" && r != nil:
				t.Errorf("rate = %s, want none", r.RatString())
			case tc.want != "" && (r == nil || r.RatString() != tc.want):
				t.Errorf("rate = %v, want %s", r, tc.want)
			}
		})
	}
}

func TestCeil(t *testing.T) {
	for _, tc := range []struct{ num, den, want int64 }{
		{3, 1, 3}, {6, 2, 3}, {13, 4, 4}, {0, 5, 0}, {1, 1_000_000_000, 1}, {999, 1000, 1},
	} {
		if got := ceil(big.NewRat(tc.num, tc.den)); got.Int64() != tc.want {
			t.Errorf("ceil(%d/%d) = %s, want %d", tc.num, tc.den, got, tc.want)
		}
	}
}

func TestDefaultStepConfig(t *testing.T) {
	want := StepConfig{HighFraction: 0.8, MeanUpFraction: 0.5, LowFraction: 0.3, TargetRPS: 50, LowRounds: 3,
		UpCooldown: 30 * time.Second, DownCooldown: 120 * time.Second, StartupGrace: 120 * time.Second}
	if got := DefaultStepConfig(); got != want {
		t.Errorf("DefaultStepConfig() = %+v, want %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

func TestStepConfigValidate(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	tests := []struct {
		name  string
		edit  func(*StepConfig)
		wants []string // substrings of the error; none means valid
	}{
		{"defaults", func(*StepConfig) {}, nil},
		{"high 1 is allowed", func(c *StepConfig) { c.HighFraction = 1 }, nil},
		{"zero cooldowns are allowed", func(c *StepConfig) { c.UpCooldown, c.DownCooldown, c.StartupGrace = 0, 0, 0 }, nil},
		{"high 0", func(c *StepConfig) { c.HighFraction = 0 }, []string{"HighFraction = 0, want in (0, 1]"}},
		{"high over 1", func(c *StepConfig) { c.HighFraction = 1.5 }, []string{"HighFraction = 1.5"}},
		{"high NaN", func(c *StepConfig) { c.HighFraction = nan }, []string{"HighFraction = NaN"}},
		{"mean up 0", func(c *StepConfig) { c.MeanUpFraction = 0 }, []string{"MeanUpFraction = 0, want in (0, 1]"}},
		{"low 0", func(c *StepConfig) { c.LowFraction = 0 }, []string{"LowFraction = 0, want in (0, 1)"}},
		{"low at high", func(c *StepConfig) { c.LowFraction = 0.8 }, []string{"LowFraction = 0.8, want under HighFraction (0.8)"}},
		{"target 0", func(c *StepConfig) { c.TargetRPS = 0 }, []string{"TargetRPS = 0, want > 0 and finite"}},
		{"target +Inf", func(c *StepConfig) { c.TargetRPS = 1 / func() float64 { return 0 }() }, []string{"TargetRPS = +Inf"}},
		{"low rounds 0", func(c *StepConfig) { c.LowRounds = 0 }, []string{"LowRounds = 0, want >= 1"}},
		{"negative durations", func(c *StepConfig) { c.UpCooldown, c.DownCooldown, c.StartupGrace = -1, -1, -1 },
			[]string{"UpCooldown = -1ns", "DownCooldown = -1ns", "StartupGrace = -1ns"}},
		{"zero value: every field", func(c *StepConfig) { *c = StepConfig{} },
			[]string{"HighFraction", "MeanUpFraction", "LowFraction", "TargetRPS", "LowRounds"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultStepConfig()
			tc.edit(&c)
			err := c.Validate()
			if len(tc.wants) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error with %q", tc.wants)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func BenchmarkStep(b *testing.B) {
	// 10,000 zones × 4 workers, one round each, every worker with a previous
	// sample so rates are computed: one round of a large console.
	const zones = 10_000
	cfg := DefaultStepConfig()
	type zoneIn struct {
		st  ZoneState
		obs Observation
	}
	in := make([]zoneIn, zones)
	for z := range in {
		ws := make([]WorkerSample, 4)
		for i := range ws {
			ws[i] = ready("w"+string(rune('0'+i)), (z+i*7)%33, 32)
		}
		in[z] = zoneIn{
			st: ZoneState{Count: 4, Max: 8, LastChange: longAgo, LowStreak: z % 4,
				Prev: rps10(map[string]uint64{"w0": uint64(z % 80), "w1": 40, "w2": 30, "w3": 20}, ws...)},
			obs: obs(ws...),
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range in {
			Step(cfg, in[i].st, in[i].obs, now)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/zones, "ns/zone")
}

// rate returns cur's calls per second since prev, or nil when there is
// none (rateParts).
func rate(prev, cur WorkerSample) *big.Rat {
	calls, dt, ok := rateParts(prev, cur)
	if !ok {
		return nil
	}
	return rateOf(rateSample{calls, dt})
}
