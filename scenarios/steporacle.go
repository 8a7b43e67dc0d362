package scenarios

// The step-round oracle: the harness's own implementation of the step
// policy's rules (seed 002, "How it decides"; Ramen 0.7.5's autoscaling
// notes), to recompute every round the console reports (GET …/policy
// step_rounds) from the inputs the round read, and to judge the decision,
// not only where the count ends up. It imports nothing of autoscaler/: a
// bug in the policy cannot hide in code the judge shares with it. All
// comparisons are exact (math/big.Rat), thresholds read as the decimal
// they are written as.
//
// The rules, as the oracle applies them to one round:
//
//   - A worker is READY when it answered, reports itself ready and an
//     in-flight limit > 0; STARTING when it is not ready and flagged
//     starting; DOWN otherwise. Workers the count asks for that discovery
//     does not list are starting within the startup grace of the last
//     change of the count, down after it. A canary is a worker like any
//     other ("the canary counts as capacity").
//   - With no ready worker the zone holds.
//   - A round is LOW when every worker is ready and under the low fraction
//     of its limit, none starting, down or missing; the low streak counts
//     low rounds in a row and any other round resets it.
//   - UP when a ready worker is over the high fraction of its limit (and
//     none is starting), the mean in-flight Σin ÷ Σlimit over the capacity
//     (ready + starting, each starting worker at the average limit) reaches
//     the mean-up fraction, or the calls per second per worker reach the
//     target. Calls per second: each ready worker with a previous sample
//     (same worker, later time, counter not gone back) gives Δcalls ÷ Δt;
//     their mean times the ready count is the zone's rate, divided by the
//     capacity. At the max the zone holds; within the up cooldown of the
//     last change it holds; else the count goes to
//     min(max, max(count+1, ceil(capacity × max(mean ÷ mean-up, rate ÷
//     target)) − canaries)).
//   - DOWN by one when the round is low, the streak (this round included)
//     reaches the low rounds, count > 1, count − 1 stable workers and the
//     ready canaries would stay under the mean-up fraction, the high
//     fraction and the target rate, and the down cooldown has passed.

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
)

// StepRules are the step policy's settings as the console shows them (GET
// /api/v1/config/autoscale), as exact rationals.
type StepRules struct {
	High, MeanUp, Low, Target *big.Rat
	LowRounds                 int
	UpCooldown, DownCooldown  time.Duration
	StartupGrace              time.Duration
}

// StepRulesOf reads the console's settings; ok is false when a field the
// rules need is missing or out of range.
func StepRulesOf(ac consoleclient.AutoscaleConfig) (StepRules, bool) {
	r := StepRules{High: exactRat(ac.HighFraction), MeanUp: exactRat(ac.MeanUpFraction), Low: exactRat(ac.LowFraction),
		Target: exactRat(ac.TargetRPS), LowRounds: ac.LowRounds,
		UpCooldown: secondsDur(ac.UpCooldownSeconds), DownCooldown: secondsDur(ac.DownCooldownSeconds),
		StartupGrace: secondsDur(ac.StartupGraceSeconds)}
	for _, x := range []*big.Rat{r.High, r.MeanUp, r.Low, r.Target} {
		if x.Sign() <= 0 {
			return r, false
		}
	}
	return r, r.LowRounds >= 1 && r.Low.Cmp(r.High) < 0
}

// String is the rules in one line, for a fact's detail.
func (r StepRules) String() string {
	return fmt.Sprintf("high > %s, mean-up >= %s, low < %s of the limit, target %s calls/s, %d low rounds, cooldowns up %s down %s, startup grace %s",
		r.High.FloatString(2), r.MeanUp.FloatString(2), r.Low.FloatString(2), r.Target.FloatString(1), r.LowRounds,
		r.UpCooldown, r.DownCooldown, r.StartupGrace)
}

// StepExpect is what the rules decide for one round.
type StepExpect struct {
	Action string // "up", "down" or "hold"
	To     int
	// Streak is the low streak the round leaves (0 after a change).
	Streak int
	// Rule names the rule that decided, in the user's words.
	Rule string
}

// StepRoundLow reports whether round rd is low: every worker the count
// asks for listed, ready (answered, reports itself ready, an in-flight
// limit > 0) and under the low fraction of its limit.
func StepRoundLow(low *big.Rat, rd consoleclient.StepRound) bool {
	if rd.Missing > 0 || len(rd.Workers) == 0 {
		return false
	}
	return !slices.ContainsFunc(rd.Workers, func(w consoleclient.StepRoundWorker) bool {
		return !w.Reachable || !w.Ready || w.Limit <= 0 || big.NewRat(int64(max(w.InFlight, 0)), int64(w.Limit)).Cmp(low) >= 0
	})
}

// DecideStep recomputes one round's decision from its inputs, with streak
// the low rounds in a row before it (the oracle's own count).
func DecideStep(r StepRules, rd consoleclient.StepRound, streak int) StepExpect {
	hold := func(rule string, s int) StepExpect {
		return StepExpect{Action: "hold", To: rd.Count, Streak: s, Rule: rule}
	}
	var ready []consoleclient.StepRoundSample
	starting, down, canaries, startingCanaries := 0, 0, 0, 0
	var prevs []*consoleclient.StepRoundSample
	for _, w := range rd.Workers {
		switch {
		case w.Reachable && w.Ready && w.Limit > 0:
			ready = append(ready, w.StepRoundSample)
			prevs = append(prevs, w.Prev)
			if w.Canary {
				canaries++
			}
		case w.Starting:
			starting++
			if w.Canary {
				startingCanaries++
			}
		default:
			down++
		}
	}
	if rd.Missing > 0 {
		if !rd.LastChange.IsZero() && rd.At.Sub(rd.LastChange) < r.StartupGrace {
			starting += rd.Missing
		} else {
			down += rd.Missing
		}
	}
	if len(ready) == 0 {
		return hold("no ready worker: hold", 0)
	}
	sumIn, sumLimit := int64(0), int64(0)
	hot, notLow := false, false
	for _, w := range ready {
		in := int64(max(w.InFlight, 0))
		sumIn += in
		sumLimit += int64(w.Limit)
		share := big.NewRat(in, int64(w.Limit))
		hot = hot || share.Cmp(r.High) > 0
		notLow = notLow || share.Cmp(r.Low) >= 0
	}
	low := StepRoundLow(r.Low, rd) // every listed worker ready and under the low fraction, none missing
	next := 0
	if low {
		next = max(streak, 0) + 1
	}
	capacity := int64(len(ready) + starting)
	// meanOver(n): Σin over n workers of the ready workers' average limit.
	meanOver := func(n int64) *big.Rat {
		return new(big.Rat).SetFrac(big.NewInt(sumIn*int64(len(ready))), big.NewInt(sumLimit*n))
	}
	mean := meanOver(capacity)
	var rateTotal *big.Rat // calls/s of the zone: the mean of the rated ready workers × the ready count
	rated := 0
	sum := new(big.Rat)
	for i, w := range ready {
		p := prevs[i]
		if p == nil {
			continue
		}
		dt := w.SampledAt.Sub(p.SampledAt)
		sameWorker := p.Created.IsZero() || w.Created.IsZero() || p.Created.Equal(w.Created)
		if dt <= 0 || w.CallsTotal < p.CallsTotal || !sameWorker {
			continue
		}
		calls := new(big.Int).SetUint64(w.CallsTotal - p.CallsTotal)
		calls.Mul(calls, big.NewInt(int64(time.Second)))
		sum.Add(sum, new(big.Rat).SetFrac(calls, big.NewInt(int64(dt))))
		rated++
	}
	if rated > 0 {
		rateTotal = new(big.Rat).Mul(sum, big.NewRat(int64(len(ready)), int64(rated)))
	}
	perWorker := func(n int64) *big.Rat { return new(big.Rat).Quo(rateTotal, new(big.Rat).SetInt64(n)) }

	var why []string
	if hot && starting == 0 {
		why = append(why, fmt.Sprintf("a ready worker over %s of its limit", pctRat(r.High)))
	}
	if mean.Cmp(r.MeanUp) >= 0 {
		why = append(why, fmt.Sprintf("mean in-flight %s >= %s", pctRat(mean), pctRat(r.MeanUp)))
	}
	if rateTotal != nil && perWorker(capacity).Cmp(r.Target) >= 0 {
		why = append(why, fmt.Sprintf("%s calls/s per worker >= %s", perWorker(capacity).FloatString(1), r.Target.FloatString(1)))
	}
	if len(why) > 0 {
		up := "up: " + strings.Join(why, "; ")
		if rd.Count >= rd.Max {
			return hold(up+"; but at the max: hold", next)
		}
		if !rd.LastChange.IsZero() && rd.At.Sub(rd.LastChange) < r.UpCooldown {
			return hold(fmt.Sprintf("%s; but within the up cooldown (%s of %s): hold", up,
				rd.At.Sub(rd.LastChange).Round(time.Millisecond), r.UpCooldown), next)
		}
		c := canaries + startingCanaries
		want := ceilRat(new(big.Rat).Mul(new(big.Rat).SetInt64(capacity), new(big.Rat).Quo(mean, r.MeanUp)))
		if rateTotal != nil {
			want = max(want, ceilRat(new(big.Rat).Mul(new(big.Rat).SetInt64(capacity), new(big.Rat).Quo(perWorker(capacity), r.Target))))
		}
		to := min(rd.Max, max(rd.Count+1, want-c))
		return StepExpect{Action: "up", To: to, Rule: fmt.Sprintf("%s; proportional step to %d (ceiling %d over %d workers, %d canaries)", up, to, want, capacity, c)}
	}
	switch {
	case down > 0:
		return hold("a worker is down or missing: no scale-in", next)
	case starting > 0:
		return hold("a worker is starting: no scale-in", next)
	case notLow:
		return hold("a ready worker is not low: hold", next)
	case rd.Count <= 1:
		return hold("at the minimum of 1 worker: hold", next)
	case next < r.LowRounds:
		return hold(fmt.Sprintf("low for %d of %d rounds: hold", next, r.LowRounds), next)
	}
	after := int64(rd.Count-1) + int64(canaries)
	if m := meanOver(after); m.Cmp(r.MeanUp) >= 0 || m.Cmp(r.High) > 0 {
		return hold(fmt.Sprintf("count − 1 would sit at mean in-flight %s: hold", pctRat(m)), next)
	}
	if rateTotal != nil && perWorker(after).Cmp(r.Target) >= 0 {
		return hold(fmt.Sprintf("count − 1 would carry %s calls/s each: hold", perWorker(after).FloatString(1)), next)
	}
	if !rd.LastChange.IsZero() && rd.At.Sub(rd.LastChange) < r.DownCooldown {
		return hold(fmt.Sprintf("low for %d rounds, but within the down cooldown (%s of %s): hold", next,
			rd.At.Sub(rd.LastChange).Round(time.Millisecond), r.DownCooldown), next)
	}
	return StepExpect{Action: "down", To: rd.Count - 1,
		Rule: fmt.Sprintf("down by one: low for %d rounds, count − 1 stays under the up thresholds, the down cooldown passed", next)}
}

func pctRat(x *big.Rat) string {
	return new(big.Rat).Mul(x, big.NewRat(100, 1)).FloatString(1) + " %"
}
