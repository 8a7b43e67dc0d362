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

// spikeProfile is the staged load under p (quick divides every time by 10).
func spikeProfile(p Profile) load.Profile {
	lp := load.RampingVUs(SpikeStartVUs, SpikeStages()...).Scale(timeScale(p))
	lp.GracefulStop, lp.GracefulRampDown, lp.ThinkTime = p.GracefulStop, p.GracefulStop, p.ThinkTime
	return lp
}

// Spike: the staged profile of Grafana's post on autoscaling Loki queries with KEDA with its two spikes against a zone with
// the run's policy (step or hpa). It records the replicas, the signal (the
// zone's query on the Prometheus of the run) and the threshold every sample
// ("signal" records), and passes when the replicas follow the signal within
// one polling interval plus the stabilization window (judgeFollow), the
// zone comes back to 1 after the load, no call answers 5xx and the
// console's /readyz stays 200. An hpa zone is judged on the signal the
// autoscaler saw: the console's query rounds (the value its query read, at
// the round's own time, from its policy status; "hpa_round" records), not
// the harness's own later reading of the query, and the hpa facts
// (hpafacts.go) hold on them.
func Spike() Scenario {
	return Scenario{
		Name:  "spike",
		Title: "staged load with two spikes (k6 stages of Grafana's post on autoscaling Loki queries with KEDA): replicas follow the signal",
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			h := HPAFor(p)
			return spikeProfile(p).TotalDuration() + h.InflightMaxAge + h.Window + h.StabilizationDown + 2*h.PollingInterval
		},
		Flow:  spikeFlow,
		Needs: needsPrometheus,
	}
}

// needsPrometheus refuses a run without a Prometheus that scrapes the edge
// (spike's signal).
func needsPrometheus(e *Env) error {
	if e.Endpoints.PrometheusURL == "" {
		return errors.New("spike needs a Prometheus that scrapes the edge (the signal): " +
			"run with --prometheus auto (prometheus on PATH: make deps-prometheus) or --prometheus URL")
	}
	return nil
}

// spikeFlow is spike on any world: the staged load against a zone at
// SpikeMax, the signal watched from the load's start (World.WatchSignal)
// and judged once the zone is back at 1.
func spikeFlow(ctx context.Context, w World) error {
	if err := w.CreateZone(ctx, SpikeMax); err != nil {
		return err
	}
	sig, err := w.WatchSignal(ctx)
	if err != nil {
		return err
	}
	defer sig.Stop()
	lp := spikeProfile(w.Profile())
	w.Phase(fmt.Sprintf("staged load: %d → 50 → 100 → 50 → 100 → 50 → 0 VUs over %s", SpikeStartVUs, lp.TotalDuration()))
	l := w.LoadProfile(ctx, lp)
	l.Wait()
	if err := l.Err(); err != nil {
		return err
	}
	record(w, FactScaledUnderSpikes(w.Samples()))
	WaitBackTo1(ctx, w)
	CheckBounds(w, SpikeMax)
	sig.Judge(ctx)
	return nil
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
	stopRec    context.CancelFunc
	recDone    chan struct{}
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
	g := &spikeSignal{s: s, q: q, recDone: make(chan struct{})}
	g.rec = &signalRecorder{s: s, q: q, query: ExpandQuery(query, e.Endpoints.Group, s.Zone),
		threshold: band.Threshold, emptyZero: emptyZero, min: band.Min, max: band.Max, policy: cmp.Or(s.policy.Policy, PolicyStep)}
	var rctx context.Context
	rctx, g.stopRec = context.WithCancel(ctx)
	go func() { defer close(g.recDone); g.rec.run(rctx, e.Profile.SampleInterval) }()
	g.rounds, g.stopRounds = s.startRounds(ctx)
	band.From = s.now()
	g.band = band
	return g, nil
}

func (g *spikeSignal) Stop() {
	g.once.Do(func() {
		g.stopRec()
		<-g.recDone
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
		checked, band.Threshold, source, len(bad), listFirst(bad, 5))
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
			if r := bh.ScaleUp; r != nil {
				if r.StabilizationWindowSeconds != nil {
					up = *r.StabilizationWindowSeconds
				}
				if r.Tolerance != nil {
					b.TolUp = *r.Tolerance
				}
			}
			if r := bh.ScaleDown; r != nil {
				if r.StabilizationWindowSeconds != nil {
					down = *r.StabilizationWindowSeconds
				}
				if r.Tolerance != nil {
					b.TolDown = *r.Tolerance
				}
			}
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

func listFirst(lines []string, n int) string {
	if len(lines) == 0 {
		return ""
	}
	more := ""
	if len(lines) > n {
		more = fmt.Sprintf("; and %d more", len(lines)-n)
		lines = lines[:n]
	}
	return ": " + strings.Join(lines, "; ") + more
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
	peak := 0
	for _, smp := range samples {
		if smp.Err == "" {
			peak = max(peak, smp.Count)
		}
	}
	return *fact("scaled up under the spikes", peak >= 2, "peak count %d", peak)
}
