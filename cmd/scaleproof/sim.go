package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
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
Models: local (a worker process per replica; the default) and cloud (a node per
worker: 90 s provisioning, 15 s + jitter to ready, 20 ms network; assumptions).`,
		Example: `  scaleproof sim
  scaleproof sim --policy hpa --scenarios spike
  scaleproof sim --sweep up_cooldown=0s,15s,30s,60s --sweep interval=10s,20s,60s --out sweep.html
  scaleproof sim --designs
  scaleproof sim --calibrate _artifacts/<run>/results.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSim(cmd, o) },
	}
	f := c.Flags()
	f.StringVar(&o.profile, "profile", "published", "settings: published (Ramen 0.7.5's load test: scheduler 20 s, cooldowns 30/120 s) or quick")
	f.StringVar(&o.policy, "policy", scenarios.PolicyStep, "the zones' policy: step or hpa (hpa adds the spike scenario; the signal comes from the model)")
	f.StringSliceVar(&o.scenarios, "scenarios", nil, "comma-separated scenario names (default: all five)")
	f.StringVar(&o.model, "model", "local", "the platform model: local or cloud")
	f.Uint64Var(&o.seed, "seed", 1, "random seed: the same seed gives the same results")
	f.StringArrayVar(&o.set, "set", nil, "change one setting, key=value (repeatable; keys above)")
	f.StringArrayVar(&o.sweeps, "sweep", nil, "sweep a setting, key=v1,v2,... (repeatable: a grid)")
	f.StringVar(&o.out, "out", "", "sweep: the HTML page (default: sweep.html in the artifacts folder)")
	f.StringVar(&o.calibrate, "calibrate", "", "fit the model's service time and ready delay to a real run's results.jsonl and compare")
	f.BoolVar(&o.designs, "designs", false, "the earlier round's design (one-at-a-time steps, one 120 s cooldown) against the current one on the cloud model, beside the published numbers")
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
	default:
		return cfg, fmt.Errorf("--model %q: want local or cloud", o.model)
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
	dir := o.artifacts
	if dir == "" {
		if a := os.Getenv("ARTIFACTS"); a != "" {
			dir = a
		} else {
			dir = filepath.Join("_artifacts", "sim-"+newRunID())
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", withCode(exitUsage, fmt.Errorf("artifacts folder: %w", err))
	}
	return dir, nil
}

func runSim(cmd *cobra.Command, o *simOpts) error {
	modes := 0
	for _, on := range []bool{len(o.sweeps) > 0, o.calibrate != "", o.designs, o.fleet > 0} {
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
	case o.fleet > 0:
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
	resultsPath := filepath.Join(dir, "results.jsonl")
	if werr := rep.WriteResultsFile(resultsPath); werr != nil {
		return withCode(exitUsage, werr)
	}
	if err != nil { // interrupted: what was simulated is written
		return withCode(exitInterrupted, err)
	}
	rr, rerr := writeRunReports(dir, resultsPath, reports.Columns{Pct429: true, P95: true})
	out := cmd.OutOrStdout()
	if o.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"row": rep.Row, "verdicts": rep.Verdicts, "outcomes": rep.Outcomes,
			"stats": rep.Stats, "results": resultsPath, "report_html": rr.HTML})
	} else {
		_ = reports.WriteTable(out, []reports.Row{rep.Row}, reports.Columns{Pct429: true, P95: true})
		fmt.Fprintln(out)
		reports.WriteVerdicts(out, rep.Verdicts)
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
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"points": res.Points, "html": out})
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
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"service_ms": cal.Service.Seconds() * 1000, "ready_delay_s": cal.ReadyDelay.Seconds(),
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
// up, 120 s down), on the cloud model and the published profile.
var designs = []design{
	{"earlier round: +1 steps, 120 s cooldown both ways", []string{"max_up_step=1", "up_cooldown=120s", "down_cooldown=120s"}},
	{"current: proportional step, 30 s up / 120 s down", nil},
}

func simDesigns(cmd *cobra.Command, o *simOpts) error {
	p, err := scenarios.ProfileByName(o.profile)
	if err != nil {
		return withCode(exitUsage, err)
	}
	type row struct {
		Design        string  `json:"design"`
		Client        string  `json:"client"`
		UpTo3S        float64 `json:"up_to_3_s"`          // from the sustained scenario's start
		UpTo3FromRunS float64 `json:"up_to_3_from_run_s"` // from the run's start
		Refused       int64   `json:"refused"`            // 429s of every call of the run
		RefusedPct    float64 `json:"refused_pct"`        // 429 share of every call of the run
		SustRefused   int64   `json:"sustained_refused"`
		SustPct       float64 `json:"sustained_refused_pct"`
	}
	clients := []struct{ name, set string }{
		{"VUs wait out Retry-After (1 s)", "retry_cap=1s"},
		{"VUs retry at once", "retry_cap=0s"},
	}
	var rows []row
	for _, cl := range clients {
		for _, d := range designs {
			cfg := sim.NewConfig(p)
			cfg.Model, cfg.Seed = sim.CloudModel(p), o.seed
			for _, kv := range append(append(append([]string(nil), d.set...), cl.set), o.set...) {
				k, v, err := sim.ParseAssignment(kv)
				if err == nil {
					err = cfg.Set(k, v)
				}
				if err != nil {
					return withCode(exitUsage, fmt.Errorf("--set %w", err))
				}
			}
			rep, err := sim.Run(cmd.Context(), cfg)
			if err != nil {
				return withCode(exitUsage, err)
			}
			r := row{Design: d.name, Client: cl.name, UpTo3S: -1, UpTo3FromRunS: -1}
			var total int64
			for _, oc := range rep.Outcomes {
				r.Refused += oc.Calls.TooMany
				total += oc.Calls.Total()
				if oc.Scenario == "sustained" {
					if oc.UpToMaxS >= 0 {
						r.UpTo3S, r.UpTo3FromRunS = oc.UpToMaxS, oc.StartS+oc.UpToMaxS
					}
					r.SustRefused = oc.Calls.TooMany
					if t := oc.Calls.Total(); t > 0 {
						r.SustPct = 100 * float64(oc.Calls.TooMany) / float64(t)
					}
				}
			}
			if total > 0 {
				r.RefusedPct = 100 * float64(r.Refused) / float64(total)
			}
			rows = append(rows, r)
		}
	}
	out := cmd.OutOrStdout()
	if o.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "design\tclient\tup to 3: sustained\tfrom the run's start\trefused: all calls\tsustained")
	for _, r := range rows {
		fmt.Fprintf(tw, "sim (cloud model), %s\t%s\t%s\t%s\t%d = %.2f %%\t%d = %.2f %%\n", r.Design, r.Client,
			secsOrNever(r.UpTo3S), secsOrNever(r.UpTo3FromRunS), r.Refused, r.RefusedPct, r.SustRefused, r.SustPct)
	}
	fmt.Fprintln(tw, "published (GKE), earlier round\t\t\t309 s\t57 %\t")
	fmt.Fprintln(tw, "published (GKE), current\t\t\t178 s\t117 = 0.45 %\t")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nPublished: Ramen 0.7.5's load-test notes (times from the start of the run). The cloud model's node and boot")
	fmt.Fprintln(out, "times are assumptions (see sim --help); change them with --set node_delay=... --set boot_delay=...")
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
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
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
