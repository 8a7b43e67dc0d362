package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/run"
	"github.com/scaleproof/scaleproof/sim"
	"github.com/scaleproof/scaleproof/sim/sweep"
)

type simOpts struct {
	profile   string
	policy    string
	scenarios []string
	model     string
	seed      uint64
	set       []string
	sweeps    []string
	out       string
	calibrate string
	designs   bool
	fleet     int
	fleetFor  time.Duration
	artifacts string
	jsonOut   bool
	quiet     bool
}

func newSimCmd() *cobra.Command {
	o := &simOpts{}
	c := &cobra.Command{
		Use:   "sim",
		Short: "Run the scenarios in virtual time against a model: the real policies, in seconds",
		Long: `sim runs the scenarios in virtual time: the real step and hpa policies, through the
controller's own rounds and scheduler passes, decide against a model of the workers
(in-flight limit, 429 beyond it, service time, boot delay), the edge (fewest in flight),
the nodes (optional provisioning delay) and the load (64 closed-loop VUs, the same
stages). The same seed gives the same results. Results go to the artifacts folder in
the results schema (platform "sim"), so report, the HTML report and compare read them.

Settings (--set and --sweep keys):
` + sim.SettingHelp() + `
Models: local (a worker process per replica; the default), cloud (a node per
worker: 90 s provisioning, 15 s + jitter to ready, 20 ms network; assumptions),
and gke, eks, aks: the cloud model as Ramen 0.7.5's load test ran there, fitted
to its published rows: one zone for the five scenarios, a canary beside the
count, the load generator 300 ms (+ jitter) away, nodes in 370 / 245 / 235 s.`,
		Example: `  scaleproof sim
  scaleproof sim --policy hpa --scenarios spike
  scaleproof sim --sweep up_cooldown=0s,15s,30s,60s --sweep interval=10s,20s,60s --out sweep.html
  scaleproof sim --designs
  scaleproof sim --calibrate _artifacts/<run>/results.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSim(cmd, o) },
	}
	f := c.Flags()
	f.StringVar(&o.profile, "profile", "published", "settings: published (Ramen 0.7.5's load test: scheduler 20 s, cooldowns 30/120 s), quick or selftest")
	f.StringVar(&o.policy, "policy", scenarios.PolicyStep, "the zones' policy: step or hpa (hpa adds the spike scenario; the signal comes from the model)")
	f.StringSliceVar(&o.scenarios, "scenarios", nil, "comma-separated scenario names (default: all five)")
	f.StringVar(&o.model, "model", "local", "the platform model: local, cloud, or gke, eks, aks (Ramen's load test on that cloud: one zone, a canary, the load far from the cluster, node times fitted)")
	f.Uint64Var(&o.seed, "seed", 1, "random seed: the same seed gives the same results")
	f.StringArrayVar(&o.set, "set", nil, "change one setting, key=value (repeatable; keys above)")
	f.StringArrayVar(&o.sweeps, "sweep", nil, "sweep a setting, key=v1,v2,... (repeatable: a grid)")
	f.StringVar(&o.out, "out", "", "sweep: the HTML page (default: sweep.html in the artifacts folder)")
	f.StringVar(&o.calibrate, "calibrate", "", "fit the model's service time and ready delay to a real run's results.jsonl and compare")
	f.BoolVar(&o.designs, "designs", false, "the earlier round's design (one-at-a-time steps, one 120 s cooldown) against the current one on the gke, eks and aks models, beside the published numbers")
	f.IntVar(&o.fleet, "fleet", 0, "a fleet run: this many zones under a slowly changing load (each up to 4 workers' worth of VUs, max 8), to measure the controller and policy at scale")
	f.DurationVar(&o.fleetFor, "fleet-duration", time.Hour, "a fleet run's virtual time")
	f.StringVar(&o.artifacts, "artifacts", "", "artifacts folder (default $ARTIFACTS, else ./_artifacts/sim-<run-id>)")
	f.BoolVar(&o.jsonOut, "json", false, "print JSON on stdout instead of tables")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines on stderr")
	return c
}

// config builds the run's config from the flags.
func (o *simOpts) config() (sim.Config, error) {
	p, err := scenarios.ProfileByName(o.profile)
	if err != nil {
		return sim.Config{}, err
	}
	cfg := sim.NewConfig(p)
	switch o.model {
	case "local":
	case "cloud":
		cfg.Model = sim.CloudModel(p)
	case "gke", "eks", "aks":
		if cfg, err = sim.PublishedCloud(o.model, p); err != nil {
			return cfg, err
		}
	default:
		return cfg, fmt.Errorf("--model %q: want local, cloud, gke, eks or aks", o.model)
	}
	cfg.Policy, cfg.Scenarios, cfg.Seed = o.policy, o.scenarios, o.seed
	for _, kv := range o.set {
		k, v, err := sim.ParseAssignment(kv)
		if err != nil {
			return cfg, fmt.Errorf("--set %w", err)
		}
		if err := cfg.Set(k, v); err != nil {
			return cfg, fmt.Errorf("--set %w", err)
		}
	}
	return cfg, cfg.Validate()
}

func (o *simOpts) dir() (string, error) {
	dir := run.ArtifactsDir(o.artifacts, "sim-"+newRunID())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", withCode(exitUsage, fmt.Errorf("artifacts folder: %w", err))
	}
	return dir, nil
}

func runSim(cmd *cobra.Command, o *simOpts) error {
	fleet := o.fleet != 0 || cmd.Flags().Changed("fleet") // --fleet 0 or less is refused by the fleet's own checks
	modes := 0
	for _, on := range []bool{len(o.sweeps) > 0, o.calibrate != "", o.designs, fleet} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return withCode(exitUsage, errors.New("--sweep, --calibrate, --designs and --fleet are separate modes: give one"))
	}
	if o.calibrate != "" {
		return simCalibrate(cmd, o)
	}
	cfg, err := o.config()
	if err != nil {
		return withCode(exitUsage, err)
	}
	switch {
	case len(o.sweeps) > 0:
		return simSweep(cmd, o, cfg)
	case o.designs:
		return simDesigns(cmd, o)
	case fleet:
		return simFleet(cmd, o, cfg)
	}
	dir, err := o.dir()
	if err != nil {
		return err
	}
	rep, err := sim.Run(cmd.Context(), cfg)
	if err != nil && rep == nil {
		return withCode(exitUsage, err)
	}
	rep.Meta.Version, rep.Meta.Commit = version, commit
	rep.Records[0].Data = rep.Meta
	resultsPath := filepath.Join(dir, run.ResultsFile)
	if werr := rep.WriteResultsFile(resultsPath); werr != nil {
		return withCode(exitUsage, werr)
	}
	if err != nil { // interrupted: what was simulated is written
		return withCode(exitInterrupted, err)
	}
	rr, rerr := run.WriteReports(dir, resultsPath, render.Columns{Pct429: true, P95: true})
	out := cmd.OutOrStdout()
	if o.jsonOut {
		_ = writeJSON(out, map[string]any{"row": rep.Row, "verdicts": rep.Verdicts, "outcomes": rep.Outcomes,
			"stats": rep.Stats, "results": resultsPath, "report_html": rr.HTML})
	} else {
		_ = render.WriteTable(out, []reports.Row{rep.Row}, render.Columns{Pct429: true, P95: true})
		fmt.Fprintln(out)
		render.WriteVerdicts(out, rep.Verdicts)
		fmt.Fprintf(out, "\nresults: %s\n", resultsPath)
		if rr.HTML != "" {
			fmt.Fprintf(out, "report:  %s\n", rr.HTML)
		}
	}
	if rerr != nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "report:", rerr)
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "not simulated (run them on a platform): %s\n", strings.Join(rep.Skipped, ", "))
	}
	if !o.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "simulated %.0f s of virtual time in %s (%d events, %d scheduler passes, seed %d)\n",
			rep.Stats.VirtualS, rep.Stats.Wall.Round(1e6), rep.Stats.Events, rep.Stats.Passes, cfg.Seed)
	}
	if !rep.Row.Passed {
		return withCode(exitFailed, errors.New("a scenario failed"))
	}
	return nil
}

func simSweep(cmd *cobra.Command, o *simOpts, cfg sim.Config) error {
	var axes []sweep.Axis
	for _, s := range o.sweeps {
		a, err := sweep.ParseAxis(s, cfg)
		if err != nil {
			return withCode(exitUsage, err)
		}
		axes = append(axes, a)
	}
	out := o.out
	if out == "" {
		dir, err := o.dir()
		if err != nil {
			return err
		}
		out = filepath.Join(dir, "sweep.html")
	}
	res, err := sweep.Run(cmd.Context(), cfg, axes, 0)
	if err != nil {
		if res == nil {
			return withCode(exitUsage, err)
		}
		return withCode(exitInterrupted, err)
	}
	f, err := os.Create(out)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if err := res.WriteHTML(f); err != nil {
		f.Close()
		return withCode(exitUsage, err)
	}
	if err := f.Close(); err != nil {
		return withCode(exitUsage, err)
	}
	if o.jsonOut {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"points": res.Points, "html": out})
	}
	_ = res.WriteTable(cmd.OutOrStdout())
	fmt.Fprintf(cmd.OutOrStdout(), "\n%d runs in %s; page: %s\n", len(res.Points), res.Wall.Round(1e6), out)
	return nil
}

func simCalibrate(cmd *cobra.Command, o *simOpts) error {
	res, err := reports.Read(o.calibrate)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if res.Meta.Platform == "load" {
		return withCode(exitUsage, fmt.Errorf("--calibrate %s: a results file of scaleproof load; calibration needs a run's scenarios (scaleproof run)", o.calibrate))
	}
	if res.Incomplete {
		fmt.Fprintf(cmd.ErrOrStderr(), "scaleproof sim: warning: %s is incomplete (%s): the fit uses what it measured\n", o.calibrate, res.IncompleteReason)
	}
	cfg, err := sim.ConfigFor(res)
	if err != nil {
		return withCode(exitUsage, err)
	}
	cfg.Seed = o.seed
	cal, err := sim.Calibrate(cmd.Context(), res, cfg)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if o.jsonOut {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"service_ms": cal.Service.Seconds() * 1000, "ready_delay_s": cal.ReadyDelay.Seconds(),
			"scheduler_phase_s": cal.Phase.Seconds(), "real": cal.Real, "sim": cal.Sim, "runs": cal.Runs})
	}
	return cal.Write(cmd.OutOrStdout())
}

// design is one policy design for --designs.
type design struct {
	name string
	set  []string
}

// designs: the earlier round (Ramen's notes: one-at-a-time steps and a
// single 120 s cooldown) and the current design (proportional step, 30 s
// up, 120 s down), on the published profile.
var designs = []design{
	{"earlier round: +1 steps, 120 s cooldown both ways", []string{"max_up_step=1", "up_cooldown=120s", "down_cooldown=120s"}},
	{"current: proportional step, 30 s up / 120 s down", nil},
}

// designRow is one line of --designs.
type designRow struct {
	Model         string  `json:"model"`
	Design        string  `json:"design"`
	UpTo3FromRunS float64 `json:"up_to_3_from_run_s"` // from the run's start (-1: never)
	UpTo3S        float64 `json:"up_to_3_s"`          // from the sustained scenario's start
	BackTo1S      float64 `json:"back_to_1_from_run_s"`
	CallsOK       int64   `json:"calls_ok"`
	Refused       int64   `json:"refused"`     // 429s of every call of the run
	RefusedPct    float64 `json:"refused_pct"` // 429 share of every call of the run
	Total         int64   `json:"calls"`
	Published     bool    `json:"published,omitempty"`
}

// noCanaryNear is a platform on which the earlier round refuses about the
// published 57 %: the gke model without its canary, the load generator
// about 50 ms away (an exponential round trip of that mean) and VUs that
// retry a 429 at once. It is fitted to the earlier round's share, to see
// what the current design refuses on the same platform.
var noCanaryNear = []string{"canary=0", "client_rtt=0s", "client_rtt_jitter=50ms", "retry_cap=0s"}

// simDesign runs design d on the published model of cloud model (with
// the extra settings, then --set's) and is its row, labelled label.
func simDesign(ctx context.Context, o *simOpts, p scenarios.Profile, model, label string, d design, extra []string) (designRow, error) {
	cfg, err := sim.PublishedCloud(model, p)
	if err != nil {
		return designRow{}, err
	}
	cfg.Seed = o.seed
	for _, kv := range append(append(append([]string(nil), d.set...), extra...), o.set...) {
		k, v, err := sim.ParseAssignment(kv)
		if err == nil {
			err = cfg.Set(k, v)
		}
		if err != nil {
			return designRow{}, fmt.Errorf("--set %w", err)
		}
	}
	rep, err := sim.Run(ctx, cfg)
	if err != nil {
		return designRow{}, err
	}
	r := designRow{Model: label, Design: d.name, UpTo3S: -1, UpTo3FromRunS: -1, BackTo1S: -1}
	for _, oc := range rep.Outcomes {
		r.CallsOK += oc.Calls.OK
		r.Refused += oc.Calls.TooMany
		r.Total += oc.Calls.Total()
		if oc.Scenario == "sustained" {
			if oc.UpToMaxS >= 0 {
				r.UpTo3S, r.UpTo3FromRunS = oc.UpToMaxS, oc.StartS+oc.UpToMaxS
			}
			if oc.BackTo1S >= 0 {
				r.BackTo1S = oc.StartS + oc.BackTo1S
			}
		}
	}
	if r.Total > 0 {
		r.RefusedPct = 100 * float64(r.Refused) / float64(r.Total)
	}
	return r, nil
}

func simDesigns(cmd *cobra.Command, o *simOpts) error {
	p, err := scenarios.ProfileByName(o.profile)
	if err != nil {
		return withCode(exitUsage, err)
	}
	published := map[string]reports.Row{}
	for _, row := range render.Published() {
		published[strings.ToLower(row.Platform)] = row
	}
	var rows []designRow
	var pooled, pooledAll int64
	for _, model := range sim.Clouds {
		for _, d := range designs {
			r, err := simDesign(cmd.Context(), o, p, model, model, d, nil)
			if err != nil {
				return withCode(exitUsage, err)
			}
			if d.set == nil {
				pooled, pooledAll = pooled+r.Refused, pooledAll+r.Total
			}
			rows = append(rows, r)
		}
		pub := published[model]
		if model == "gke" {
			rows = append(rows, designRow{Model: "GKE", Design: "published, earlier round", UpTo3FromRunS: 309, UpTo3S: -1,
				BackTo1S: -1, RefusedPct: 57, Refused: -1, CallsOK: -1, Published: true})
		}
		all := pub.Calls.OK + pub.Calls.TooMany
		rows = append(rows, designRow{Model: pub.Platform, Design: "published, current", UpTo3FromRunS: pub.UpTo3S, UpTo3S: -1,
			BackTo1S: pub.BackTo1S, CallsOK: pub.Calls.OK, Refused: pub.Calls.TooMany, Total: all,
			RefusedPct: 100 * float64(pub.Calls.TooMany) / float64(all), Published: true})
	}
	for _, d := range designs {
		r, err := simDesign(cmd.Context(), o, p, "gke", "gke, no canary, load 50 ms away, VUs retry at once", d, noCanaryNear)
		if err != nil {
			return withCode(exitUsage, err)
		}
		rows = append(rows, r)
	}
	out := cmd.OutOrStdout()
	if o.jsonOut {
		return writeJSON(out, rows)
	}
	return writeDesigns(out, rows, pooled, pooledAll)
}

// writeDesigns prints --designs' table and the pooled refusals of the
// current design (pooled of pooledAll calls) beside the published ones.
func writeDesigns(out io.Writer, rows []designRow, pooled, pooledAll int64) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "model\tdesign\tup to 3, from the run's start\tin sustained\tback to 1\tcalls ok\trefused (429): all calls")
	num := func(n int64) string {
		if n < 0 {
			return ""
		}
		return render.FormatCount(n)
	}
	for _, r := range rows {
		src := "sim, "
		if r.Published {
			src = ""
		}
		in := ""
		if !r.Published {
			in = secsOrNever(r.UpTo3S)
		}
		back := ""
		if r.BackTo1S >= 0 {
			back = secsOrNever(r.BackTo1S)
		}
		refused := fmt.Sprintf("%.0f %%", r.RefusedPct)
		if r.Refused >= 0 {
			refused = fmt.Sprintf("%s = %.2f %%", num(r.Refused), r.RefusedPct)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\n", src, r.Model, r.Design, secsOrNever(r.UpTo3FromRunS), in, back,
			num(r.CallsOK), refused)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	pubRefused, pubAll := int64(0), int64(0)
	for _, row := range render.Published() {
		pubRefused, pubAll = pubRefused+row.Calls.TooMany, pubAll+row.Calls.OK+row.Calls.TooMany
	}
	fmt.Fprintf(out, "\nThe current design, three clouds pooled: sim %s of %s = %.2f %% refused; published %s of %s = %.2f %%.\n",
		num(pooled), num(pooledAll), 100*float64(pooled)/float64(max(pooledAll, 1)), num(pubRefused), num(pubAll),
		100*float64(pubRefused)/float64(pubAll))
	fmt.Fprintln(out, "Published: Ramen 0.7.5's load-test notes (times from the start of the run). The gke, eks and aks models")
	fmt.Fprintln(out, "are fitted to the current design's rows only (see sim --help); the earlier round runs on them unchanged.")
	return nil
}

func simFleet(cmd *cobra.Command, o *simOpts, cfg sim.Config) error {
	fc := sim.NewFleetConfig()
	fc.Zones, fc.Duration, fc.Seed, fc.Base = o.fleet, o.fleetFor, o.seed, cfg
	fc.PeakVUs = 4 * cfg.Model.Limit
	rep, err := sim.RunFleet(cmd.Context(), fc)
	if err != nil {
		if rep == nil {
			return withCode(exitUsage, err)
		}
		return withCode(exitInterrupted, err)
	}
	out := cmd.OutOrStdout()
	if o.jsonOut {
		return writeJSON(out, rep)
	}
	fmt.Fprintf(out, "%d zones for %s of virtual time: %d scheduler passes in %s (a pass: %.0f ms mean, %.0f ms at most)\n",
		rep.Zones, fc.Duration, rep.Passes, rep.Wall.Round(time.Millisecond), rep.PassMeanMS, rep.PassMaxMS)
	fmt.Fprintf(out, "decisions: %d up, %d down, %d hold, %d errors; %.0f replica-hours; heap in use %.0f MiB after the first pass, %.0f MiB at most, %.0f MiB after the last\n",
		rep.Up, rep.Down, rep.Hold, rep.Errors, rep.ReplicaS/3600, rep.HeapFirstMiB, rep.HeapMaxMiB, rep.HeapLastMiB)
	return nil
}

func secsOrNever(s float64) string {
	if s < 0 {
		return "never"
	}
	return fmt.Sprintf("%.0f s", s)
}
