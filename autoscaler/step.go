package autoscaler

// The Ramen 0.7.5 step policy ("How it decides"), every rule in this file.
//
// Each round, for one group × zone:
//
//   - A worker is READY when it answered (Reachable), reports itself ready and
//     reports an in-flight limit > 0. A worker flagged Starting that is not
//     ready is STARTING: capacity on its way at zero in-flight, neither ready
//     nor down. Workers the count asks for that discovery does not list
//     (Observation.Missing) are starting within StartupGrace of the last
//     change and down after it. Every other worker is DOWN: never capacity,
//     never low.
//   - UP when a trigger fires: a ready worker is high, the zone's mean
//     in-flight reaches MeanUpFraction, or the calls per second per worker
//     reach TargetRPS. The new count is
//     max(count+1, ceil(capacity × max(mean/MeanUpFraction, rate/TargetRPS)))
//     and at most the max, where capacity counts ready and starting workers
//     (with a canary, less the canary: see THE CANARY below);
//     with StepConfig.MaxUpStep > 0, at most count+MaxUpStep.
//     At the max the zone holds and the decision says so (AtMaxUnderLoad).
//   - DOWN by exactly one when every worker is ready and low for LowRounds
//     rounds in a row, count-1 workers would stay under all three UP
//     thresholds, and count > 1.
//   - Cooldowns run from the last change of the count: no UP within
//     UpCooldown, no DOWN within DownCooldown.
//   - THE CANARY (WorkerSample.Canary) counts as capacity: Ramen 0.7.5, "The
//     canary counts as capacity. A zone at count 1 runs two pods (stable and
//     canary), so the step is slightly conservative". It is ready, starting
//     or down like any worker, so the ready count, the mean in-flight, the
//     rate per worker and the capacity of the proportional step all include
//     it, and a canary that does not answer is down: no scale-in. The count
//     is the stable workers only (1..max; the canary is extra), so the same
//     load spread over one more worker reads lower: at count 1 with a canary
//     the mean and the rate per worker are half what one worker alone would
//     show, and the zone steps up later. The proportional ceiling is the
//     workers the load asks for, the canary one of them: an UP goes to that
//     ceiling less the canary (still at least count+1, at most the max). A
//     DOWN asks whether the count-1 stable workers and the ready canary
//     would stay under the UP thresholds, and the canary is never a victim.
//     So the zone runs the workers the load needs, the canary included, and
//     at the same load the next DOWN check does not undo an UP.
//
// All comparisons and ceilings are exact (math/big.Rat): thresholds are read
// as the decimal they are written as, and a rate is Δcalls ÷ Δt with Δt in
// nanoseconds. A value that is mathematically an integer never rounds up.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// StepConfig holds the thresholds and timings of the Ramen 0.7.5 step policy.
// The zero value is not valid; start from DefaultStepConfig.
//
// Fractions and TargetRPS are float64 for convenience (they come from
// environment variables and flags), but the policy compares them exactly as
// the shortest decimal that reads back as the same float64: 0.3 is exactly
// 3/10, not the binary float just under it.
type StepConfig struct {
	// HighFraction: a ready worker is high when its in-flight calls are
	// strictly over this fraction of its own in-flight limit. A high worker
	// triggers an UP. Ramen 0.7.5: "any ready worker is high (over 80 % of its
	// limit)". Default 0.8. Range (0, 1].
	HighFraction float64
	// MeanUpFraction: the zone triggers an UP when its mean in-flight
	// (Σ in-flight ÷ Σ limit) is at or over this fraction. It is also the
	// divisor of the proportional step. Ramen 0.7.5: "the zone's mean in-flight
	// is 50 % or more". Default 0.5. Range (0, 1].
	MeanUpFraction float64
	// LowFraction: a ready worker is low when its in-flight calls are
	// strictly under this fraction of its own limit. Ramen 0.7.5: "every ready
	// worker is low (under 30 %)". Default 0.3. Range (0, HighFraction).
	LowFraction float64
	// TargetRPS, in calls per second per worker: the zone triggers an UP when
	// its calls per second per worker reach it, and it divides the rate in
	// the proportional step. Ramen 0.7.5: RAMEN_AUTOSCALE_TARGET_RPS, default
	// 50. Must be > 0 and finite.
	TargetRPS float64
	// LowRounds is the number of consecutive all-low rounds, the current one
	// included, before a DOWN. Ramen 0.7.5: "low for 3 rebalances in a row".
	// Default 3. Must be >= 1.
	LowRounds int
	// UpCooldown: no UP while less than this has passed since the last
	// change of the count. Ramen 0.7.5: RAMEN_AUTOSCALE_UP_COOLDOWN_SECS,
	// default 30 s. Must be >= 0.
	UpCooldown time.Duration
	// DownCooldown: no DOWN while less than this has passed since the last
	// change of the count. Ramen 0.7.5: RAMEN_AUTOSCALE_COOLDOWN_SECS, default
	// 120 s. Must be >= 0.
	DownCooldown time.Duration
	// StartupGrace: workers the count asks for that discovery does not list
	// yet (Observation.Missing) count as starting while less than this has
	// passed since the last change, and as down after it.
	// The controller uses the same grace to set WorkerSample.Starting.
	// Default 120 s. Must be >= 0.
	StartupGrace time.Duration
	// MaxUpStep caps one UP at count+MaxUpStep workers; 0 (the default)
	// leaves the proportional step uncapped. 1 is the one-at-a-time step
	// of the round before Ramen 0.7.5 (its notes: one-at-a-time steps and
	// a single 120 s cooldown took 309 s to reach 3 on GKE), kept to
	// compare designs, e.g. in `scaleproof sim`. Must be >= 0.
	MaxUpStep int
}

// DefaultStepConfig returns the Ramen 0.7.5 defaults: high over 80 %, up at a
// mean of 50 %, low under 30 %, 50 calls/s per worker, 3 low rounds, 30 s up
// cooldown, 120 s down cooldown, 120 s startup grace.
func DefaultStepConfig() StepConfig {
	return StepConfig{
		HighFraction:   0.8,
		MeanUpFraction: 0.5,
		LowFraction:    0.3,
		TargetRPS:      50,
		LowRounds:      3,
		UpCooldown:     30 * time.Second,
		DownCooldown:   120 * time.Second,
		StartupGrace:   120 * time.Second,
	}
}

// Validate reports every field out of its range, joined into one error.
func (c StepConfig) Validate() error {
	var errs []error
	bad := func(field string, v any, want string) {
		errs = append(errs, fmt.Errorf("autoscaler: step config %s = %v, want %s", field, v, want))
	}
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	if !finite(c.HighFraction) || c.HighFraction <= 0 || c.HighFraction > 1 {
		bad("HighFraction", c.HighFraction, "in (0, 1]")
	}
	if !finite(c.MeanUpFraction) || c.MeanUpFraction <= 0 || c.MeanUpFraction > 1 {
		bad("MeanUpFraction", c.MeanUpFraction, "in (0, 1]")
	}
	if !finite(c.LowFraction) || c.LowFraction <= 0 || c.LowFraction >= 1 {
		bad("LowFraction", c.LowFraction, "in (0, 1)")
	} else if c.LowFraction >= c.HighFraction {
		bad("LowFraction", c.LowFraction, fmt.Sprintf("under HighFraction (%v)", c.HighFraction))
	}
	if !finite(c.TargetRPS) || c.TargetRPS <= 0 {
		bad("TargetRPS", c.TargetRPS, "> 0 and finite")
	}
	if c.LowRounds < 1 {
		bad("LowRounds", c.LowRounds, ">= 1")
	}
	if c.UpCooldown < 0 {
		bad("UpCooldown", c.UpCooldown, ">= 0")
	}
	if c.DownCooldown < 0 {
		bad("DownCooldown", c.DownCooldown, ">= 0")
	}
	if c.StartupGrace < 0 {
		bad("StartupGrace", c.StartupGrace, ">= 0")
	}
	if c.MaxUpStep < 0 {
		bad("MaxUpStep", c.MaxUpStep, ">= 0")
	}
	return errors.Join(errs...)
}

// Step decides one round for one zone. It is a pure function: it reads no
// clock (now is the round's time), does no I/O and does not modify st or obs.
//
// The returned state has Prev replaced by this round's reachable samples,
// LowStreak updated, and on UP or DOWN the new Count with LastChange = now
// and LowStreak = 0. A hold has To == From. An invalid config or zone state
// (Count or Max under 1) holds with the reason.
func Step(cfg StepConfig, st ZoneState, obs Observation, now time.Time) (Decision, ZoneState) {
	next := st
	next.Prev = reachable(obs.Workers)
	next.LowStreak = 0
	d := Decision{Action: ActionHold, From: st.Count, To: st.Count, At: now}
	hold := func(reason string) (Decision, ZoneState) {
		d.Reason = reason
		return d, next
	}

	pc := prepare(cfg)
	if pc.err != nil {
		return hold("invalid step config: " + strings.ReplaceAll(pc.err.Error(), "\n", "; "))
	}
	if st.Count < 1 || st.Max < 1 {
		return hold(fmt.Sprintf("invalid zone state: count %d, max %d", st.Count, st.Max))
	}
	th := pc.th
	z := observe(th, cfg, st, obs, now)
	if len(z.ready) == 0 {
		return hold("no ready worker" + z.notReadySummary())
	}
	if z.allLow() {
		next.LowStreak = max(st.LowStreak, 0) + 1
	}

	// UP.
	if triggers := z.upTriggers(th); len(triggers) > 0 {
		why := strings.Join(triggers, "; ")
		if st.Count >= st.Max {
			d.AtMaxUnderLoad = true
			return hold(fmt.Sprintf("at max %d under load: %s", st.Max, why))
		}
		if left := cooldownLeft(st.LastChange, cfg.UpCooldown, now); left > 0 {
			return hold(fmt.Sprintf("up cooldown: %s left; %s", left, why))
		}
		to := z.upTarget(th, st.Count, st.Max)
		if cfg.MaxUpStep > 0 {
			to = min(to, st.Count+cfg.MaxUpStep)
		}
		d.Action, d.To = ActionUp, to
		next.Count, next.LastChange, next.LowStreak = to, now, 0
		d.Reason = why
		return d, next
	}

	// DOWN, or the first thing that stands in its way.
	steady := func() string { return "steady: " + z.signals() }
	switch {
	case len(z.down) > 0 || z.missingDown > 0:
		return hold(z.downSummary() + ": no scale-in")
	case z.starting > 0:
		if z.hot != nil {
			return hold(fmt.Sprintf("%s, but %s on the way", z.highReason(th), plural(z.starting, "worker")))
		}
		return hold(fmt.Sprintf("%s starting: no scale-in", plural(z.starting, "worker")))
	case z.notLow != nil:
		return hold(fmt.Sprintf("%s; worker %s not low: %d/%d in flight >= %s",
			steady(), z.notLow.ID, inFlight(*z.notLow), z.notLow.Limit, th.lowPct))
	case st.Count <= 1:
		return hold(steady() + "; at the minimum of 1 worker")
	}
	low := fmt.Sprintf("%s low", plural(len(z.ready), "worker"))
	if next.LowStreak < cfg.LowRounds {
		return hold(fmt.Sprintf("%s for %d of %d rounds", low, next.LowStreak, cfg.LowRounds))
	}
	low = fmt.Sprintf("%s for %s", low, plural(next.LowStreak, "round"))
	// After the DOWN the zone runs count-1 stable workers and its canaries.
	after, afterText := int64(st.Count-1)+int64(z.canaries), strconv.Itoa(st.Count-1)
	if z.canaries > 0 {
		afterText += " and the canary"
		if z.canaries > 1 {
			afterText = fmt.Sprintf("%d and %d canaries", st.Count-1, z.canaries)
		}
	}
	if over := z.overAfterDown(th, after); over != "" {
		return hold(fmt.Sprintf("%s; %s would %s", low, afterText, over))
	}
	if left := cooldownLeft(st.LastChange, cfg.DownCooldown, now); left > 0 {
		return hold(fmt.Sprintf("down cooldown: %s left; %s", left, low))
	}
	d.Action, d.To = ActionDown, st.Count-1
	d.Victims = victims(z.ready)
	next.Count, next.LastChange, next.LowStreak = st.Count-1, now, 0
	d.Reason = fmt.Sprintf("%s; %s would stay under the up thresholds", low, afterText)
	return d, next
}

// thresholds is a StepConfig's fractions and target in exact arithmetic.
// The rationals are shared between rounds (prepare) and never modified.
type thresholds struct {
	high, meanUp, low, target *big.Rat
	// highN/highD and lowN/lowD are high and low as fractions of uint64s
	// when they fit (small), for comparing a worker's in-flight share
	// without allocating; fit false when one does not.
	highN, highD, lowN, lowD uint64
	fit                      bool
	// The thresholds as reasons write them: "80%", "50%", "30%", "50".
	highPct, meanUpPct, lowPct, targetText string
	// high, meanUp and target as q, for comparing with the mean and rate.
	highQ, meanUpQ, targetQ q
}

// prepared is a config checked and its thresholds made exact, once.
type prepared struct {
	cfg StepConfig
	err error
	th  thresholds
}

// lastPrepared caches the last config's preparation: a console runs one
// config for every zone of a pass, so rounds share it. A config with a NaN
// never equals itself and is prepared anew each time (and is invalid).
var lastPrepared atomic.Pointer[prepared]

// prepare validates cfg and reads its thresholds as exact decimals.
func prepare(cfg StepConfig) *prepared {
	if p := lastPrepared.Load(); p != nil && p.cfg == cfg {
		return p
	}
	p := &prepared{cfg: cfg, err: cfg.Validate()}
	if p.err == nil {
		th := thresholds{
			high:   exactDecimal(cfg.HighFraction),
			meanUp: exactDecimal(cfg.MeanUpFraction),
			low:    exactDecimal(cfg.LowFraction),
			target: exactDecimal(cfg.TargetRPS),
		}
		th.highPct, th.meanUpPct, th.lowPct, th.targetText = pct(th.high), pct(th.meanUp), pct(th.low), trim(th.target)
		th.highQ, th.meanUpQ, th.targetQ = qRat(th.high), qRat(th.meanUp), qRat(th.target)
		if th.high.Num().IsUint64() && th.high.Denom().IsUint64() && th.low.Num().IsUint64() && th.low.Denom().IsUint64() {
			th.highN, th.highD = th.high.Num().Uint64(), th.high.Denom().Uint64()
			th.lowN, th.lowD = th.low.Num().Uint64(), th.low.Denom().Uint64()
			th.fit = true
		}
		p.th = th
	}
	lastPrepared.Store(p)
	return p
}

// cmpFrac compares a/b with c/d for b, d > 0, exactly (128-bit products).
func cmpFrac(a, b, c, d uint64) int {
	h1, l1 := bits.Mul64(a, d)
	h2, l2 := bits.Mul64(c, b)
	if h1 != h2 {
		return cmp.Compare(h1, h2)
	}
	return cmp.Compare(l1, l2)
}

// zone is what one round's observation says about a zone.
type zone struct {
	ready       []WorkerSample // reachable, ready, limit > 0
	down        []string       // IDs of the listed workers that are down
	missingDown int            // missing workers past the startup grace: down
	starting    int            // starting workers plus missing ones within the grace
	listed      int            // workers listed by discovery
	canaries    int            // ready canary workers (also in ready)
	// startingCanaries are canary workers among the starting ones.
	startingCanaries int

	sumIn, sumLimit int64 // over the ready workers
	// mean is Σ in-flight ÷ Σ limit over the capacity (see capacity); rate
	// is the calls/s per worker over it, nil when no worker has a rate.
	mean q
	rate *q

	hot    *WorkerSample // the high worker with the largest in-flight share, if any
	notLow *WorkerSample // the first ready worker that is not low, if any
}

func observe(th thresholds, cfg StepConfig, st ZoneState, obs Observation, now time.Time) zone {
	z := zone{listed: len(obs.Workers)}
	var hotShare *big.Rat                            // slow path: the hot worker's share
	var hotIn, hotLimit uint64                       // fast path: the hot worker's in-flight and limit
	rates := make([]rateSample, 0, len(obs.Workers)) // the ready workers that have a rate
	z.ready = make([]WorkerSample, 0, len(obs.Workers))
	for i := range obs.Workers {
		w := &obs.Workers[i]
		switch {
		case w.Reachable && w.Ready && w.Limit > 0:
			z.ready = append(z.ready, *w)
			if w.Canary {
				z.canaries++
			}
		case w.Starting:
			z.starting++
			if w.Canary {
				z.startingCanaries++
			}
			continue
		default:
			id := w.ID
			switch {
			case w.Down != "":
				id += ": " + w.Down
			case w.Reachable && w.Ready && w.Limit <= 0:
				id += fmt.Sprintf(": reports an in-flight limit of %d", w.Limit)
			}
			z.down = append(z.down, id)
			continue
		}
		in, limit := int64(inFlight(*w)), int64(w.Limit)
		z.sumIn += in
		z.sumLimit += limit
		if prev, ok := st.Prev[w.ID]; ok {
			if calls, dt, ok := rateParts(prev, *w); ok {
				rates = append(rates, rateSample{calls, dt})
			}
		}
		if th.fit {
			uin, ulim := uint64(in), uint64(limit)
			if cmpFrac(uin, ulim, th.highN, th.highD) > 0 && (z.hot == nil || cmpFrac(uin, ulim, hotIn, hotLimit) > 0) {
				z.hot, hotIn, hotLimit = w, uin, ulim
			}
			if z.notLow == nil && cmpFrac(uin, ulim, th.lowN, th.lowD) >= 0 {
				z.notLow = w
			}
			continue
		}
		share := big.NewRat(in, limit)
		if share.Cmp(th.high) > 0 && (z.hot == nil || share.Cmp(hotShare) > 0) {
			z.hot, hotShare = w, share
		}
		if z.notLow == nil && share.Cmp(th.low) >= 0 {
			z.notLow = w
		}
	}
	if obs.Missing > 0 {
		if !st.LastChange.IsZero() && now.Sub(st.LastChange) < cfg.StartupGrace {
			z.starting += obs.Missing
		} else {
			z.missingDown = obs.Missing
		}
	}
	if len(z.ready) > 0 {
		z.mean = z.meanOver(z.capacity())
		z.rate = z.rateOver(sumRates(rates), len(rates), z.capacity())
	}
	return z
}

// rateSample is one worker's calls over dt nanoseconds since its previous
// sample.
type rateSample struct {
	calls uint64
	dt    int64
}

// sumRates is Σ calls ÷ dt over the samples in calls per second, exactly:
// one fraction when every sample has the same dt and the calls add up
// within 64 bits (a round's samples usually do), else rational by rational.
func sumRates(rs []rateSample) q {
	if len(rs) == 0 {
		return q{n: 0, d: 1}
	}
	var total uint64
	same := true
	for _, r := range rs {
		var carry uint64
		total, carry = bits.Add64(total, r.calls, 0)
		if carry != 0 || r.dt != rs[0].dt {
			same = false
			break
		}
	}
	if same {
		return qFrac(total, uint64(time.Second), uint64(rs[0].dt), 1)
	}
	sum := new(big.Rat)
	for _, r := range rs {
		sum.Add(sum, rateOf(r))
	}
	return qRat(sum)
}

// allLow reports a round that counts towards a DOWN: every worker of the
// zone listed, reachable, ready and low, none starting or missing.
func (z zone) allLow() bool {
	return len(z.ready) > 0 && len(z.down) == 0 && z.missingDown == 0 && z.starting == 0 && z.notLow == nil
}

// capacity is the ready count of the UP rules: ready workers plus those on
// their way, a canary included.
func (z zone) capacity() int64 { return int64(len(z.ready) + z.starting) }

// meanOver is today's in-flight over n workers of the ready workers'
// average limit: Σin ÷ (n × Σlimit/ready). Over the capacity it is the zone's
// mean, each starting worker adding the average limit and nothing in flight.
func (z zone) meanOver(n int64) q {
	if z.sumIn >= 0 && z.sumLimit > 0 && n > 0 {
		return qFrac(uint64(z.sumIn), uint64(len(z.ready)), uint64(z.sumLimit), uint64(n))
	}
	num := new(big.Int).Mul(big.NewInt(z.sumIn), big.NewInt(int64(len(z.ready))))
	den := new(big.Int).Mul(big.NewInt(z.sumLimit), big.NewInt(n))
	return q{big: new(big.Rat).SetFrac(num, den)}
}

// rateOver is today's total rate spread over n workers, or nil when no
// worker has a rate. The total is the mean rate of the ready workers that
// have one times the ready count: a ready worker without a rate this round
// is taken to carry the average; starting workers carry nothing yet.
func (z zone) rateOver(sumRate q, rated int, n int64) *q {
	if rated == 0 {
		return nil
	}
	r := sumRate.mulFrac(int64(len(z.ready)), int64(rated)*n)
	return &r
}

// upTriggers returns a sentence for each UP trigger that fires. While workers
// are starting a high worker alone does not trigger: the capacity on its way
// will relieve it, and the mean and rate, which count that capacity, decide.
func (z zone) upTriggers(th thresholds) []string {
	var out []string
	if z.hot != nil && z.starting == 0 {
		out = append(out, z.highReason(th))
	}
	if z.mean.cmp(th.meanUpQ) >= 0 {
		out = append(out, fmt.Sprintf("mean in-flight %s >= %s", pct1(z.mean), th.meanUpPct))
	}
	if z.rate != nil && z.rate.cmp(th.targetQ) >= 0 {
		out = append(out, fmt.Sprintf("rate %s calls/s per worker >= %s", z.rate.float1(1), th.targetText))
	}
	return out
}

func (z zone) highReason(th thresholds) string {
	return fmt.Sprintf("worker %s high: %d/%d in flight > %s", z.hot.ID, inFlight(*z.hot), z.hot.Limit, th.highPct)
}

// upTarget is max(count+1, ceil(capacity × max(mean/meanUp, rate/target))
// − canaries), at most max. The ceiling is the workers the load asks for;
// the canaries among the capacity are some of them, so the count (stable
// workers) is that many fewer. Call it only with count < max.
//
// ceil(capacity × max(a, b)) is max(ceil(capacity × a), ceil(capacity × b)),
// and each is taken at most max + canaries, which changes nothing of the
// result.
func (z zone) upTarget(th thresholds, count, maxCount int) int {
	c := z.canaries + z.startingCanaries
	want := ceilTimesQuo(z.capacity(), z.mean, th.meanUpQ, maxCount+c)
	if z.rate != nil {
		want = max(want, ceilTimesQuo(z.capacity(), *z.rate, th.targetQ, maxCount+c))
	}
	return min(max(count+1, want-c), maxCount)
}

// ceilTimesQuo is min(ceil(c × x ÷ t), limit) for c >= 0, x >= 0, t > 0.
func ceilTimesQuo(c int64, x, t q, limit int) int {
	if x.big == nil && t.big == nil && c >= 0 {
		// (x.n × t.d × c) ÷ (x.d × t.n), in 128 bits when it fits.
		if h1, l1 := bits.Mul64(x.n, t.d); h1 == 0 {
			hi, lo := bits.Mul64(l1, uint64(c))
			if dh, den := bits.Mul64(x.d, t.n); dh == 0 && hi < den {
				v, rem := bits.Div64(hi, lo, den)
				if rem != 0 {
					v++ // v < 2^64: v <= (2^64-1) since hi < den
				}
				if v >= uint64(limit) {
					return limit
				}
				return int(v)
			}
		}
	}
	f := new(big.Rat).Quo(x.rat(), t.rat())
	want := ceil(f.Mul(f, new(big.Rat).SetInt64(c)))
	if want.Cmp(big.NewInt(int64(limit))) >= 0 {
		return limit
	}
	return int(want.Int64())
}

// overAfterDown spreads today's in-flight and rate over n workers of the
// average limit (n counts the canary: it stays) and returns which UP
// threshold they would reach, or "" when they stay under all three. A ready
// worker without a rate this round is taken to carry the average rate.
func (z zone) overAfterDown(th thresholds, n int64) string {
	mean := z.meanOver(n)
	if mean.cmp(th.meanUpQ) >= 0 {
		return fmt.Sprintf("sit at mean in-flight %s >= %s", pct1(mean), th.meanUpPct)
	}
	// per worker: Σin/n against high × Σlimit/ready, i.e. the mean against high.
	if mean.cmp(th.highQ) > 0 {
		return fmt.Sprintf("carry %s in flight each > %s of the average limit", ratio1(z.sumIn, n), th.highPct)
	}
	if z.rate != nil { // no worker is starting here: z.rate is over the ready workers
		r := z.rate.mulFrac(int64(len(z.ready)), n)
		if r.cmp(th.targetQ) >= 0 {
			return fmt.Sprintf("carry %s calls/s each >= %s", r.float1(1), th.targetText)
		}
	}
	return ""
}

func (z zone) signals() string {
	s := "mean in-flight " + pct1(z.mean)
	if z.rate != nil {
		return s + ", " + z.rate.float1(1) + " calls/s per worker"
	}
	return s + ", no rate yet"
}

func (z zone) downSummary() string {
	names := z.down
	const show = 5
	if len(names) > show {
		names = append(slices.Clip(names[:show]), fmt.Sprintf("%d more", len(names)-show))
	}
	if z.missingDown > 0 {
		names = append(slices.Clip(names), fmt.Sprintf("%d missing", z.missingDown))
	}
	return fmt.Sprintf("%d of %d workers down (%s)",
		len(z.down)+z.missingDown, z.listed+z.missingDown, strings.Join(names, ", "))
}

func (z zone) notReadySummary() string {
	var parts []string
	if n := len(z.down) + z.missingDown; n > 0 {
		parts = append(parts, fmt.Sprintf("%d down", n))
	}
	if z.starting > 0 {
		parts = append(parts, fmt.Sprintf("%d starting", z.starting))
	}
	if len(parts) == 0 {
		return " (no worker listed)"
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// rateParts returns cur's calls and the nanoseconds since prev, ok false
// when there is no rate: Δt <= 0, the total went backwards, or the worker
// was re-created (both samples carry a Created time and they differ), i.e.
// a restart.
func rateParts(prev, cur WorkerSample) (calls uint64, dt int64, ok bool) {
	d := cur.SampledAt.Sub(prev.SampledAt)
	if d <= 0 || cur.CallsTotal < prev.CallsTotal {
		return 0, 0, false
	}
	if !prev.Created.IsZero() && !cur.Created.IsZero() && !prev.Created.Equal(cur.Created) {
		return 0, 0, false
	}
	return cur.CallsTotal - prev.CallsTotal, int64(d), true
}

// rateOf is one sample's calls per second: Δcalls × 1e9 ÷ Δt in ns.
func rateOf(r rateSample) *big.Rat {
	calls := new(big.Int).SetUint64(r.calls)
	calls.Mul(calls, big.NewInt(int64(time.Second)))
	return new(big.Rat).SetFrac(calls, big.NewInt(r.dt))
}

// victims orders the stable workers fewest in flight first, ties newest
// first, then by ID. A canary is never a victim: it is not part of the count.
func victims(ws []WorkerSample) []string {
	ws = slices.DeleteFunc(slices.Clone(ws), func(w WorkerSample) bool { return w.Canary })
	slices.SortFunc(ws, func(a, b WorkerSample) int {
		return cmp.Or(
			cmp.Compare(inFlight(a), inFlight(b)),
			b.Created.Compare(a.Created),
			strings.Compare(a.ID, b.ID))
	})
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	return ids
}

// reachable returns a new map of the round's reachable samples by ID.
func reachable(ws []WorkerSample) map[string]WorkerSample {
	m := make(map[string]WorkerSample, len(ws))
	for _, w := range ws {
		if w.Reachable {
			m[w.ID] = w
		}
	}
	return m
}

// cooldownLeft is how long the cooldown still runs, rounded up to whole
// seconds; 0 when it is over or there was no change.
func cooldownLeft(last time.Time, cooldown time.Duration, now time.Time) time.Duration {
	if last.IsZero() {
		return 0
	}
	left := last.Add(cooldown).Sub(now)
	if left <= 0 {
		return 0
	}
	return (left + time.Second - 1).Truncate(time.Second)
}

// inFlight is a sample's in-flight count; a negative report counts as 0.
func inFlight(w WorkerSample) int { return max(w.InFlight, 0) }

// exactDecimal returns f as the shortest decimal that reads back as f.
// f must be finite (Validate).
func exactDecimal(f float64) *big.Rat {
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return r
}

// ceil rounds a non-negative rational up to an integer.
func ceil(r *big.Rat) *big.Int {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// pct formats a threshold fraction as a percentage without useless decimals
// ("80%", "12.5%"); pct1 formats a measured one with one decimal ("90.6%").
func pct(r *big.Rat) string { return trim(new(big.Rat).Mul(r, big.NewRat(100, 1))) + "%" }
func pct1(r q) string       { return r.float1(100) + "%" }

// float1 is (x × scale).FloatString(1): one decimal, the last rounded to
// nearest, halves away from zero. In 64-bit integers when x fits (the same
// digits), else with big.Rat.
func (x q) float1(scale uint64) string {
	if x.big == nil && scale <= math.MaxUint64/10 {
		// v = n × scale × 10 ÷ d, in 128 bits; the quotient must fit in 64.
		if hi, lo := bits.Mul64(x.n, scale*10); hi < x.d {
			v, rem := bits.Div64(hi, lo, x.d)
			// half away from zero: up when 2 × rem >= d
			if h2, l2 := bits.Mul64(rem, 2); h2 > 0 || l2 >= x.d {
				v++
			}
			return strconv.FormatUint(v/10, 10) + "." + strconv.FormatUint(v%10, 10)
		}
	}
	r := x.rat()
	if scale != 1 {
		r = new(big.Rat).Mul(r, new(big.Rat).SetInt64(int64(scale)))
	}
	return r.FloatString(1)
}

// q is a rational >= 0 as the step policy's mean and rate are: n/d in 64-bit
// integers when it fits (big nil; not reduced, only its value counts), else
// big. Every operation is exact either way.
type q struct {
	n, d uint64
	big  *big.Rat
}

// qFrac is (a × b) ÷ (c × d) for c, d > 0.
func qFrac(a, b, c, d uint64) q {
	if hn, ln := bits.Mul64(a, b); hn == 0 {
		if hd, ld := bits.Mul64(c, d); hd == 0 {
			return q{n: ln, d: ld}
		}
	}
	num := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b))
	den := new(big.Int).Mul(new(big.Int).SetUint64(c), new(big.Int).SetUint64(d))
	return q{big: new(big.Rat).SetFrac(num, den)}
}

// qRat is r as a q.
func qRat(r *big.Rat) q {
	if r.Sign() >= 0 && r.Num().IsUint64() && r.Denom().IsUint64() {
		return q{n: r.Num().Uint64(), d: r.Denom().Uint64()}
	}
	return q{big: r}
}

// rat is x as a big.Rat (shared when x is big: do not modify it).
func (x q) rat() *big.Rat {
	if x.big != nil {
		return x.big
	}
	return new(big.Rat).SetFrac(new(big.Int).SetUint64(x.n), new(big.Int).SetUint64(x.d))
}

func (x q) cmp(y q) int {
	if x.big == nil && y.big == nil {
		return cmpFrac(x.n, x.d, y.n, y.d)
	}
	return x.rat().Cmp(y.rat())
}

// mulFrac is x × a ÷ b for a >= 0, b > 0.
func (x q) mulFrac(a, b int64) q {
	if x.big == nil && a >= 0 && b > 0 {
		if hn, ln := bits.Mul64(x.n, uint64(a)); hn == 0 {
			if hd, ld := bits.Mul64(x.d, uint64(b)); hd == 0 {
				return q{n: ln, d: ld}
			}
		}
	}
	return q{big: new(big.Rat).Mul(x.rat(), big.NewRat(a, b))}
}

// trim formats r with up to 6 decimals and no trailing zeros.
func trim(r *big.Rat) string {
	s := r.FloatString(6)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func ratio1(a, b int64) string { return qRat(big.NewRat(a, b)).float1(1) }

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
