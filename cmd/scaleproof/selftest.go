package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
	"github.com/scaleproof/scaleproof/scenarios/run"
)

type selftestOpts struct {
	faults    []string
	profile   string
	artifacts string
	refBin    string
	group     string
	parallel  int
	jsonOut   bool
	quiet     bool
}

func newSelftestCmd() *cobra.Command {
	o := &selftestOpts{}
	c := &cobra.Command{
		Use:   "selftest",
		Short: "Prove the verdicts catch broken autoscalers: plant each known bug in the reference system and see a fact fail",
		Long: `selftest proves that scaleproof's verdicts catch the bugs they are meant to catch.

It runs a clean baseline (the five scenarios and every other scenario the
faults need, on the reference system as local processes) and then, once per planted bug of the
reference system's fault catalogue, that fault's scenarios on a fresh local
platform with only that bug switched on. Each fault is a realistic bug that
breaks one rule of the autoscaling contract (Ramen 0.7.5's "How it decides"
and "Audit and logs"): a step up inside the up cooldown, a step down straight
to 1, one worker at a time instead of the proportional step, holds in the
audit log, a lowered max applied only by the next round, and so on.

It prints one row per fault: the fault, the rule it breaks, the scenario and
the first fact that failed (the fact that caught it). The self-test fails
(exit 1) when a fault is caught by no fact, or when the clean baseline fails.
A run whose platform does not come up (no scenario ran, so it answered
nothing) is made once more, its first try kept in NAME-try1; a platform
that fails twice is exit 3. Ctrl-C is exit 130.

Faults run in parallel (--parallel), each on its own platform on 127.0.0.1
with every port picked by the system. The default profile "selftest" is quick's
load on a faster clock (scheduler every 1 s, cooldowns 4 s up / 6 s down),
shaped so each bug shows within seconds.

Artifacts ($ARTIFACTS, else ./_artifacts/selftest-<id>): baseline/ and one
folder per fault, each with its results.jsonl and process logs, and
selftest.json and selftest.md with the table.`,
		Example: `  scaleproof selftest
  scaleproof selftest --faults plus-one-steps,drop-to-one
  scaleproof selftest --parallel 1 --artifacts /tmp/selftest`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSelftest(cmd, o) },
	}
	f := c.Flags()
	f.StringSliceVar(&o.faults, "faults", nil, "comma-separated fault names (default: every fault of the catalogue): "+catalogNames())
	f.StringVar(&o.profile, "profile", "selftest", "settings: selftest (fast), quick or published")
	f.StringVar(&o.artifacts, "artifacts", "", "artifacts folder (default $ARTIFACTS, else ./_artifacts/selftest-<run-id>)")
	f.StringVar(&o.refBin, "ref-bin", "", "path to scaleproof-ref (default: beside this binary, then $PATH)")
	f.StringVar(&o.group, "group", "scaleproof", "the group whose zones the scenarios create")
	f.IntVar(&o.parallel, "parallel", 3, "platforms run at once (each its own console, edge and workers; 1..8)")
	f.BoolVar(&o.jsonOut, "json", false, "print the result as JSON on stdout instead of the table")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines; only the table (or JSON) and errors")
	return c
}

func catalogNames() string {
	var names []string
	for _, f := range faults.Catalog {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

// SelftestRow is one row of the self-test's table.
type SelftestRow struct {
	Fault     string `json:"fault"`               // "" for the baseline
	Rule      string `json:"rule"`                // the rule it breaks
	Component string `json:"component,omitempty"` // console, edge, worker
	Scenario  string `json:"scenario"`            // the scenario whose fact caught it
	Fact      string `json:"fact"`                // the first failing fact
	Detail    string `json:"detail,omitempty"`    // that fact's detail
	// Failed is every failing fact of the fault's run, "scenario: fact", in
	// scenario order (Fact is the first of them).
	Failed  []string `json:"failed,omitempty"`
	Caught  bool     `json:"caught"`
	Error   string   `json:"error,omitempty"` // the platform or a scenario could not run
	Results string   `json:"results"`         // its results.jsonl
	TookS   float64  `json:"took_s"`
	// Retried is the first try's error when the platform did not come up
	// and the run was made once more (its artifacts in NAME-try1); "" when
	// the first try came up.
	Retried string `json:"retried,omitempty"`
}

// SelftestReport is selftest.json.
type SelftestReport struct {
	Profile  string        `json:"profile"`
	Started  time.Time     `json:"started"`
	TookS    float64       `json:"took_s"`
	Parallel int           `json:"parallel"`
	Baseline BaselineRow   `json:"baseline"`
	Faults   []SelftestRow `json:"faults"`
	Passed   bool          `json:"passed"`
	Reason   string        `json:"reason,omitempty"`
}

// BaselineRow is the clean run.
type BaselineRow struct {
	Scenarios []string          `json:"scenarios"`
	Passed    bool              `json:"passed"`
	Failed    []string          `json:"failed,omitempty"` // "scenario: fact"
	Error     string            `json:"error,omitempty"`
	Verdicts  []reports.Verdict `json:"verdicts"`
	Results   string            `json:"results"`
	TookS     float64           `json:"took_s"`
	Retried   string            `json:"retried,omitempty"` // as SelftestRow's
}

// suiteRun is one platform's run: a set of faults (none for the baseline)
// and the scenarios to run against it.
type suiteRun struct {
	name      string // folder name: "baseline", "baseline-hpa" or the fault's name
	faults    faults.Set
	policy    string // the zones' policy: "" (step) or hpa (with Prometheus)
	canary    bool   // a canary worker beside each zone's workers
	scenarios []scenarios.Scenario
	verdicts  []reports.Verdict
	results   string
	upErr     error
	platUp    bool   // the platform's Up failed (not a setting or the artifacts folder)
	retried   string // the first try's platform error, when the run was made again
	took      time.Duration
}

func runSelftest(cmd *cobra.Command, o *selftestOpts) error {
	prof, err := scenarios.ProfileByName(o.profile)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if o.parallel < 1 || o.parallel > 8 {
		return withCode(exitUsage, fmt.Errorf("--parallel %d: want 1..8", o.parallel))
	}
	list, err := selectFaults(o.faults)
	if err != nil {
		return withCode(exitUsage, err)
	}
	runs, err := suiteRuns(list)
	if err != nil {
		return withCode(exitUsage, err)
	}
	bin, err := findRefBin(o.refBin)
	if err != nil {
		return withCode(exitUsage, err)
	}
	runID := newRunID()
	dir := run.ArtifactsDir(o.artifacts, "selftest-"+runID)
	log, closeLog, err := run.OpenArtifacts(dir, "selftest.log")
	if err != nil {
		return withCode(exitUsage, err) // the folder given cannot be written
	}
	defer closeLog()

	ctx, stopTrap, interrupted := run.Trap(cmd.Context(), 5*time.Minute, "")
	defer stopTrap()

	stderr := cmd.ErrOrStderr()
	var sayMu sync.Mutex
	say := func(format string, args ...any) {
		if !o.quiet {
			sayMu.Lock()
			fmt.Fprintf(stderr, format+"\n", args...)
			sayMu.Unlock()
		}
	}
	say("scaleproof selftest: %s, profile %s, %s at once; artifacts in %s", plural(len(list), "fault"), prof.Name, plural(o.parallel, "platform"), dir)
	started := time.Now()
	runSuites(ctx, runs, o.parallel, func(r *suiteRun) {
		runSuiteOnceMore(ctx, r, bin, filepath.Join(dir, r.name), o.group, prof, log.With("run", r.name), say)
		sayDone(r, say)
	})

	rep, code := selftestReport(runs, list, run.Interrupted(interrupted))
	rep.Profile, rep.Started, rep.TookS, rep.Parallel = prof.Name, started, time.Since(started).Seconds(), o.parallel
	writeSelftestFiles(dir, rep)
	out := cmd.OutOrStdout()
	if o.jsonOut {
		_ = writeJSON(out, rep)
	} else {
		fmt.Fprintln(out)
		writeSelftestTable(out, rep)
		fmt.Fprintf(out, "\nselftest: %s in %.0f s; artifacts in %s\n", reports.PassFail(rep.Passed), rep.TookS, dir)
	}
	if code != exitOK {
		return withCode(code, errors.New("selftest: "+rep.Reason))
	}
	return nil
}

// selectFaults is the faults --faults names, or the whole catalogue.
func selectFaults(names []string) ([]faults.Fault, error) {
	var list []faults.Fault
	if len(names) == 0 {
		list = slices.Clone(faults.Catalog)
	}
	for _, n := range names {
		f, ok := faults.Lookup(strings.TrimSpace(n))
		if !ok {
			return nil, fmt.Errorf("--faults: unknown fault %q (known: %s)", n, catalogNames())
		}
		list = append(list, f)
	}
	if len(list) == 0 {
		return nil, errors.New("the fault catalogue is empty: nothing to test")
	}
	return list, nil
}

// suiteRuns is the self-test's runs: the baseline, one run per fault of
// list in its order, and baseline-hpa last when an hpa fault needs it. The
// baseline is the five, then every other scenario a fault needs; the
// scenarios of the hpa faults run again on hpa zones (baseline-hpa).
func suiteRuns(list []faults.Fault) ([]*suiteRun, error) {
	need := scenarioNames(scenarios.All())
	var needHPA []string
	runs := make([]*suiteRun, 0, len(list)+1)
	for _, f := range list {
		if len(f.Scenarios) == 0 {
			return nil, fmt.Errorf("fault %s names no scenario to run", f.Name)
		}
		scs, err := scenarios.Select(f.Scenarios)
		if err != nil {
			return nil, fmt.Errorf("fault %s: %w", f.Name, err)
		}
		into := &need
		if f.Policy == faults.PolicyHPA {
			into = &needHPA
		}
		for _, n := range f.Scenarios {
			if !slices.Contains(*into, n) {
				*into = append(*into, n)
			}
		}
		runs = append(runs, &suiteRun{name: f.Name, faults: faults.Set{f.Name: true}, scenarios: scs, policy: f.Policy, canary: f.Canary})
	}
	base, err := scenarios.Select(need)
	if err != nil {
		return nil, err
	}
	runs = append([]*suiteRun{{name: "baseline", scenarios: base}}, runs...)
	if len(needHPA) > 0 {
		baseHPA, err := scenarios.Select(needHPA)
		if err != nil {
			return nil, err
		}
		runs = append(runs, &suiteRun{name: "baseline-hpa", scenarios: baseHPA, policy: faults.PolicyHPA})
	}
	return runs, nil
}

// runSuites calls runOne for each of runs, at most parallel at once; a run
// that has not started when ctx ends gets ctx's error instead.
func runSuites(ctx context.Context, runs []*suiteRun, parallel int, runOne func(*suiteRun)) {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				r.upErr = ctx.Err()
				return
			}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				r.upErr = ctx.Err()
				return
			}
			runOne(r)
		})
	}
	wg.Wait()
}

// sayDone prints the line of a run that has ended: the baseline's verdict,
// or the fact that caught the fault.
func sayDone(r *suiteRun, say func(string, ...any)) {
	row := judgeFault(r)
	switch {
	case r.faults == nil: // baseline, baseline-hpa
		b := judgeBaseline(r)
		say("  %s: %s (%.0f s)", r.name, reports.PassFail(b.Passed), r.took.Seconds())
	case row.Caught:
		say("  %-22s caught by %s: %s (%.0f s)", r.name, row.Scenario, row.Fact, r.took.Seconds())
	default:
		say("  %-22s NOT CAUGHT %s (%.0f s)", r.name, row.Error, r.took.Seconds())
	}
}

// selftestReport judges the runs of suiteRuns(list) and is the exit code:
// the self-test fails when the baseline does or a fault is not caught, with
// an infrastructure error when a platform did not come up.
func selftestReport(runs []*suiteRun, list []faults.Fault, interrupted bool) (SelftestReport, int) {
	rep := SelftestReport{Baseline: judgeBaseline(runs[0]), Passed: true}
	if len(runs) > len(list)+1 { // baseline-hpa
		rep.Baseline = mergeBaselines(rep.Baseline, judgeBaseline(runs[len(list)+1]))
	}
	var reasons []string
	if !rep.Baseline.Passed {
		rep.Passed = false
		reasons = append(reasons, "the clean baseline failed")
	}
	infra := runs[0].upErr != nil || runs[len(runs)-1].upErr != nil
	for i, f := range list {
		row := judgeFault(runs[i+1])
		row.Rule, row.Component = f.Rule, f.Component
		rep.Faults = append(rep.Faults, row)
		if !row.Caught {
			rep.Passed = false
			reasons = append(reasons, "fault "+f.Name+" was not caught")
		}
		if runs[i+1].upErr != nil {
			infra = true
		}
	}
	rep.Reason = strings.Join(reasons, "; ")
	code := exitOK
	switch {
	case interrupted:
		code, rep.Passed, rep.Reason = exitInterrupted, false, "interrupted"
	case infra && !rep.Passed:
		code = exitInfra
	case !rep.Passed:
		code = exitFailed
	}
	return rep, code
}

// writeSelftestFiles writes selftest.json and selftest.md into dir.
func writeSelftestFiles(dir string, rep SelftestReport) {
	if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "selftest.json"), append(b, '\n'), 0o644)
	}
	if mf, err := os.Create(filepath.Join(dir, "selftest.md")); err == nil {
		writeSelftestMarkdown(mf, rep)
		mf.Close()
	}
}

// runSuite brings up a local platform with r's faults, runs r's scenarios,
// writes their results into dir and tears the platform down.
func runSuite(ctx context.Context, r *suiteRun, bin, dir, group string, prof scenarios.Profile, log *slog.Logger) {
	start := time.Now()
	defer func() { r.took = time.Since(start) }()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.upErr = err
		return
	}
	po := policyOpts{policy: scenarios.PolicyStep, prometheus: local.PrometheusOff}
	if r.policy == faults.PolicyHPA {
		po = policyOpts{policy: scenarios.PolicyHPA, prometheus: local.PrometheusAuto}
		if ok, why := local.PrometheusAvailable(po.prometheus, ""); !ok {
			r.upErr = fmt.Errorf("the hpa policy's faults need Prometheus (make deps-prometheus): %s", why)
			return
		}
	}
	cfg := localConfig(bin, dir, group, prof, po, log.With("part", "platform"))
	cfg.Faults = r.faults
	cfg.Worker.Canary = r.canary
	pf := local.New(cfg)
	settings := prof.Settings()
	settings["faults"] = r.faults.String()
	if r.canary {
		settings["canary"] = "true"
	}
	maps.Copy(settings, po.settings("local", prof))
	r.results = filepath.Join(dir, run.ResultsFile)
	w, err := reports.Create(r.results, reports.RunMeta{RunID: newRunID(), Version: version, Commit: commit,
		Platform: "local", Profile: prof.Name, Settings: settings, Started: start})
	if err != nil {
		r.upErr = err
		return
	}
	ep, upErr := pf.Up(ctx)
	if upErr != nil {
		r.upErr, r.platUp = fmt.Errorf("platform up: %w", upErr), true
		log.Error("platform up failed", "err", upErr)
	} else {
		env := scenarios.NewEnv(ep, prof, w, log.With("part", "scenarios"))
		env.Faults = platform.FaulterOf(pf, "")
		env.Policy = po.policy
		r.verdicts = env.Run(ctx, r.scenarios)
	}
	_ = run.Teardown(pf, filepath.Join(dir, "logs"), log, nil)
	code, reason := run.ExitCode(r.verdicts, len(r.scenarios), upErr, false)
	if err := run.Close(w, reports.SummaryRow("local", r.verdicts), code, reason); err != nil {
		log.Warn("results close", "err", err)
	}
}

// runSuiteOnceMore is runSuite, made once more when the platform did not
// come up: no scenario ran, so the run answered nothing about its faults (a
// process slow to answer /readyz on a loaded machine). The first try's
// artifacts move to dir-try1 and its error to r.retried.
func runSuiteOnceMore(ctx context.Context, r *suiteRun, bin, dir, group string, prof scenarios.Profile, log *slog.Logger, say func(string, ...any)) {
	runSuite(ctx, r, bin, dir, group, prof, log)
	if !r.platUp || ctx.Err() != nil {
		return
	}
	say("  %-22s platform did not come up (%v); running it again", r.name, r.upErr)
	log.Warn("platform did not come up; running again once", "err", r.upErr)
	first := r.upErr.Error()
	if err := os.Rename(dir, dir+"-try1"); err != nil {
		log.Warn("keep the first try's artifacts", "err", err)
	}
	*r = suiteRun{name: r.name, faults: r.faults, policy: r.policy, canary: r.canary, scenarios: r.scenarios, retried: first}
	runSuite(ctx, r, bin, dir, group, prof, log)
}

// judgeFault finds the first failing fact of a fault's run, in scenario
// order. Only a failing fact catches a fault: a scenario that could not run
// (its error) does not.
func judgeFault(r *suiteRun) SelftestRow {
	row := SelftestRow{Fault: r.name, Results: r.results, TookS: r.took.Seconds(), Retried: r.retried}
	if r.upErr != nil {
		row.Error = r.upErr.Error()
		return row
	}
	var errs []string
	for _, v := range r.verdicts {
		for _, f := range v.Facts {
			if f.Failed() { // a not-applicable fact is no catch
				if !row.Caught {
					row.Scenario, row.Fact, row.Detail, row.Caught = v.Scenario, f.Name, f.Detail, true
				}
				row.Failed = append(row.Failed, v.Scenario+": "+f.Name)
			}
		}
		if v.Error != "" {
			errs = append(errs, v.Scenario+": "+v.Error)
		}
	}
	if row.Caught {
		return row
	}
	if len(r.verdicts) < len(r.scenarios) {
		errs = append(errs, fmt.Sprintf("%d of %d scenarios ran", len(r.verdicts), len(r.scenarios)))
	}
	if len(errs) > 0 {
		row.Error = strings.Join(errs, "; ")
	} else {
		row.Error = "every fact passed"
	}
	return row
}

// mergeBaselines is the baseline row of two clean runs (step and hpa zones):
// it passes when both do.
func mergeBaselines(a, b BaselineRow) BaselineRow {
	a.Scenarios = append(a.Scenarios, suffixed(b.Scenarios, " (hpa)")...)
	a.Passed = a.Passed && b.Passed
	a.Failed = append(a.Failed, suffixed(b.Failed, " (hpa)")...)
	a.Error = strings.Trim(a.Error+"; "+b.Error, "; ")
	a.Verdicts = append(a.Verdicts, b.Verdicts...)
	a.Results += ", " + b.Results
	a.TookS = max(a.TookS, b.TookS)
	a.Retried = strings.Trim(a.Retried+"; "+b.Retried, "; ")
	return a
}

func suffixed(ss []string, suffix string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s + suffix
	}
	return out
}

func judgeBaseline(r *suiteRun) BaselineRow {
	b := BaselineRow{Scenarios: scenarioNames(r.scenarios), Verdicts: r.verdicts, Results: r.results, TookS: r.took.Seconds(),
		Passed: r.upErr == nil, Retried: r.retried}
	if r.upErr != nil {
		b.Error = r.upErr.Error()
	}
	if len(r.verdicts) < len(r.scenarios) {
		b.Passed = false
	}
	for _, v := range r.verdicts {
		if !v.Passed {
			b.Passed = false
		}
		for _, f := range v.Facts {
			if f.Failed() {
				b.Failed = append(b.Failed, v.Scenario+": "+f.Name+" ("+f.Detail+")")
			}
		}
		if v.Error != "" {
			b.Failed = append(b.Failed, v.Scenario+": "+v.Error)
		}
	}
	return b
}

func writeSelftestTable(w io.Writer, rep SelftestReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Fault\tRule it breaks\tScenario\tFact that caught it")
	for _, r := range rep.Faults {
		sc, f := r.Scenario, r.Fact
		if !r.Caught {
			sc, f = "-", "NOT CAUGHT: "+r.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Fault, r.Rule, sc, f)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nclean baseline (%s): %s", strings.Join(rep.Baseline.Scenarios, ", "), reports.PassFail(rep.Baseline.Passed))
	if len(rep.Baseline.Failed) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(rep.Baseline.Failed, "; "))
	}
	if rep.Baseline.Error != "" {
		fmt.Fprintf(w, " (%s)", rep.Baseline.Error)
	}
	fmt.Fprintln(w)
}

func writeSelftestMarkdown(w io.Writer, rep SelftestReport) {
	md := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	fmt.Fprintf(w, "# scaleproof selftest: %s\n\nProfile %s, %s at once, %.0f s.\n\n", reports.PassFail(rep.Passed), rep.Profile, plural(rep.Parallel, "platform"), rep.TookS)
	fmt.Fprintln(w, "| Fault | Rule it breaks | Scenario | Fact that caught it |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, r := range rep.Faults {
		sc, f := r.Scenario, r.Fact
		if !r.Caught {
			sc, f = "-", "**not caught**: "+r.Error
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", r.Fault, md(r.Rule), sc, md(f))
	}
	fmt.Fprintf(w, "\nClean baseline (%s): **%s**\n", strings.Join(rep.Baseline.Scenarios, ", "), reports.PassFail(rep.Baseline.Passed))
	for _, f := range rep.Baseline.Failed {
		fmt.Fprintf(w, "- %s\n", md(f))
	}
	var again []string
	if rep.Baseline.Retried != "" {
		again = append(again, "baseline ("+rep.Baseline.Retried+")")
	}
	for _, r := range rep.Faults {
		if r.Retried != "" {
			again = append(again, "`"+r.Fault+"` ("+r.Retried+")")
		}
	}
	if len(again) > 0 {
		fmt.Fprintf(w, "\nRun again once because the platform did not come up the first time: %s\n", md(strings.Join(again, "; ")))
	}
	if rep.Reason != "" {
		fmt.Fprintf(w, "\n%s\n", rep.Reason)
	}
}
