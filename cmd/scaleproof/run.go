package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/scaleproof/scaleproof/cloud/deployer"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/external"
	"github.com/scaleproof/scaleproof/scenarios/platform/kubeconfig"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
	"github.com/scaleproof/scaleproof/scenarios/run"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

type runOpts struct {
	platform     string
	profile      string
	scenarios    []string
	artifacts    string
	refBin       string
	group        string
	name         string
	consoleURL   string
	edgeURL      string
	keysFile     string
	jsonOut      bool
	quiet        bool
	extraColumns bool
	screenshots  bool
	policyOpts            // --policy, --prometheus (policy.go)
	kind         kindOpts // --keep, --kind-node-image, --kind-provider (kindplatform.go)
	kube         kubeOpts
	cloud        cloudOpts  // --project, --location, --region, ..., --ttl (cloudplatform.go)
	canary       bool       // --canary: a canary worker beside each zone's stable ones
	loadShards   int        // --load-shards (loadshard.go)
	runID        string     // --run-id (hidden; tests: names what a cloud run creates)
	tgt          targetOpts // --target, --workload, --deployment, --hpa, --scaled-object, --load-url (target.go)
	// targetSpec is what a Kubernetes platform deploys or adopts for
	// --target hpa or keda (nil: the console); targetKind is its kind
	// ("" for the console), for the kind platform's image loading.
	targetSpec *platform.TargetSpec
	targetKind string
}

// kubeOpts are the kubeconfig platform's flags.
type kubeOpts struct {
	kubeconfig, context, namespace, image string
	nodeHost                              string
	consolePort, edgePort                 int
}

// addKubeFlags adds the kubeconfig platform's flags, for run.
func addKubeFlags(f *pflag.FlagSet, o *kubeOpts) {
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig: the kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig: the context to use (default the file's current context)")
	f.StringVar(&o.namespace, "namespace", "", "kubeconfig: the namespace the system is deployed into and deleted with (default scaleproof-<run id>)")
	f.StringVar(&o.image, "image", "", "kubeconfig: the exact scaleproof-ref image already on the nodes (scaleproof.local/scaleproof-ref:TAG)")
	f.StringVar(&o.nodeHost, "node-host", "", "kubeconfig: a loopback address the NodePorts are mapped to (kind: 127.0.0.1); default: port-forward")
	f.IntVar(&o.consolePort, "console-port", 0, "kubeconfig: with --node-host, the host port mapped to the console's NodePort 30081")
	f.IntVar(&o.edgePort, "edge-port", 0, "kubeconfig: with --node-host, the host port mapped to the edge's NodePort 30080")
}

// runHelp is run --help's long text.
const runHelp = `run brings up the platform, runs the five load-test scenarios of Ramen 0.7.5's
autoscaling notes with 64 VUs of MCP tools/call through the edge, polls the console's /readyz every second, prints
the table (Platform | Up to 3 | Back to 1 | Calls ok | 429 | 5xx) and one
PASS/FAIL line per scenario, and tears the platform down (also on Ctrl-C; a
second Ctrl-C exits at once).

Scenarios ("Load tests" in Ramen 0.7.5's autoscaling notes):
  viewer-refused  viewer and MCP-user keys PUT max_count -> 403, nothing changes, audited;
                  the trail names the actor of every change
  max-1           max 1 never scales: count 1 at every sample, 429 > 0, no 5xx
  sustained       load up to max 3 and back to 1 (the table's times come from here)
  burst           a 45 s burst (4.5 s in quick), then idle back to 1
  max-lowered     at 3 under load an admin sets max 1: count 1 at the next sample
                  and while the load holds; the admin puts the max back
  spike           staged load with two spikes (the k6 stages of Grafana's post on
                  autoscaling Loki queries with KEDA): replicas follow the signal
                  (by name, or with --policy hpa; needs Prometheus)

The contract scenarios (by name, or all with --scenarios contract; they need the
platform's fault actions, offered by local, and are skipped where it has none):
  outage               a frozen worker: the count never drops while it is unreachable
  scale-in-drain       long calls in flight while the count comes down: none fails
  no-double-execution  a worker frozen mid-call: executions never exceed calls sent
  rate-path            short calls at low in-flight: the calls/s trigger scales up, never down
  restart-cooldown     a console restarted mid-cooldown still honours it
  restart-keeps-changes  the max alone, the count alone, the policy alone (hpa zones):
                       each reads back unchanged after a console restart
  readiness-routing    a worker failing readiness while it answers: no new calls once
                       the edge re-reads the listing; none before a worker is ready
  low-streak-reset     one busy round between idle ones: no step down until 3 new low rounds
  uneven-load          one worker busy (50-80 %), the mean under 50 %: no step up

Targets (--target): console (the default) judges the reference console through
its API with the scenarios above. hpa judges the cluster's own
HorizontalPodAutoscaler on a Deployment, keda a KEDA ScaledObject (and the HPA
it makes), on --platform kind (deployed for the run; --workload worker or
queue: the query scheduler and its pulling queriers) or --platform kubeconfig
(deployed, or adopted as it is with --namespace, --deployment and --hpa or
--scaled-object). They run the target scenarios instead of the five. The
console runs them too, on any platform, with --target console given (or with
--scenarios targets for all five): on a zone the run makes (max 3), its load
through the edge, judged on the console's own contracts, so the same facts are
shown on all three targets. Target and console scenarios run in separate runs;
without --target, every name is the console's own scenario.
  viewer-refused      a viewer is refused (403, nothing changes); a count set by
                      hand is kept or put back, as the target's contract says;
                      the trail names the actor
  sustained           load until the count reaches 3: scales up within the
                      bound, the count within min and max, every change in
                      the trail (the console's own also waits back to 1)
  max-lowered         at 3 under load an admin lowers max to 1: applies
                      within the bound and holds; the admin may change the
                      bounds and puts them back
  spike               the k6 stages of Grafana's post: up, within bounds, no
                      scale-down inside the stabilization window, back to min;
                      a timeline of in-flight, count, ready, desiredReplicas
                      (the console's own judges the replicas against its
                      signal instead)
  outage              at count 2 set by hand, a frozen worker never scales in,
                      and the count steps down once it answers (where the
                      platform can freeze one; else skipped)
Each target declares a contract per fact: the promise in its own terms and
its bound ("a lowered max applies within one HPA sync period" for hpa, "in the
request" for the console). Verdicts show the contract beside each fact; a fact
the target does not promise is "n/a" with the reason, never a pass, and never
fails a run. The table then has one row per scenario: verdict, facts passed,
n/a. Details: docs/targets.md.

Profiles: quick (every time / 10, about 90 s for the five on local), published
(scheduler 20 s, cooldowns 30/120 s, 45 s burst: the published load test's
settings, about 15 minutes on local) and selftest (quick's load on a faster
clock: scheduler 1 s, cooldowns 4/6 s; what scaleproof selftest uses).

Results go to the artifacts folder ($ARTIFACTS when set, else
./_artifacts/<run-id>):
  results.jsonl     every record of the run, written as it goes (a killed run
                    keeps what it measured and reads back as incomplete)
  report.html       the table and per-scenario charts, self-contained
  junit.xml         one testcase per scenario and per fact
  junit_runner.xml  one testcase per platform step (up, dump logs, down)
  table.md          the table and the PASS/FAIL lines in Markdown
  scaleproof.log    the harness's own log (JSON lines)
  screenshots/      the console's pages as PNGs the report links (needs chromium):
                    Zones and Group while sustained runs at its max under load,
                    all of them (Audit, Config too) after the scenarios
  logs/             every process's log (local: console, edge, workers, prometheus)
  local/            local platform: the console's state, Prometheus' config
                    and data (the run's API keys, keys.json, are never written
                    under the artifacts: they live in a private temporary
                    folder, 0700, removed at the teardown)

Clouds (--platform gke, eks or aks): Up refuses to
start without --ttl, creates a cluster named scaleproof-<run id> whose one node
pool the cloud's cluster autoscaler grows (--node-min, --node-max), or adopts
--cluster; makes the run's image repository (Artifact Registry on gke, ECR on
eks, ACR on aks) and pushes the scaleproof-ref image there; writes a kubeconfig with a token made
in-process and refreshed before it expires (no auth plugin) into a private
temporary folder (0700, never under the artifacts; removed at the teardown); then deploys with the cloud overlay and runs exactly as
--platform kubeconfig does, through port-forwards. Teardown dumps the logs,
then deletes what the run created in reverse order, never an adopted cluster
(also on Ctrl-C; a cluster delete takes minutes). Every resource carries the
labels or tags scaleproof-run-id and scaleproof-expires-at: what a killed run leaves,
` + "`scaleproof cloud janitor`" + ` deletes after its expiry. ` + "`scaleproof cloud plan`" + ` lists
what would be created and the calls, changing nothing. Credentials: gke uses
Application Default Credentials ($GOOGLE_APPLICATION_CREDENTIALS, gcloud's, or
the metadata server); eks the AWS SDK's default chain (environment, shared
files, web identity); aks, in a GitHub Actions job with AZURE_CLIENT_ID and
AZURE_TENANT_ID, GitHub's OIDC token, else DefaultAzureCredential (environment,
workload identity, managed identity, az login).

Exit codes: 0 every scenario passed, 1 a scenario failed (or every scenario
was skipped: nothing judged), 2 bad usage or unusable input (a cloud run
without --ttl or a required flag), 3 platform error (could not bring it up;
a cloud's quota or permission refusal, the permission named), 130 interrupted.`

func newRunCmd() *cobra.Command { return newRunCmdFor(&runOpts{}) }

// newRunCmdFor is run's command over o, which its flags set.
func newRunCmdFor(o *runOpts) *cobra.Command {
	c := &cobra.Command{
		Use:   "run",
		Short: "Bring up a platform, run the scenarios, print the table, write results",
		Long:  runHelp,
		Example: `  scaleproof run
  scaleproof run --profile published
  scaleproof run --scenarios sustained,max-lowered
  scaleproof run --platform kind --keep
  scaleproof run --scenarios targets
  scaleproof run --platform kind --target hpa
  scaleproof run --platform kind --target keda --workload queue
  scaleproof run --platform kubeconfig --target hpa --namespace shop --deployment api --hpa api \
      --load-url http://127.0.0.1:8080    # after kubectl -n shop port-forward svc/api 8080:80
  scaleproof run --platform kubeconfig --kubeconfig kind.kubeconfig --image scaleproof.local/scaleproof-ref:sha-0123456789ab \
      --node-host 127.0.0.1 --console-port 30081 --edge-port 30080
  scaleproof run --platform external --name GKE --console-url https://console.example \
      --edge-url https://edge.example --keys keys.json --group loadtest
  scaleproof run --platform gke --project my-project --location us-central1 --ttl 3h --profile published
  scaleproof run --platform gke --project my-project --location us-central1-a --cluster existing --ttl 2h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.tgt.explicit = cmd.Flags().Changed("target")
			return runRun(cmd, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.platform, "platform", "local", "where the system runs: local (child processes on 127.0.0.1), kind (a kind cluster made for the run), kubeconfig (deployed onto the cluster a kubeconfig reaches), external (already running; see --console-url), or a cloud: gke, eks or aks (a cluster made for the run, or --cluster; needs --ttl)")
	f.StringVar(&o.profile, "profile", "quick", "settings: quick, published or selftest (see Profiles above)")
	f.StringSliceVar(&o.scenarios, "scenarios", nil, "comma-separated scenario names (default: all five; with --target, the target scenarios by name, viewer-refused, sustained, max-lowered, spike, outage, or targets for all of them)")
	f.StringVar(&o.artifacts, "artifacts", "", "artifacts folder (default $ARTIFACTS, else ./_artifacts/<run-id>)")
	f.StringVar(&o.refBin, "ref-bin", "", "path to scaleproof-ref (default: beside this binary, then $PATH)")
	f.StringVar(&o.group, "group", "scaleproof", "the group whose zones the scenarios create")
	f.StringVar(&o.name, "name", "", "the table's Platform column (default: the platform's name)")
	f.StringVar(&o.consoleURL, "console-url", "", "external: the console API base URL")
	f.StringVar(&o.edgeURL, "edge-url", "", "external: the edge base URL ({edge}/g/{group}/z/{zone}/mcp)")
	f.StringVar(&o.keysFile, "keys", "", `external: console API keys, JSON {"keys":[{"name","key","role","groups"}]} with super_admin, group_admin of --group, viewer, mcp_user`)
	f.BoolVar(&o.jsonOut, "json", false, "print the summary row and verdicts as JSON on stdout instead of the table")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress; only the table (or JSON) and errors")
	f.BoolVar(&o.screenshots, "screenshots", true, "take screenshots of the console's pages into the artifacts folder, under load in sustained and after the scenarios (needs chromium; not with --platform external)")
	f.BoolVar(&o.extraColumns, "wide", false, "extra table columns: other 4xx, transport errors, 429 %, p95")
	addKubeFlags(f, &o.kube)
	f.IntVar(&o.loadShards, "load-shards", 1, "Kubernetes platforms (kind, kubeconfig): run each scenario's load as an Indexed Job of N pods, each with its share of the VUs from a common start; their results are merged before the verdicts")
	addPolicyFlags(f, &o.policyOpts)
	addKindFlags(f, &o.kind)
	addCloudFlags(f, &o.cloud, true)
	f.StringVar(&o.runID, "run-id", "", "the run id (default: the start time and 6 random hex digits); tests that need to know the names a cloud run gives")
	_ = f.MarkHidden("run-id")
	addTargetFlags(f, &o.tgt)
	f.BoolVar(&o.canary, "canary", false, "local, kind, kubeconfig: run a canary worker (version canary) beside each zone's workers; it takes calls like any worker and counts as capacity, not in the count, and the results report its share of calls")
	return c
}

func newRunID() string {
	return time.Now().UTC().Format("20060102-150405") + "-" + randHex(3)
}

// randHex is n random bytes in hex.
func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func findRefBin(explicit string) (string, error) {
	if explicit != "" {
		p, err := filepath.Abs(explicit)
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			return "", fmt.Errorf("--ref-bin: %w", err)
		}
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "scaleproof-ref")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, "scaleproof-ref")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("scaleproof-ref not found beside scaleproof or on $PATH: run `make build` or pass --ref-bin")
}

func runRun(cmd *cobra.Command, o *runOpts) (err error) {
	p, err := planRun(o)
	if err != nil {
		return err
	}
	runID := newRunID()
	if o.runID != "" {
		runID = o.runID
	}
	dir := run.ArtifactsDir(o.artifacts, runID)
	if top := firstMissing(dir); top != "" {
		// A usage error found below leaves no empty artifacts folder behind.
		defer func() {
			if ee := (*exitError)(nil); errors.As(err, &ee) && ee.code == exitUsage {
				_ = os.RemoveAll(top)
			}
		}()
	}
	log, closeLog, err := run.OpenArtifacts(dir, "scaleproof.log")
	if err != nil {
		return withCode(exitUsage, err) // the folder given cannot be written
	}
	defer closeLog()
	pf, err := newRunPlatform(cmd, o, p.prof, runID, dir, log.With("part", "platform"))
	if err != nil {
		return err
	}
	r := &runState{cmd: cmd, o: o, plan: p, dir: dir, log: log, pf: pf, name: o.name,
		resultsPath: filepath.Join(dir, run.ResultsFile), steps: &run.Steps{Started: time.Now()}}
	if r.sharder, err = loadSharder(pf, o.loadShards); err != nil {
		return withCode(exitUsage, err)
	}
	if r.name == "" {
		r.name = pf.Name()
	}
	settings, policy := o.settings(o.platform, p.prof), o.policy
	if p.tr != nil {
		settings, policy = p.tr.settings(o.targetSpec), ""
	}
	if r.w, err = reports.Create(r.resultsPath, reports.RunMeta{RunID: runID, Version: version, Commit: commit,
		Platform: r.name, Profile: p.prof.Name, Policy: policy, Settings: settings, Started: time.Now()}); err != nil {
		return withCode(exitUsage, err)
	}

	// First Ctrl-C: stop the run, tear down, write what was measured. Second: exit now.
	ctx, stopTrap, interrupted := run.Trap(cmd.Context(), 10*time.Minute, "scaleproof: exiting now; results so far in "+r.resultsPath)
	defer stopTrap()
	r.prog = newProgress(cmd.ErrOrStderr(), o.quiet)
	r.say("scaleproof %s: platform %s, profile %s, %s; artifacts in %s", version, r.name, p.prof.Name, plural(len(p.names), "scenario"), dir)

	upStart := time.Now()
	ep, upErr := pf.Up(ctx)
	r.steps.Add("Up", upStart, upErr)
	var verdicts []reports.Verdict
	if upErr != nil {
		log.Error("platform up failed", "err", upErr)
	} else {
		verdicts = r.test(ctx, ep, upStart)
	}

	// Teardown always runs: logs first, then down (kubetest2 order).
	if err := run.Teardown(pf, filepath.Join(dir, "logs"), log, r.steps.Add); err != nil {
		r.say("teardown: %v", err)
	}
	r.steps.List = append(r.steps.List, clusterSteps(pf)...)
	code, reason := run.ExitCode(verdicts, len(p.names), upErr, run.Interrupted(interrupted))
	if code == exitInfra && errors.Is(upErr, deployer.ErrNoTTL) {
		code = exitUsage
	}
	return r.finish(verdicts, code, reason, upErr)
}

// runState is one run between its platform's making and its exit: what
// the scenarios and the run's outputs share.
type runState struct {
	cmd         *cobra.Command
	o           *runOpts
	plan        runPlan
	dir         string
	resultsPath string
	name        string // the platform's name in the results and the table
	w           *reports.Writer
	log         *slog.Logger
	pf          platform.Platform
	sharder     platform.LoadSharder
	prog        *progress
	steps       *run.Steps
}

// say prints a progress line on stderr (nothing with --quiet).
func (r *runState) say(format string, args ...any) {
	if !r.o.quiet {
		fmt.Fprintf(r.cmd.ErrOrStderr(), format+"\n", args...)
	}
}

// test runs the plan's scenarios on the platform that came up at ep.
func (r *runState) test(ctx context.Context, ep platform.Endpoints, upStart time.Time) (verdicts []reports.Verdict) {
	o, tr, list, prof, names := r.o, r.plan.tr, r.plan.list, r.plan.prof, r.plan.names
	pf, w, log, dir, sharder, prog, steps, say := r.pf, r.w, r.log, r.dir, r.sharder, r.prog, r.steps, r.say
	if tr != nil {
		if o.targetSpec != nil {
			say("platform up in %.1f s: target %s (%s workload)", time.Since(upStart).Seconds(), o.targetSpec.Kind, o.targetSpec.Workload)
		} else {
			ep = o.endpoints(ep)
			say("platform up in %.1f s: target console %s, edge %s", time.Since(upStart).Seconds(), ep.ConsoleURL, ep.EdgeURL)
		}
		verdicts = tr.run(ctx, pf, ep, w, log.With("part", "scenarios"), prog.update, say)
		prog.done()
		steps.AddVerdicts(verdicts, names)
	} else {
		ep = o.endpoints(ep)
		say("platform up in %.1f s: console %s, edge %s, %s, policy %s", time.Since(upStart).Seconds(), ep.ConsoleURL, ep.EdgeURL, promLabel(ep.PrometheusURL), o.policy)
		ours := o.platform != "external" // the reference console, which serves the pages
		if ours {
			say("%s", consolePagesLine(ep, isTerminal(r.cmd.ErrOrStderr())))
		}
		var shots *shooter
		if ours && o.screenshots {
			shots = newShooter(ep, dir, log, say)
		}
		env := scenarios.NewEnv(ep, prof, w, log.With("part", "scenarios"))
		env.Progress = func(st scenarios.Status) {
			prog.update(st)
			if shots != nil {
				shots.underLoad(ctx, st)
			}
		}
		env.Policy = o.policy
		noFaults := "" // FaulterOf's own words: it offers no fault actions
		if o.platform == "external" {
			noFaults = external.NoFaultsReason
		}
		env.Faults = platform.FaulterOf(pf, noFaults)
		if sharder != nil {
			env.Shards, env.Sharder = o.loadShards, sharder
			say("load: each scenario's load over %d pods (an Indexed Job), merged before the verdicts", o.loadShards)
		}
		verdicts = env.Run(ctx, list)
		prog.done()
		if shots != nil {
			shots.end(ctx)
		}
		steps.AddVerdicts(verdicts, names)
	}
	return verdicts
}

// finish writes what the run measured, with its exit code: the summary
// row and the results' end, table.md, the reports, the runner's
// JUnit, and the table (or --json) on stdout.
func (r *runState) finish(verdicts []reports.Verdict, code int, reason string, upErr error) error {
	o, dir, resultsPath, log, say := r.o, r.dir, r.resultsPath, r.log, r.say
	row := reports.SummaryRow(r.name, verdicts)
	if r.plan.tr != nil {
		// a target run's table is one row per scenario: the published
		// table's "Up to 3" and "Back to 1" are the console's own
		// sustained (a target's counts from before its settle at min)
		row.UpTo3S, row.BackTo1S, row.P95ms = -1, -1, 0
	}
	if reason == run.NothingJudged {
		say("nothing judged: every scenario was skipped (see the skipped: lines); exit %d", exitFailed)
	}
	if err := run.Close(r.w, row, code, reason); err != nil {
		log.Warn("results close", "err", err)
	}
	cols := render.Columns{}
	if o.extraColumns {
		cols = run.WideColumns
	}
	tab := run.Table{Row: row, Verdicts: verdicts, Targets: r.plan.tr != nil}
	if code == exitInterrupted {
		tab.Incomplete = fmt.Sprintf("INCOMPLETE: the run was interrupted; %d of %d scenarios judged, the figures are what was measured until then",
			judged(verdicts), len(r.plan.names))
	}
	if upErr != nil {
		tab.NotRun = cmp.Or(reason, upErr.Error())
	}
	rr, rerr := run.WriteOutputs(dir, tab, cols, r.steps, log)
	if rerr != nil {
		say("report: %v", rerr)
	}
	out := r.cmd.OutOrStdout()
	if o.jsonOut {
		_ = writeJSON(out, map[string]any{"row": row, "verdicts": verdicts, "results": resultsPath, "exit_code": code,
			"report_html": rr.HTML, "junit": rr.JUnit})
	} else {
		fmt.Fprintln(out)
		tab.WriteText(out, cols)
		fmt.Fprintf(out, "\nresults: %s\n", resultsPath)
		if rr.HTML != "" {
			fmt.Fprintf(out, "report:  %s\n", rr.HTML)
		}
	}
	if code != exitOK {
		return withCode(code, errors.New(reason))
	}
	return nil
}

// runPlan is what run's flags ask for: the console's scenarios (list) or
// the target scenarios (tr), the profile and the scenarios' names in order.
type runPlan struct {
	list  []scenarios.Scenario
	tr    *targetRun
	prof  scenarios.Profile
	names []string
}

// planRun resolves the flags into a plan; every error is a usage error
// (exit 2).
func planRun(o *runOpts) (_ runPlan, err error) {
	if o.targetSpec, err = resolveTarget(o.platform, o.kube.namespace, o.tgt); err != nil {
		return runPlan{}, withCode(exitUsage, err)
	}
	var tr *targetRun // the target scenarios (--target given, or --scenarios targets), instead of the console's
	var list []scenarios.Scenario
	prof := scenarios.Quick()
	tkind := target.Console
	if o.targetSpec != nil {
		tkind = target.Kind(o.targetSpec.Kind)
	}
	onTarget, tnames, err := targetScenarioNames(tkind, o.tgt.explicit, o.scenarios) // before cleaning: it reads the targets keyword
	o.scenarios = cleanScenarioNames(o.scenarios)
	if err != nil {
		return runPlan{}, withCode(exitUsage, err)
	}
	if onTarget {
		with := "with --target hpa or keda"
		if o.targetSpec == nil {
			with = "with the target scenarios"
		}
		switch {
		case o.canary:
			return runPlan{}, withCode(exitUsage, fmt.Errorf("--canary runs beside the reference console's workers in its own scenarios, not %s", with))
		case o.loadShards > 1:
			return runPlan{}, withCode(exitUsage, errors.New("--load-shards is for the console's scenarios; the target scenarios run their load in this process"))
		case o.policy != "" && o.policy != scenarios.PolicyStep && o.targetSpec != nil:
			return runPlan{}, withCode(exitUsage, errors.New("--policy sets the reference console's policy; with --target the cluster's autoscaler decides"))
		case o.policy != "" && o.policy != scenarios.PolicyStep:
			return runPlan{}, withCode(exitUsage, errors.New("--policy hpa: the target scenarios judge the console on its step policy's contracts; run --policy hpa with the console's own scenarios"))
		}
		if tr, err = newTargetRun(o.profile, tnames); err != nil {
			return runPlan{}, withCode(exitUsage, err)
		}
		if o.targetSpec != nil {
			o.targetKind = o.targetSpec.Kind
			prof.Name = tr.prof.Name
		} else { // the console: its platform runs the console profile of the same name
			if prof, err = scenarios.ProfileByName(o.profile); err != nil {
				return runPlan{}, withCode(exitUsage, err)
			}
			tr.console = &prof
		}
	} else {
		if prof, err = scenarios.ProfileByName(o.profile); err != nil {
			return runPlan{}, withCode(exitUsage, err)
		}
		if list, err = scenarios.Select(o.scenarios); err != nil {
			return runPlan{}, withCode(exitUsage, err)
		}
		if list, err = o.policyOpts.resolve(o.platform, o.scenarios, list); err != nil {
			return runPlan{}, withCode(exitUsage, err)
		}
	}
	names := scenarioNames(list)
	if tr != nil {
		names = tr.names()
	}
	return runPlan{list: list, tr: tr, prof: prof, names: names}, nil
}

// newRunPlatform makes the platform --platform names, for the run runID
// with its artifacts in dir; every error is a usage error (exit 2).
func newRunPlatform(cmd *cobra.Command, o *runOpts, prof scenarios.Profile, runID, dir string, log *slog.Logger) (platform.Platform, error) {
	var pf platform.Platform
	var err error
	switch o.platform {
	case "local":
		var bin string
		if bin, err = findRefBin(o.refBin); err == nil {
			lc := localConfig(bin, dir, o.group, prof, o.policyOpts, log)
			lc.Worker.Canary = o.canary
			pf = local.New(lc)
		}
	case "kind":
		pf, err = newKindPlatform(o, prof, runID, dir, log, kindOut(cmd, o.quiet))
	case "kubeconfig":
		if o.kube.image == "" && (o.targetSpec == nil || o.targetSpec.Adopt == nil) {
			return nil, withCode(exitUsage, errors.New("--platform kubeconfig needs --image: the exact scaleproof-ref image already loaded on the nodes (the kind platform builds and loads it for you)"))
		}
		ns := o.kube.namespace
		if ns == "" {
			ns = runNamespace(runID)
		}
		pf, err = kubeconfig.New(kubeconfig.Config{Name: o.name, Kubeconfig: o.kube.kubeconfig, Context: o.kube.context,
			Namespace: ns, Profile: prof.Name, Image: o.kube.image, Group: o.group,
			NodeHost: o.kube.nodeHost, ConsoleHostPort: o.kube.consolePort, EdgeHostPort: o.kube.edgePort,
			Canary: o.canary, Target: o.targetSpec, Log: log})
	case "external":
		if o.canary {
			return nil, withCode(exitUsage, errors.New("--canary runs a canary worker on the platforms scaleproof deploys (local, kind, kubeconfig), not on an external system"))
		}
		pf, err = external.New(external.Config{Name: o.name, ConsoleURL: o.consoleURL, EdgeURL: o.edgeURL, KeysFile: o.keysFile, Group: o.group})
	default:
		if _, ok := cloudProviders[o.platform]; !ok {
			return nil, withCode(exitUsage, fmt.Errorf("unknown platform %q (have: local, kind, kubeconfig, external, %s)", o.platform, strings.Join(cloudNames(), ", ")))
		}
		pf, err = newCloudPlatform(o, prof, runID, dir, log, kindOut(cmd, o.quiet))
	}
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	return pf, nil
}

// judged counts the verdicts of scenarios that ran to a verdict (not
// stopped by an interrupt).
func judged(vs []reports.Verdict) int {
	n := 0
	for _, v := range vs {
		if !v.Interrupted {
			n++
		}
	}
	return n
}

// plural is "1 scenario", "2 scenarios".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// promLabel is "prometheus URL", or "no prometheus" when none runs.
func promLabel(url string) string {
	if url == "" {
		return "no prometheus"
	}
	return "prometheus " + url
}

// localConfig is the local platform's configuration for profile prof (run
// and up): the console's cooldowns and grace, the workers' limit and call
// length, the Prometheus of --prometheus. Its state goes to dir/local and
// the processes log straight into dir/logs (one complete copy, shutdown
// lines included).
func localConfig(bin, dir, group string, prof scenarios.Profile, po policyOpts, log *slog.Logger) local.Config {
	return local.Config{
		Bin: bin, WorkDir: filepath.Join(dir, "local"), LogDir: filepath.Join(dir, "logs"), Group: group,
		UpCooldown: prof.UpCooldown, DownCooldown: prof.DownCooldown, StartupGrace: prof.StartupGrace,
		TargetRPS: prof.TargetRPS, ConsoleDrain: prof.ConsoleDrain,
		Worker: local.WorkerSpec{MaxInflight: prof.MaxInflight, WorkMS: prof.WorkMS, BootDelay: prof.BootDelay,
			Drain: max(prof.ConsoleDrain, 5*time.Second)},
		Log:        log,
		Prometheus: po.localPrometheus(prof), InflightMaxAge: scenarios.HPAFor(prof).InflightMaxAge,
	}
}

// firstMissing is the outermost folder of dir that does not exist yet (dir
// itself when only it is missing), or "" when dir exists: what MkdirAll(dir)
// creates and a usage error should remove again.
func firstMissing(dir string) string {
	top := ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			return top
		}
		top = d
		if filepath.Dir(d) == d {
			return top
		}
	}
}

// runNamespace is the namespace a run deploys into: scaleproof-<run id
// without dashes>, at most 63 characters.
func runNamespace(runID string) string {
	ns := "scaleproof-" + strings.ToLower(strings.ReplaceAll(runID, "-", ""))
	if len(ns) > 63 {
		ns = ns[:63]
	}
	return ns
}
