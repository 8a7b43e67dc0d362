package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
)

// Calibration is a model fitted to a real run and how far the sim and the
// run are apart.
type Calibration struct {
	Source string
	Config Config // the fitted config
	// Fitted values and what they came from.
	Service        time.Duration // mean service time: limit × ready ÷ ok calls/s over saturated seconds
	ServiceSeconds int           // how many seconds it was fitted on
	ReadyDelay     time.Duration // ready delay base (decision to ready), fitted by simulation
	ReadyEvents    int           // how many real scale-ups it was fitted on
	RealReadyLagS  float64       // mean ready_s - decision_s of the real scale-ups
	SimReadyLagS   float64       // the same in the fitted sim
	Phase          time.Duration // the scheduler's first pass, fitted by simulation
	Real, Sim      Compared
	Unfitted       Compared // the sim with the profile's model, before fitting
	Runs           int      // simulated runs the fit took
}

// Compared is what calibration compares: the sustained scenario's times
// from its start and the 429 share of every scenario's calls.
type Compared struct {
	UpToMaxS float64 `json:"up_to_max_s"`
	BackTo1S float64 `json:"back_to_1_s"`
	Pct429   float64 `json:"pct_429"`
	CallsOK  int64   `json:"calls_ok"`
}

func compareOf(vs []reports.Verdict) Compared {
	c := Compared{UpToMaxS: -1, BackTo1S: -1}
	var tooMany, total int64
	for _, v := range vs {
		if v.Scenario == scenarios.Sustained().Name {
			c.UpToMaxS, c.BackTo1S = v.UpToMaxS, v.BackTo1S
		}
		tooMany += v.Calls.TooMany
		total += v.Calls.Total()
		c.CallsOK += v.Calls.OK
	}
	if total > 0 {
		c.Pct429 = 100 * float64(tooMany) / float64(total)
	}
	return c
}

// Calibrate fits the model's service time and ready delay, and the
// scheduler's phase, to a real run's results, then simulates the run's
// scenarios with the fit and compares. base gives everything else (start
// from NewConfig of the run's profile). The results must hold the
// per-second series of a saturated worker (max-1, or any second at one
// ready worker refusing calls) and at least one scale-up.
func Calibrate(ctx context.Context, res *reports.Results, base Config) (*Calibration, error) {
	cal := &Calibration{Source: res.Path, Real: compareOf(res.Verdicts)}
	if len(res.Verdicts) == 0 {
		return nil, errors.New("sim: calibrate: the results file has no verdict (an interrupted or empty run)")
	}
	var names []string
	for _, v := range res.Verdicts {
		if slices.Contains(simulated(), v.Scenario) {
			names = append(names, v.Scenario)
		}
	}
	base.Scenarios = names
	if res.Meta.Policy != "" {
		base.Policy = res.Meta.Policy
	}

	unfitted, err := Run(ctx, base)
	if err != nil {
		return nil, err
	}
	cal.Unfitted = compareOf(unfitted.Verdicts)
	cal.Runs++

	// Service time: in seconds where every ready worker is saturated (429s
	// answered, count == ready), each worker finishes limit calls per
	// service time. The first and last second of a load are partial.
	var okSum, workerSecs float64
	for i, s := range res.Seconds {
		if i == 0 || i == len(res.Seconds)-1 || res.Seconds[i-1].Scenario != s.Scenario || res.Seconds[i+1].Scenario != s.Scenario {
			continue
		}
		if s.Calls.TooMany > 0 && s.Ready > 0 && s.Count == s.Ready && s.VUs > s.Ready*base.Model.Limit && s.Calls.OK > 0 &&
			res.Seconds[i-1].Ready == s.Ready && res.Seconds[i+1].Ready == s.Ready {
			okSum += float64(s.Calls.OK)
			workerSecs += float64(s.Ready)
			cal.ServiceSeconds++
		}
	}
	if cal.ServiceSeconds == 0 {
		return nil, errors.New("sim: calibrate: no saturated second in the results (run max-1, or a load over one worker's limit)")
	}
	cal.Service = time.Duration(float64(base.Model.Limit) * workerSecs / okSum * float64(time.Second))
	base.Model.Service = Dist{Base: max(cal.Service-base.Model.RTT-base.Model.Service.Jitter, time.Millisecond), Jitter: base.Model.Service.Jitter}

	// Ready delay and phase: by simulation, against the real scale-ups'
	// ready lag and decision times.
	var lagSum float64
	for _, ev := range res.Events {
		if ev.To > ev.From && ev.ReadyS >= 0 {
			lagSum += ev.ReadyS - ev.DecisionS
			cal.ReadyEvents++
		}
	}
	if cal.ReadyEvents == 0 {
		return nil, errors.New("sim: calibrate: no scale-up with a ready time in the results")
	}
	cal.RealReadyLagS = lagSum / float64(cal.ReadyEvents)
	run := func(c Config) (*Report, error) {
		cal.Runs++
		return Run(ctx, c)
	}
	// The ready delay: its base moves the simulated lag one for one (up to
	// sampling); two passes of a secant are enough.
	lag := func(c Config) (float64, error) {
		rep, err := run(c)
		if err != nil {
			return 0, err
		}
		var sum float64
		n := 0
		for _, r := range rep.Records {
			if ev, ok := r.Data.(reports.ScaleEvent); ok && ev.To > ev.From && ev.ReadyS >= 0 {
				sum += ev.ReadyS - ev.DecisionS
				n++
			}
		}
		if n == 0 {
			return 0, errors.New("sim: calibrate: the simulated run has no scale-up")
		}
		return sum / float64(n), nil
	}
	for range 3 {
		got, err := lag(base)
		if err != nil {
			return nil, err
		}
		cal.SimReadyLagS = got
		d := time.Duration((cal.RealReadyLagS - got) * float64(time.Second))
		if d.Abs() < 100*time.Millisecond {
			break
		}
		base.Model.ReadyDelay.Base = max(base.Model.ReadyDelay.Base+d, 0)
	}
	cal.ReadyDelay = base.Model.ReadyDelay.Base
	// The phase: where the scheduler's passes fall in each scenario is
	// not in the results file; try phases across one interval and keep the
	// one whose time to max, back to 1 and 429 share are closest to the
	// real ones.
	bestErr := math.Inf(1)
	bestPhase := time.Duration(0)
	step := max(base.Profile.SchedulerInterval/10, 100*time.Millisecond)
	for ph := step; ph <= base.Profile.SchedulerInterval; ph += step {
		c := base
		c.SchedulerPhase = ph
		rep, err := run(c)
		if err != nil {
			return nil, err
		}
		sm := compareOf(rep.Verdicts)
		e := relErr(sm.UpToMaxS, cal.Real.UpToMaxS) + relErr(sm.BackTo1S, cal.Real.BackTo1S) + relErr(sm.Pct429, cal.Real.Pct429)
		if e < bestErr {
			bestErr, bestPhase = e, ph
		}
	}
	base.SchedulerPhase, cal.Phase = bestPhase, bestPhase
	rep, err := run(base)
	if err != nil {
		return nil, err
	}
	cal.Sim = compareOf(rep.Verdicts)
	cal.Config = base
	return cal, nil
}

func relErr(sim, real float64) float64 {
	if real <= 0 || sim < 0 {
		return 1
	}
	return math.Abs(sim-real) / real
}

// Delta is sim ÷ real - 1 as a signed percentage string, "—" without a
// real value.
func delta(sim, real float64) string {
	if real <= 0 || sim < 0 {
		return "—"
	}
	return fmt.Sprintf("%+.1f %%", 100*(sim/real-1))
}

// Write renders the calibration as text.
func (c *Calibration) Write(w io.Writer) error {
	fmt.Fprintf(w, "calibrated on %s (profile %s)\n", c.Source, c.Config.Profile.Name)
	fmt.Fprintf(w, "  service time  %s mean (from %d saturated seconds)\n", c.Service.Round(100*time.Microsecond), c.ServiceSeconds)
	fmt.Fprintf(w, "  ready delay   %s base + %s mean jitter (real scale-ups ready %.1f s after the decision, sim %.1f s; %d events)\n",
		c.ReadyDelay.Round(10*time.Millisecond), c.Config.Model.ReadyDelay.Jitter, c.RealReadyLagS, c.SimReadyLagS, c.ReadyEvents)
	fmt.Fprintf(w, "  first pass    %s after the run's start (the scheduler's phase)\n  %d simulated runs\n\n", c.Phase, c.Runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\treal\tsim, fitted\tfitted vs real\tsim, not fitted\tnot fitted vs real")
	fmt.Fprintf(tw, "time to max (sustained)\t%s\t%s\t%s\t%s\t%s\n", Secs(c.Real.UpToMaxS), Secs(c.Sim.UpToMaxS), delta(c.Sim.UpToMaxS, c.Real.UpToMaxS),
		Secs(c.Unfitted.UpToMaxS), delta(c.Unfitted.UpToMaxS, c.Real.UpToMaxS))
	fmt.Fprintf(tw, "back to 1 (sustained)\t%s\t%s\t%s\t%s\t%s\n", Secs(c.Real.BackTo1S), Secs(c.Sim.BackTo1S), delta(c.Sim.BackTo1S, c.Real.BackTo1S),
		Secs(c.Unfitted.BackTo1S), delta(c.Unfitted.BackTo1S, c.Real.BackTo1S))
	fmt.Fprintf(tw, "429 share of all calls\t%.2f %%\t%.2f %%\t%s\t%.2f %%\t%s\n", c.Real.Pct429, c.Sim.Pct429, delta(c.Sim.Pct429, c.Real.Pct429),
		c.Unfitted.Pct429, delta(c.Unfitted.Pct429, c.Real.Pct429))
	fmt.Fprintf(tw, "calls ok\t%d\t%d\t%s\t%d\t%s\n", c.Real.CallsOK, c.Sim.CallsOK, delta(float64(c.Sim.CallsOK), float64(c.Real.CallsOK)),
		c.Unfitted.CallsOK, delta(float64(c.Unfitted.CallsOK), float64(c.Real.CallsOK)))
	return tw.Flush()
}

// Secs renders a time in seconds as the sim's tables do ("178 s"), "never"
// when negative (a level never reached).
func Secs(v float64) string {
	if v < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f s", v)
}

// ConfigFor is NewConfig for a results file's profile and policy.
func ConfigFor(res *reports.Results) (Config, error) {
	p, err := scenarios.ProfileByName(res.Meta.Profile)
	if err != nil {
		return Config{}, fmt.Errorf("sim: calibrate: results of profile %q: %w", res.Meta.Profile, err)
	}
	c := NewConfig(p)
	if res.Meta.Policy != "" {
		c.Policy = res.Meta.Policy
	}
	return c, nil
}
