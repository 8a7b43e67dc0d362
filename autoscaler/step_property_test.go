package autoscaler

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// genConfig draws a valid StepConfig: the defaults or thresholds and timings
// around them.
func genConfig(t *rapid.T) StepConfig {
	if rapid.Bool().Draw(t, "defaults") {
		return DefaultStepConfig()
	}
	high := rapid.SampledFrom([]float64{0.5, 0.8, 0.9, 1}).Draw(t, "high")
	c := StepConfig{
		HighFraction:   high,
		MeanUpFraction: rapid.SampledFrom([]float64{0.25, 0.5, 0.75, 1}).Draw(t, "meanUp"),
		LowFraction:    rapid.SampledFrom([]float64{0.1, 0.3, 0.45}).Draw(t, "low"),
		TargetRPS:      rapid.SampledFrom([]float64{1, 10, 33.3, 50, 100}).Draw(t, "target"),
		LowRounds:      rapid.IntRange(1, 4).Draw(t, "lowRounds"),
		UpCooldown:     time.Duration(rapid.IntRange(0, 60).Draw(t, "upCooldown")) * time.Second,
		DownCooldown:   time.Duration(rapid.IntRange(0, 180).Draw(t, "downCooldown")) * time.Second,
		StartupGrace:   time.Duration(rapid.IntRange(0, 180).Draw(t, "grace")) * time.Second,
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("generated an invalid config: %v", err)
	}
	return c
}

// genWorker draws one worker sample at now, of any kind: ready, not ready,
// starting, unreachable, limit <= 0, negative in-flight. A quiet worker is
// reachable, ready, at the default limit and lightly loaded, so that quiet
// zones reach DOWN decisions often.
func genWorker(t *rapid.T, id string, now time.Time, quiet bool) WorkerSample {
	if quiet {
		w := WorkerSample{ID: id, Reachable: true, Ready: true, Limit: 32, SampledAt: now,
			InFlight:   rapid.IntRange(0, 10).Draw(t, id+".inFlight"),
			CallsTotal: rapid.Uint64Range(0, 1_000_000).Draw(t, id+".calls"),
			Created:    now.Add(-time.Duration(rapid.IntRange(0, 3).Draw(t, id+".created")) * time.Hour),
		}
		return w
	}
	return WorkerSample{
		ID:         id,
		Reachable:  rapid.IntRange(0, 9).Draw(t, id+".reachable") > 0,
		Ready:      rapid.IntRange(0, 9).Draw(t, id+".ready") > 0,
		Starting:   rapid.IntRange(0, 9).Draw(t, id+".starting") == 0,
		InFlight:   rapid.IntRange(-1, 40).Draw(t, id+".inFlight"),
		Limit:      rapid.SampledFrom([]int{-1, 0, 1, 10, 32, 32, 32, 64}).Draw(t, id+".limit"),
		CallsTotal: rapid.Uint64Range(0, 1_000_000).Draw(t, id+".calls"),
		SampledAt:  now,
		Created:    now.Add(-time.Duration(rapid.IntRange(0, 3).Draw(t, id+".created")) * time.Hour),
	}
}

// genPrev draws a previous sample for some of ws: earlier, equal or later
// times, totals below or above (a restart).
func genPrev(t *rapid.T, ws []WorkerSample) map[string]WorkerSample {
	prev := map[string]WorkerSample{}
	for _, w := range ws {
		if !rapid.Bool().Draw(t, w.ID+".hasPrev") {
			continue
		}
		p := w
		p.SampledAt = w.SampledAt.Add(-time.Duration(rapid.IntRange(-5, 60).Draw(t, w.ID+".prevAge")) * time.Second)
		p.CallsTotal = rapid.Uint64Range(0, 1_000_000).Draw(t, w.ID+".prevCalls")
		prev[w.ID] = p
	}
	return prev
}

type stepInput struct {
	cfg StepConfig
	st  ZoneState
	obs Observation
	now time.Time
}

func genStepInput(t *rapid.T) stepInput {
	now := time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)
	cfg := genConfig(t)
	maxCount := rapid.IntRange(1, 10).Draw(t, "max")
	quiet := rapid.Bool().Draw(t, "quiet")
	var ws []WorkerSample
	for i := range rapid.IntRange(0, 8).Draw(t, "workers") {
		ws = append(ws, genWorker(t, fmt.Sprintf("w%d", i), now, quiet))
	}
	st := ZoneState{
		Count:     rapid.IntRange(1, maxCount).Draw(t, "count"),
		Max:       maxCount,
		LowStreak: rapid.IntRange(0, 6).Draw(t, "lowStreak"),
		Prev:      genPrev(t, ws),
	}
	if rapid.IntRange(0, 4).Draw(t, "hasLastChange") > 0 {
		st.LastChange = now.Add(-time.Duration(rapid.IntRange(0, 300).Draw(t, "sinceChange")) * time.Second)
	}
	missing := 0
	if !quiet && rapid.IntRange(0, 4).Draw(t, "hasMissing") == 0 {
		missing = rapid.IntRange(1, 2).Draw(t, "missing")
	}
	return stepInput{cfg: cfg, st: st, obs: Observation{Workers: ws, Missing: missing}, now: now}
}

// checkDecision asserts the invariants every single step must keep.
func checkDecision(t *rapid.T, in stepInput, d Decision, next ZoneState) {
	st := in.st
	if d.From != st.Count || !d.At.Equal(in.now) {
		t.Fatalf("From %d At %v, want %d %v", d.From, d.At, st.Count, in.now)
	}
	if d.To < 1 || d.To > st.Max {
		t.Fatalf("count %d outside 1..%d (%s: %q)", d.To, st.Max, d.Action, d.Reason)
	}
	if next.Count != d.To || next.Max != st.Max {
		t.Fatalf("next count/max %d/%d, decision to %d, max %d", next.Count, next.Max, d.To, st.Max)
	}
	if d.Reason == "" {
		t.Fatalf("%s without a reason", d.Action)
	}
	since := in.now.Sub(st.LastChange)
	switch d.Action {
	case ActionHold:
		if d.To != d.From || !next.LastChange.Equal(st.LastChange) || len(d.Victims) > 0 {
			t.Fatalf("hold changed something: %+v, last change %v", d, next.LastChange)
		}
		if d.AtMaxUnderLoad && st.Count < st.Max {
			t.Fatalf("at-max warning at count %d < max %d", st.Count, st.Max)
		}
	case ActionUp:
		if d.To <= d.From || d.AtMaxUnderLoad {
			t.Fatalf("up from %d to %d (at max %v)", d.From, d.To, d.AtMaxUnderLoad)
		}
		if !st.LastChange.IsZero() && since < in.cfg.UpCooldown {
			t.Fatalf("UP %s after the last change, up cooldown %s", since, in.cfg.UpCooldown)
		}
	case ActionDown:
		if d.To != d.From-1 {
			t.Fatalf("down from %d to %d: not exactly one", d.From, d.To)
		}
		if !st.LastChange.IsZero() && since < in.cfg.DownCooldown {
			t.Fatalf("DOWN %s after the last change, down cooldown %s", since, in.cfg.DownCooldown)
		}
		if in.obs.Missing > 0 {
			t.Fatalf("DOWN with %d workers missing", in.obs.Missing)
		}
		ids := make([]string, 0, len(in.obs.Workers))
		for _, w := range in.obs.Workers {
			if !w.Reachable || !w.Ready || w.Limit <= 0 {
				// A canary too: a down canary is down (no scale-in).
				t.Fatalf("DOWN with worker %+v not reachable, ready and limited", w)
			}
			if !w.Canary {
				ids = append(ids, w.ID)
			}
		}
		slices.Sort(ids)
		if got := slices.Sorted(slices.Values(d.Victims)); !slices.Equal(got, ids) {
			t.Fatalf("victims %v, want every stable worker %v (never the canary)", d.Victims, ids)
		}
	default:
		t.Fatalf("unexpected action %q", d.Action)
	}
	if d.Action != ActionHold && (!next.LastChange.Equal(in.now) || next.LowStreak != 0) {
		t.Fatalf("change without LastChange = now and streak 0: %+v", next)
	}
	for id, w := range next.Prev {
		if !w.Reachable || w.ID != id {
			t.Fatalf("next.Prev[%s] = %+v: not a reachable sample of this round", id, w)
		}
	}
}

func TestStepProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genStepInput(t)
		prevCopy := maps.Clone(in.st.Prev)
		wsCopy := slices.Clone(in.obs.Workers)

		d, next := Step(in.cfg, in.st, in.obs, in.now)
		checkDecision(t, in, d, next)

		if !maps.Equal(in.st.Prev, prevCopy) || !slices.Equal(in.obs.Workers, wsCopy) {
			t.Fatal("Step modified its input")
		}
		d2, next2 := Step(in.cfg, in.st, in.obs, in.now)
		if !reflect.DeepEqual(d, d2) || !reflect.DeepEqual(next, next2) {
			t.Fatalf("not deterministic:\n%+v %+v\n%+v %+v", d, next, d2, next2)
		}
	})
}

func TestRateNeverNegative(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		at := time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)
		prev := WorkerSample{CallsTotal: rapid.Uint64().Draw(t, "prev"), SampledAt: at}
		cur := WorkerSample{CallsTotal: rapid.Uint64().Draw(t, "cur"),
			SampledAt: at.Add(time.Duration(rapid.Int64().Draw(t, "dt")))}
		r := rate(prev, cur)
		if r != nil && r.Sign() < 0 {
			t.Fatalf("negative rate %s", r.RatString())
		}
		if (r != nil) != (cur.CallsTotal >= prev.CallsTotal && cur.SampledAt.After(prev.SampledAt)) {
			t.Fatalf("rate %v for %+v → %+v", r, prev, cur)
		}
	})
}

// TestStepSequenceProperties runs a zone round after round on its own
// state, with random load, outages, restarts and round intervals, and checks
// the invariants across rounds: count within 1..max, steps of one down, no
// DOWN with a worker down, none before LowRounds all-low rounds in a row,
// and the cooldowns measured from the last change this test saw.
func TestStepSequenceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { stepSequence(t, false) })
}

// TestStepSequenceWithCanary is TestStepSequenceProperties with the zone's
// canary listed every round beside the count's workers (sometimes down,
// sometimes not ready): the same invariants hold, a down canary blocks a
// DOWN like any worker, and the canary is never a victim (checkDecision).
func TestStepSequenceWithCanary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { stepSequence(t, true) })
}

func stepSequence(t *rapid.T, withCanary bool) {
	{
		cfg := DefaultStepConfig()
		cfg.UpCooldown = time.Duration(rapid.IntRange(0, 60).Draw(t, "upCooldown")) * time.Second
		cfg.DownCooldown = time.Duration(rapid.IntRange(0, 180).Draw(t, "downCooldown")) * time.Second
		now := time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)
		maxCount := rapid.IntRange(1, 6).Draw(t, "max")
		st := ZoneState{Count: rapid.IntRange(1, maxCount).Draw(t, "count"), Max: maxCount}
		// A quiet zone is mostly healthy and lightly loaded, so it scales in.
		quiet := rapid.Bool().Draw(t, "quiet")
		loads := []int{0, 2, 5, 9, 10, 16, 20, 26, 32}
		healthy := 9
		if quiet {
			loads, healthy = []int{0, 2, 5, 9, 10}, 49
		}
		lastChange := time.Time{}
		totals := map[string]uint64{}
		streak := 0 // all-low rounds in a row, by this test's own count

		for round := range rapid.IntRange(1, 40).Draw(t, "rounds") {
			now = now.Add(time.Duration(rapid.IntRange(1, 60).Draw(t, "interval")) * time.Second)
			r := func(s string) string { return fmt.Sprintf("r%d.%s", round, s) }
			var o Observation
			allLow := true
			// The zone lists about its count of workers (and its canary).
			n := max(st.Count+rapid.IntRange(-1, 1).Draw(t, r("drift")), 0)
			listed := n
			if withCanary {
				listed++
			}
			for i := range listed {
				id := fmt.Sprintf("w%d", i)
				if i == n {
					id = "canary"
				}
				totals[id] += rapid.Uint64Range(0, 2000).Draw(t, r(id+".calls"))
				if rapid.IntRange(0, 19).Draw(t, r(id+".restart")) == 0 {
					totals[id] = 0
				}
				w := WorkerSample{
					ID: id, Reachable: rapid.IntRange(0, healthy).Draw(t, r(id+".reachable")) > 0,
					Ready: rapid.IntRange(0, healthy).Draw(t, r(id+".ready")) > 0, Limit: 32,
					InFlight:   rapid.SampledFrom(loads).Draw(t, r(id+".inFlight")),
					CallsTotal: totals[id], SampledAt: now,
				}
				w.Starting = !w.Ready && rapid.IntRange(0, 4).Draw(t, r(id+".starting")) == 0
				w.Canary = i == n
				allLow = allLow && w.Reachable && w.Ready && w.InFlight*10 < 3*w.Limit
				o.Workers = append(o.Workers, w)
			}
			if n < st.Count && !quiet && rapid.Bool().Draw(t, r("missing")) {
				o.Missing = st.Count - n
			}
			allLow = allLow && listed > 0 && o.Missing == 0
			if allLow {
				streak++
			} else {
				streak = 0
			}

			in := stepInput{cfg: cfg, st: st, obs: o, now: now}
			d, next := Step(cfg, st, o, now)
			checkDecision(t, in, d, next)
			since := now.Sub(lastChange)
			switch d.Action {
			case ActionUp:
				if !lastChange.IsZero() && since < cfg.UpCooldown {
					t.Fatalf("round %d: UP %s after the last change", round, since)
				}
			case ActionDown:
				if !lastChange.IsZero() && since < cfg.DownCooldown {
					t.Fatalf("round %d: DOWN %s after the last change", round, since)
				}
				if streak < cfg.LowRounds {
					t.Fatalf("round %d: DOWN after %d all-low rounds, want %d", round, streak, cfg.LowRounds)
				}
			}
			if d.Action != ActionHold {
				lastChange, streak = now, 0
			}
			if next.LowStreak != streak {
				t.Fatalf("round %d: LowStreak %d, counted %d", round, next.LowStreak, streak)
			}
			st = next
		}
	}
}

// genCanaryInput is genStepInput with a canary: one of the workers drawn
// becomes the canary, or a canary of its own kind (quiet or any) is added,
// with or without a previous sample. Drawn after genStepInput, so the saved
// failures of the other properties still replay.
func genCanaryInput(t *rapid.T) stepInput {
	in := genStepInput(t)
	ws := slices.Clone(in.obs.Workers)
	if len(ws) > 0 && rapid.Bool().Draw(t, "canaryAmong") {
		ws[rapid.IntRange(0, len(ws)-1).Draw(t, "canaryIndex")].Canary = true
	} else {
		c := genWorker(t, "canary", in.now, rapid.Bool().Draw(t, "canaryQuiet"))
		c.Canary = true
		ws = append(ws, c)
		in.st.Prev = maps.Clone(in.st.Prev)
		if in.st.Prev == nil {
			in.st.Prev = map[string]WorkerSample{}
		}
		maps.Copy(in.st.Prev, genPrev(t, []WorkerSample{c}))
	}
	in.obs.Workers = ws
	return in
}

// TestStepPropertiesWithCanary: every single-step invariant holds for a
// zone with a canary too (checkDecision: a DOWN needs the canary reachable
// and ready, and its victims are every stable worker, never the canary).
func TestStepPropertiesWithCanary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genCanaryInput(t)
		d, next := Step(in.cfg, in.st, in.obs, in.now)
		checkDecision(t, in, d, next)
	})
}

// TestStepCanaryNeverBolder: Ramen 0.7.5, "The canary counts as capacity. A
// zone at count 1 runs two pods (stable and canary), so the step is slightly
// conservative". Adding an idle canary to any zone (0 in flight, 0 calls/s,
// a limit at least every ready worker's) never makes an UP bigger and never
// turns a hold or a DOWN into an UP: the same load over one more worker
// reads lower. Whatever the zone, the canary is never a victim.
func TestStepCanaryNeverBolder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genStepInput(t)
		limit := 1
		for _, w := range in.obs.Workers {
			if w.Reachable && w.Ready {
				limit = max(limit, w.Limit)
			}
		}
		c := WorkerSample{ID: "idle-canary", Canary: true, Reachable: true, Ready: true, Limit: limit,
			CallsTotal: 500, SampledAt: in.now, Created: in.now.Add(-time.Hour)}
		prev := c
		prev.SampledAt = in.now.Add(-10 * time.Second)
		with := in
		with.obs.Workers = append(slices.Clone(in.obs.Workers), c)
		with.st.Prev = maps.Clone(in.st.Prev)
		if with.st.Prev == nil {
			with.st.Prev = map[string]WorkerSample{}
		}
		with.st.Prev[c.ID] = prev

		d0, _ := Step(in.cfg, in.st, in.obs, in.now)
		d1, next := Step(with.cfg, with.st, with.obs, with.now)
		checkDecision(t, with, d1, next)
		if d1.Action == ActionUp && (d0.Action != ActionUp || d1.To > d0.To) {
			t.Fatalf("the canary made the step bolder: without %s to %d (%q), with %s to %d (%q)",
				d0.Action, d0.To, d0.Reason, d1.Action, d1.To, d1.Reason)
		}
		if slices.Contains(d1.Victims, c.ID) {
			t.Fatalf("the canary is a victim: %v", d1.Victims)
		}
	})
}
