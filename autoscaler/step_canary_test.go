package autoscaler

import (
	"slices"
	"testing"
	"time"
)

// canary is a ready canary worker sampled at now.
func canary(id string, inFlight, limit int) WorkerSample {
	w := ready(id, inFlight, limit)
	w.Canary = true
	return w
}

// TestStepCanary: Ramen 0.7.5, "The canary counts as capacity. A zone at
// count 1 runs two pods (stable and canary), so the step is slightly
// conservative". Each pair below puts the same total load on a zone without
// and with its canary; the canary shares the load, so the mean and the rate
// per worker read lower and the zone steps up later. When both step, the
// zone ends with the same number of workers: the proportional ceiling less
// the canary, which is one of them (at least count+1). The count is the
// stable workers; the canary is extra.
//
// Worked by hand with the defaults (limit 32: high over 25.6, low under 9.6):
//
//	count  load            no canary                         with canary
//	1      20 in flight    62.5 % -> up to ceil(1×1.25) = 2   10+10: 31.25 % -> hold
//	1      30 in flight    high, 93.75 % -> up to 2           15+15: 46.875 % -> hold
//	1      32 in flight    high, 100 % -> up to ceil(1×2) = 2  16+16: 50 % -> up to ceil(2×1) = 2
//	1      60 calls/s      60/50 -> up to ceil(1×1.2) = 2     30+30 calls/s: hold
//	1      180 calls/s     up to ceil(1×3.6) = 4              90+90: ceil(2×1.8) = 4 workers, less the canary: up to 3
//	2      36 in flight    56.25 % -> up to ceil(2×1.125) = 3 12×3: 37.5 % -> hold
//	2      48 in flight    75 % -> up to ceil(2×1.5) = 3      16×3: 50 % -> up to ceil(3×1) = 3
//	4      68 in flight    53.125 % -> up to ceil(4.25) = 5   14,14,14,13,13: 42.5 % -> hold
//	4      80 in flight    62.5 % -> up to ceil(5) = 5        16×5: 50 % -> up to ceil(5×1) = 5
func TestStepCanary(t *testing.T) {
	rates := func(rps uint64, ws ...WorkerSample) map[string]WorkerSample {
		m := map[string]uint64{}
		for _, w := range ws {
			m[w.ID] = rps
		}
		return rps10(m, ws...)
	}
	at := func(count int) ZoneState { return ZoneState{Count: count, Max: 6, LastChange: longAgo} }
	stable := func(loads ...int) []WorkerSample {
		var ws []WorkerSample
		for i, n := range loads {
			ws = append(ws, ready("s"+string(rune('1'+i)), n, 32))
		}
		return ws
	}
	with := func(ws []WorkerSample, c int) []WorkerSample {
		return append(slices.Clone(ws), canary("canary", c, 32))
	}
	rate1 := stable(2)
	rate1c := append(stable(2), canary("canary", 2, 32))
	withRate := func(st ZoneState, rps uint64, ws []WorkerSample) ZoneState { st.Prev = rates(rps, ws...); return st }

	runStepCases(t, []stepCase{
		// count 1
		{name: "count 1, 20 in flight, no canary", st: at(1), obs: obs(stable(20)...),
			want: up(1, 2, "mean in-flight 62.5% >= 50%")},
		{name: "count 1, 20 in flight, with canary", st: at(1), obs: obs(with(stable(10), 10)...),
			want: hold(1, "steady: mean in-flight 31.3%, no rate yet; worker s1 not low: 10/32 in flight >= 30%")},
		{name: "count 1, 30 in flight, no canary", st: at(1), obs: obs(stable(30)...),
			want: up(1, 2, "worker s1 high: 30/32 in flight > 80%; mean in-flight 93.8% >= 50%")},
		{name: "count 1, 30 in flight, with canary", st: at(1), obs: obs(with(stable(15), 15)...),
			want: hold(1, "steady: mean in-flight 46.9%, no rate yet; worker s1 not low: 15/32 in flight >= 30%")},
		{name: "count 1, 32 in flight, no canary", st: at(1), obs: obs(stable(32)...),
			want: up(1, 2, "worker s1 high: 32/32 in flight > 80%; mean in-flight 100.0% >= 50%")},
		{name: "count 1, 32 in flight, with canary", st: at(1), obs: obs(with(stable(16), 16)...),
			want: up(1, 2, "mean in-flight 50.0% >= 50%")},
		{name: "count 1, 60 calls/s, no canary", st: func() ZoneState { s := at(1); s.Prev = rates(60, rate1...); return s }(),
			obs:  obs(rate1...),
			want: up(1, 2, "rate 60.0 calls/s per worker >= 50")},
		{name: "count 1, 60 calls/s, with canary", st: func() ZoneState { s := at(1); s.Prev = rates(30, rate1c...); return s }(),
			obs:  obs(rate1c...),
			want: hold(1, "steady: mean in-flight 6.3%, 30.0 calls/s per worker; at the minimum of 1 worker"), wantStreak: 1},
		{name: "count 1, 180 calls/s, no canary", st: withRate(at(1), 180, rate1), obs: obs(rate1...),
			want: up(1, 4, "rate 180.0 calls/s per worker >= 50")},
		{name: "count 1, 180 calls/s, with canary", st: withRate(at(1), 90, rate1c), obs: obs(rate1c...),
			want: up(1, 3, "rate 90.0 calls/s per worker >= 50")},
		// count 2
		{name: "count 2, 36 in flight, no canary", st: at(2), obs: obs(stable(18, 18)...),
			want: up(2, 3, "mean in-flight 56.3% >= 50%")},
		{name: "count 2, 36 in flight, with canary", st: at(2), obs: obs(with(stable(12, 12), 12)...),
			want: hold(2, "steady: mean in-flight 37.5%, no rate yet; worker s1 not low: 12/32 in flight >= 30%")},
		{name: "count 2, 48 in flight, no canary", st: at(2), obs: obs(stable(24, 24)...),
			want: up(2, 3, "mean in-flight 75.0% >= 50%")},
		{name: "count 2, 48 in flight, with canary", st: at(2), obs: obs(with(stable(16, 16), 16)...),
			want: up(2, 3, "mean in-flight 50.0% >= 50%")},
		// count 4
		{name: "count 4, 68 in flight, no canary", st: at(4), obs: obs(stable(17, 17, 17, 17)...),
			want: up(4, 5, "mean in-flight 53.1% >= 50%")},
		{name: "count 4, 68 in flight, with canary", st: at(4), obs: obs(with(stable(14, 14, 14, 13), 13)...),
			want: hold(4, "steady: mean in-flight 42.5%, no rate yet; worker s1 not low: 14/32 in flight >= 30%")},
		{name: "count 4, 80 in flight, no canary", st: at(4), obs: obs(stable(20, 20, 20, 20)...),
			want: up(4, 5, "mean in-flight 62.5% >= 50%")},
		{name: "count 4, 80 in flight, with canary", st: at(4), obs: obs(with(stable(16, 16, 16, 16), 16)...),
			want: up(4, 5, "mean in-flight 50.0% >= 50%")},
	})
}

// TestStepCanaryDown: the canary stays, so a DOWN asks whether count-1
// stable workers and the canary stay under the up thresholds; the canary is
// never a victim, and a canary that does not answer is down: no scale-in.
func TestStepCanaryDown(t *testing.T) {
	lowFor := func(count int) ZoneState { return ZoneState{Count: count, Max: 6, LastChange: longAgo, LowStreak: 2} }
	runStepCases(t, []stepCase{
		// 18 in flight on 2 workers, both low (9 < 9.6): one worker would
		// carry 18/32 = 56.25 %: no DOWN.
		{name: "count 2 at 9+9, no canary", st: lowFor(2),
			obs:  obs(ready("s1", 9, 32), ready("s2", 9, 32)),
			want: hold(2, "2 workers low for 3 rounds; 1 would sit at mean in-flight 56.3% >= 50%"), wantStreak: 3},
		// The same 18 with a canary, 6 each: one stable worker and the
		// canary would carry 18/64 = 28.1 %: DOWN, the canary not a victim.
		{name: "count 2 at 6+6 and the canary at 6", st: lowFor(2),
			obs:  obs(created(ready("s1", 6, 32), 2*time.Hour), ready("s2", 6, 32), canary("canary", 6, 32)),
			want: down(2, "3 workers low for 3 rounds; 1 and the canary would stay under the up thresholds", "s2", "s1")},
		// The canary has the fewest in flight: still not a victim.
		{name: "the idle canary is not a victim", st: lowFor(3),
			obs:  obs(ready("s1", 3, 32), ready("s2", 2, 32), ready("s3", 1, 32), canary("canary", 0, 32)),
			want: down(3, "4 workers low for 3 rounds; 2 and the canary would stay under the up thresholds", "s3", "s2", "s1")},
		// A canary that does not answer is down: an outage never scales in.
		{name: "canary down: no scale-in", st: lowFor(2),
			obs:  obs(ready("s1", 1, 32), ready("s2", 1, 32), func() WorkerSample { w := unreachable("canary"); w.Canary = true; return w }()),
			want: hold(2, "1 of 3 workers down (canary): no scale-in")},
		// After the UP to 3 at 180 calls/s above: 3 stable workers and the
		// canary at 45 calls/s each. Two and the canary would carry 60 >= 50:
		// no DOWN, the UP is not undone.
		{name: "after the up to 3 at 180 calls/s", st: func() ZoneState {
			s := lowFor(3)
			ws := []WorkerSample{ready("s1", 1, 32), ready("s2", 1, 32), ready("s3", 1, 32), canary("canary", 1, 32)}
			s.Prev = rps10(map[string]uint64{"s1": 45, "s2": 45, "s3": 45, "canary": 45}, ws...)
			return s
		}(),
			obs:  obs(ready("s1", 1, 32), ready("s2", 1, 32), ready("s3", 1, 32), canary("canary", 1, 32)),
			want: hold(3, "4 workers low for 3 rounds; 2 and the canary would carry 60.0 calls/s each >= 50"), wantStreak: 3},
		// Count 1 with a canary is the minimum: the canary does not let
		// the count reach 0.
		{name: "count 1 with the canary stays at 1", st: lowFor(1),
			obs:  obs(ready("s1", 0, 32), canary("canary", 0, 32)),
			want: hold(1, "steady: mean in-flight 0.0%, no rate yet; at the minimum of 1 worker"), wantStreak: 3},
	})
}
