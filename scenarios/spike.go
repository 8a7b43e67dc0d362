package scenarios

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// SpikeMax is the spike scenario's max_count. At the top of Grafana's post on autoscaling Loki queries with KEDA's
// spikes (100 VUs) the signal, the p75 of the zone's in-flight calls over
// the query's window, reads about 90, and a threshold of 24 calls per
// replica asks for ceil(90 / 24) = 4 replicas: the zone sits at its max
// there, and the harness reports how long.
const SpikeMax = 4

// SpikeStartVUs and SpikeStages are the k6 stages of Grafana's post on autoscaling Loki queries with KEDA at the
// published scale: 5 → 50 VUs over 2 min, 50 for 1 min, 50 → 100 in 30 s
// and back to 50 in 30 s, the spike again, 50 → 0 over 2 min.
const SpikeStartVUs = 5

// SpikeStages returns the stages (published times; Spike scales them).
func SpikeStages() []load.Stage {
	return []load.Stage{
		{Duration: 2 * time.Minute, Target: 50},
		{Duration: time.Minute, Target: 50},
		{Duration: 30 * time.Second, Target: 100},
		{Duration: 30 * time.Second, Target: 50},
		{Duration: 30 * time.Second, Target: 100},
		{Duration: 30 * time.Second, Target: 50},
		{Duration: 2 * time.Minute, Target: 0},
	}
}

// spikeProfile is the post's k6 stages (SpikeStages) under p: times
// scaled by the profile's SpikeScale (a target profile's; the console's
// profiles scale by timeScale: quick divides every time by 10) and the VU
// targets by its SpikeVUScale when set (at 1, 5 → 50 VUs over 2 min, 50
// for 1 min, two spikes to 100 of 30 s up and 30 s down, 50 → 0 over
// 2 min: 7 min).
func spikeProfile(p Profile) load.Profile {
	start, stages := SpikeStartVUs, SpikeStages()
	if v := p.SpikeVUScale; v > 0 && v != 1 {
		start = max(1, int(math.Round(float64(start)*v)))
		for i := range stages {
			stages[i].Target = int(math.Round(float64(stages[i].Target) * v))
		}
	}
	scale := p.SpikeScale
	if scale == 0 {
		scale = timeScale(p)
	}
	lp := load.RampingVUs(start, stages...).Scale(scale)
	lp.GracefulStop, lp.GracefulRampDown, lp.ThinkTime = p.GracefulStop, p.GracefulStop, p.ThinkTime
	return lp
}

// backMargin is what FactBackToMin allows past the contract's bound after
// the load's end: one metric resolution for the signal to show the end and
// one sync period for the controller to read it (a target profile's; 0 on
// the console's).
func backMargin(p Profile) time.Duration { return p.MetricResolution + p.SyncPeriod }

// backWait is how long after the load's end the count may take to come
// back to min: the back-to-min contract's Bound when the world promises
// it (else the profile's stabilization window), plus backMargin.
func backWait(p Profile, back target.Contract) time.Duration {
	if back.Applies {
		return back.Bound + backMargin(p)
	}
	return p.Stabilization + backMargin(p)
}

// Spike: the post's k6 stages (ramp up, hold, two spikes, ramp down;
// spikeProfile) on any world, from a zone at count 1 with max SpikeMax (the
// console's own and its model) or a target's count at rest. Every sample
// is recorded (on a target a timeline point: time, the load's VUs and
// in-flight, count, ready, desiredReplicas, bounds and metric).
//
// The console's own zone and its model record the signal from the load's
// start (World.WatchSignal: the zone's query on the run's Prometheus, and
// an hpa zone's query rounds as its console reports them) and judge, once
// the load has ended: the zone scaled up under the spikes, comes back to 1
// and stays within 1..SpikeMax, the signal was recorded and the replicas
// followed it (judgeFollow; an hpa zone on the signal its autoscaler saw,
// with the hpa facts of hpafacts.go on its rounds). A target is judged on
// its contract facts instead (they count from the VU stages' times, which
// presumes a load that asks for a scale-up by the first ramp's end and a
// count at rest before it; the console's zone is judged on its signal):
//   - the count is above min within the contract's Bound of the end of the
//     first ramp (or of the autoscaler's own first reading of its metric
//     above its target, when later), at a reading no later than Bound plus
//     one sample interval (FactScalesUp);
//   - every reading within min and max (FactWithinBounds);
//   - no step down before the contract's Bound has passed since the latest
//     drop of the load's VU target at or before it (FactNoEarlyScaleDown,
//     earlyScaleDowns);
//   - the count back at min within Bound plus backMargin of the load's end
//     (FactBackToMin).
func Spike() Scenario {
	return Scenario{
		Name:  "spike",
		Title: spikeTitle,
		TitleFor: func(p Profile) string {
			if p.SpikeScale != 0 { // a target profile: the contract facts
				return "the k6 stages of Grafana's post (ramp up, hold, two spikes, ramp down): up, within bounds, no early scale-down, back to min"
			}
			return spikeTitle
		},
		Facts: spikeFacts,
		Expected: func(p Profile, c target.Contracts) time.Duration {
			if c != nil {
				return spikeProfile(p).TotalDuration() + backWait(p, c[target.FactBackToMin])
			}
			h := HPAFor(p)
			return spikeProfile(p).TotalDuration() + h.InflightMaxAge + h.Window + h.StabilizationDown + 2*h.PollingInterval
		},
		Flow:  spikeFlow,
		Needs: needsPrometheus,
	}
}

const spikeTitle = "staged load with two spikes (k6 stages of Grafana's post on autoscaling Loki queries with KEDA): replicas follow the signal"

// spikeFacts are the contract facts spike judges.
var spikeFacts = []target.Fact{target.FactScalesUp, target.FactWithinBounds, target.FactNoEarlyScaleDown, target.FactBackToMin}

// needsPrometheus refuses a run without a Prometheus that scrapes the edge
// (spike's signal on the console's own zone; a target is judged on its
// own readings).
func needsPrometheus(e *Env) error {
	if e.Target == nil && e.Endpoints.PrometheusURL == "" {
		return errors.New("spike needs a Prometheus that scrapes the edge (the signal): " + prometheusHint)
	}
	return nil
}

// spikeFlow is spike on any world (Spike).
func spikeFlow(ctx context.Context, w World) error {
	if err := w.CreateZone(ctx, SpikeMax); err != nil {
		return err
	}
	var sig Signal
	if w.ConsoleAPI() {
		var err error
		if sig, err = w.WatchSignal(ctx); err != nil {
			return err
		}
		defer sig.Stop()
	}
	p := w.Profile()
	lp := spikeProfile(p)
	total := lp.TotalDuration()
	vus := []string{fmt.Sprint(lp.StartVUs)}
	for _, st := range lp.Stages {
		if t := fmt.Sprint(st.Target); t != vus[len(vus)-1] {
			vus = append(vus, t)
		}
	}
	w.Phase(fmt.Sprintf("staged load: %s VUs over %s", strings.Join(vus, " → "), total))
	from := w.Now()
	l := w.LoadProfile(ctx, lp)
	if !w.ConsoleAPI() { // a target is read only while the scenario waits: through the load, at most its length
		iv := p.SampleInterval
		if _, err := w.WaitFor(ctx, "the staged load's end", total+p.GracefulStop+2*iv, func(target.Sample) bool { return l.Done() }); err != nil && !isTimeout(err) {
			return err
		}
		l.Stop()
	}
	l.Wait()
	if err := l.Err(); err != nil {
		return err
	}
	if st := l.Start(); st.After(from) { // a sharded load's pods begin a lead after the call
		from = st
	}
	end := from.Add(total)
	if w.ConsoleAPI() {
		record(w, FactScaledUnderSpikes(w.Samples()))
		WaitBackTo1(ctx, w)
		CheckBounds(w, SpikeMax)
		sig.Judge(ctx)
		return nil
	}
	return judgeSpikeContract(ctx, w, lp, from, end)
}

// judgeSpikeContract waits, at most backWait after end (the load's end),
// for the count to be back at min, and judges spike's contract facts
// (Spike) over the good samples since from (the load's start), lp's load.
func judgeSpikeContract(ctx context.Context, w World, lp load.Profile, from, end time.Time) error {
	p := w.Profile()
	w.Phase("load ended: waiting for the count to come back to min")
	back, backErr := backAtMin(ctx, w, end, backWait(p, w.Contract(target.FactBackToMin)))
	if backErr != nil && !isTimeout(backErr) {
		return backErr
	}
	samples := goodIn(w.Samples(), from, time.Time{})
	// the bound counts from the end of the first ramp, or from the
	// autoscaler's own reading of its metric above the target when that
	// came later
	judgeScalesUp(w, from, from.Add(lp.Stages[0].Duration), fmt.Sprintf("the first ramp reached %d VUs", lp.Stages[0].Target))
	judgeWithinBounds(w, samples)
	if w.Applies(target.FactNoEarlyScaleDown) {
		b := w.Contract(target.FactNoEarlyScaleDown).Bound
		drops := loadDrops(from, lp)
		early := earlyScaleDowns(samples, drops, b, w.Since)
		downs := 0
		for _, c := range countChanges(samples) {
			if c.To < c.From {
				downs++
			}
		}
		w.Check(string(target.FactNoEarlyScaleDown), downs > 0 && len(early) == 0,
			"%d steps down seen, %d before %s had passed since the load's latest drop (drops at %s)%s",
			downs, len(early), b, timesSince(drops, w.Since), listed(early))
	}
	if w.Applies(target.FactBackToMin) {
		b := w.Contract(target.FactBackToMin).Bound
		w.Check(string(target.FactBackToMin), backErr == nil, "%s (bound %s + %s margin from the load's end at t=%.1fs)",
			errOr(backErr, "count back at min %d %.1f s after the load's end", back.Min, back.At.Sub(end).Seconds()), b, backMargin(p), w.Since(end))
	}
	return nil
}

// backAtMin waits, at most wait after end (the load's end), for a good
// reading with the count at min; once that time has passed it reads once.
// The error wraps errTimeout when the count is not at min.
func backAtMin(ctx context.Context, w World, end time.Time, wait time.Duration) (target.Sample, error) {
	atMin := func(x target.Sample) bool { return x.Count == x.Min }
	if left := end.Add(wait).Sub(w.Now()); left > 0 {
		return w.WaitFor(ctx, "the count back at min", left, atMin)
	}
	x := w.SampleNow(ctx)
	if x.Err != "" || !atMin(x) {
		return x, fmt.Errorf("%w: count %d, min %d once the load had ended", errTimeout, x.Count, x.Min)
	}
	return x, nil
}

// timesSince lists ts as seconds from the scenario's start (since).
func timesSince(ts []time.Time, since func(time.Time) float64) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("t=%.1fs", since(t))
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// Signal is what a zone's autoscaler scales on, recorded from
// World.WatchSignal on.
type Signal interface {
	// Judge ends the recording and adds the signal's facts: it was
	// recorded, and the replicas followed it (and an hpa zone's facts on
	// its query rounds).
	Judge(ctx context.Context)
	// Stop ends the recording; later calls do nothing.
	Stop()
}

// spikeSignal is the console's Signal: the harness's own readings of the
// zone's query on the run's Prometheus and, for an hpa zone, the console's
// query rounds (the value its query read, at the round's own time, from its
// policy status), on which an hpa zone is judged.
type spikeSignal struct {
	s          *Scope
	band       followBand
	q          *promQuerier
	rec        *signalRecorder
	stopRec    func() // ends rec (goUntilStopped)
	rounds     *roundRecorder
	stopRounds func() []consoleclient.PolicyRound
	once       sync.Once
}

// WatchSignal starts recording the zone's signal (World); it needs a
// Prometheus that scrapes the edge (needsPrometheus).
func (s *Scope) WatchSignal(ctx context.Context) (Signal, error) {
	e := s.env
	band, query, emptyZero := spikeBand(e.Profile, s.policy)
	q, err := newPromQuerier(e.Endpoints.PrometheusURL)
	if err != nil {
		return nil, err
	}
	g := &spikeSignal{s: s, q: q}
	g.rec = &signalRecorder{s: s, q: q, query: ExpandQuery(query, e.Endpoints.Group, s.Zone),
		threshold: band.Threshold, emptyZero: emptyZero, min: band.Min, max: band.Max, policy: cmp.Or(s.policy.Policy, PolicyStep)}
	g.stopRec = goUntilStopped(ctx, func(ctx context.Context) { g.rec.run(ctx, e.Profile.SampleInterval) })
	g.rounds, g.stopRounds = s.startRounds(ctx)
	band.From = s.Now()
	g.band = band
	return g, nil
}

func (g *spikeSignal) Stop() {
	g.once.Do(func() {
		g.stopRec()
		g.stopRounds()
		g.q.close()
	})
}

func (g *spikeSignal) Judge(ctx context.Context) {
	g.Stop()
	if g.rounds != nil {
		rounds, polls, failed := g.rounds.snapshot()
		JudgeRounds(ctx, g.s, g.s.policy, g.band.From, g.s.Start, rounds, polls, failed)
		return
	}
	judgeSignal(g.s, g.band, g.rec.snapshot(), "the harness's own readings of "+g.rec.query)
}

// JudgeRounds adds an hpa zone's spike facts on w from the query rounds its
// console reported (rounds, oldest first, gathered by polls reads of its
// policy status of which failed failed): the hpa facts (hpafacts.go) on
// the rounds and the zone's audit trail since since, and the signal's
// facts (judgeSignal) on the values the rounds read, in the band of v, the
// zone's policy as the console resolved it, from from (the load's start).
func JudgeRounds(ctx context.Context, w World, v consoleclient.PolicyView, from, since time.Time, rounds []consoleclient.PolicyRound, polls, failed int) {
	rules, _ := HPARulesOf(v)
	judgeHPARounds(ctx, w, rules, rounds, polls, failed, since)
	band, _, _ := spikeBand(w.Profile(), v)
	band.From = from
	judgeSignal(w, band, roundPoints(rounds), "the console's query rounds (the value it read, at its round times)")
}

// JudgeReadings adds a step zone's spike facts on w from readings of its
// signal (query, read every sample, oldest first): judgeSignal in the band
// of v, the zone's policy as the console resolved it, from from (the
// load's start).
func JudgeReadings(w World, v consoleclient.PolicyView, from time.Time, readings []SignalPoint, query string) {
	band, _, _ := spikeBand(w.Profile(), v)
	band.From = from
	judgeSignal(w, band, readings, "the harness's own readings of "+query)
}

// judgeSignal adds the signal's facts on w: "signal recorded" (at least
// 90 % of the readings answered) and "replicas follow the signal" (every
// sample of the count within the band of the readings before it,
// judgeFollow). source names the readings in the detail.
func judgeSignal(w World, band followBand, points []SignalPoint, source string) {
	ok := 0
	for _, p := range points {
		if p.OK {
			ok++
		}
	}
	if !w.Check("signal recorded", len(points) > 0 && ok*10 >= len(points)*9,
		"%d of %d readings answered (%s)", ok, len(points), source) {
		return
	}
	checked, bad := judgeFollow(band, points, w.Samples())
	w.Check(fmt.Sprintf("replicas follow the signal within %s up, %s down", band.WindowUp, band.WindowDown),
		checked > 0 && len(bad) == 0, "%d samples checked against threshold %g on %s, %d outside the band%s",
		checked, band.Threshold, source, len(bad), listed(bad))
}

// spikeBand is the judgement's band for the zone's policy. For hpa it is
// the zone's own settings as the console resolved them: threshold,
// tolerances, min and max, and windows of one effective polling interval
// (the polling interval rounded up to whole scheduler intervals) plus the
// stabilization window of each direction. For step it is the step policy's
// thresholds in the signal's units: an UP is due once the signal is over
// 75 % of the zone's in-flight capacity (step's mean trigger is 50 %), within
// one scheduler interval plus the up cooldown; a DOWN only once it is under
// 30 % (step's "low"), one step per down cooldown and LowRounds rounds. The
// step policy reads the load itself, which the signal shows late (a summary
// over InflightMaxAge, then max_over_time over Window), so a step zone may
// lead the signal by that lag.
func spikeBand(p Profile, v consoleclient.PolicyView) (b followBand, query string, emptyZero bool) {
	h := HPAFor(p)
	slack := 2 * p.SampleInterval
	if v.Policy == PolicyHPA && v.HPA != nil {
		spec := v.HPA
		poll := h.PollingInterval
		if spec.PollingIntervalSeconds != nil {
			poll = time.Duration(*spec.PollingIntervalSeconds * float64(time.Second))
		}
		pollEff := time.Duration(math.Ceil(float64(poll)/float64(p.SchedulerInterval))) * p.SchedulerInterval
		b = followBand{Threshold: spec.Threshold, TolUp: 0.1, TolDown: 0.1, Min: 1, Max: v.EffectiveMaxReplicas}
		if spec.MinReplicas != nil {
			b.Min = *spec.MinReplicas
		}
		if b.Max == 0 {
			b.Max = SpikeMax
		}
		up, down := 0.0, h.StabilizationDown.Seconds()
		if bh := spec.Behavior; bh != nil {
			stabilization(bh.ScaleUp, &up, &b.TolUp)
			stabilization(bh.ScaleDown, &down, &b.TolDown)
		}
		b.WindowUp = pollEff + time.Duration(up*float64(time.Second)) + slack
		b.WindowDown = pollEff + time.Duration(down*float64(time.Second)) + slack
		return b, spec.Query, spec.ReadEmptyAsZero
	}
	const lowFraction, lowRounds = 0.3, 3 // Ramen 0.7.5: low under 30 %, 3 rounds in a row
	b = followBand{Threshold: h.Threshold, TolUp: 0.1, Min: 1, Max: SpikeMax}
	b.TolDown = 1 - lowFraction*float64(p.MaxInflight)/h.Threshold
	b.WindowUp = p.SchedulerInterval + p.UpCooldown + slack
	b.WindowDown = time.Duration(SpikeMax-1)*(p.DownCooldown+lowRounds*p.SchedulerInterval) + slack
	b.Lead = h.InflightMaxAge + h.Window + h.ScrapeInterval
	return b, h.Query, h.ReadEmptyAsZero
}

// followBand is what "replicas follow the signal" means for one zone: at
// every sample the count lies within [lo, hi], where lo is the lowest count
// a round could keep for any signal reading of the last WindowUp,
// ceil(signal ÷ (threshold × (1 + TolUp))), and hi the highest it could keep
// for any reading of the last WindowDown, max(ceil(signal ÷ threshold),
// floor(signal ÷ (threshold × (1 − TolDown)))), both clamped to [Min, Max].
// A policy that reads the load directly rather than the signal may run
// ahead of it: readings up to Lead after the sample count too (0 for hpa).
// Samples before From + WindowUp are not judged (no full window yet).
type followBand struct {
	Threshold            float64
	TolUp, TolDown       float64
	Min, Max             int
	WindowUp, WindowDown time.Duration
	Lead                 time.Duration
	From                 time.Time
}

func (b followBand) lo(v float64) int {
	return clampInt(int(math.Ceil(v/(b.Threshold*(1+b.TolUp)))), b.Min, b.Max)
}

func (b followBand) hi(v float64) int {
	n := int(math.Ceil(v / b.Threshold))
	if b.TolDown >= 1 {
		return b.Max
	}
	n = max(n, int(math.Floor(v/(b.Threshold*(1-b.TolDown)))))
	return clampInt(n, b.Min, b.Max)
}

// judgeFollow checks every count sample against the band; it returns how
// many samples it checked and a line per sample outside.
func judgeFollow(b followBand, signal []SignalPoint, counts []observe.Sample) (int, []string) {
	checked := 0
	var bad []string
	for _, c := range counts {
		if c.Err != "" || c.At.Before(b.From.Add(b.WindowUp)) {
			continue
		}
		lo, hi, nUp, nDown := b.Max, b.Min, 0, 0
		var vmin, vmax float64
		for _, p := range signal {
			if !p.OK || p.At.After(c.At.Add(b.Lead)) {
				continue
			}
			if !p.At.Before(c.At.Add(-b.WindowUp)) {
				if nUp == 0 || p.Value < vmin {
					vmin = p.Value
				}
				lo = min(lo, b.lo(p.Value))
				nUp++
			}
			if !p.At.Before(c.At.Add(-b.WindowDown)) {
				if nDown == 0 || p.Value > vmax {
					vmax = p.Value
				}
				hi = max(hi, b.hi(p.Value))
				nDown++
			}
		}
		if nUp == 0 {
			continue
		}
		checked++
		if c.Count < lo || c.Count > hi {
			bad = append(bad, fmt.Sprintf("t=%s count %d outside [%d, %d] (signal %.1f..%.1f)",
				c.At.Sub(b.From).Round(100*time.Millisecond), c.Count, lo, hi, vmin, vmax))
		}
	}
	return checked, bad
}

// roundPoints are the console's query rounds as signal points: each round's
// value at its time (a failed metric is a failed reading).
func roundPoints(rounds []consoleclient.PolicyRound) []SignalPoint {
	out := make([]SignalPoint, 0, len(rounds))
	for _, r := range rounds {
		p := SignalPoint{At: r.At, OK: r.Value != nil}
		if r.Value != nil {
			p.Value = *r.Value
		}
		out = append(out, p)
	}
	return out
}

// FactScaledUnderSpikes is spike's "scaled up under the spikes": the peak
// count of the readings that did not fail is at least 2.
func FactScaledUnderSpikes(samples []target.Sample) reports.Fact {
	peak := PeakCount(samples)
	return *fact("scaled up under the spikes", peak >= 2, "peak count %d", peak)
}
