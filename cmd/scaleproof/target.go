package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
	"github.com/scaleproof/scaleproof/scenarios/target/kube"
)

// targetOpts are run's target flags: which autoscaler is judged (--target),
// on which workload (--workload), and on --platform kubeconfig the user's
// own scale target to adopt as it is.
type targetOpts struct {
	target, workload                   string
	deployment, hpa, scaledObject, url string
	// explicit: --target was given. --target console given judges the
	// reference console as a target (the target scenarios on a zone the
	// run makes); left out, the console runs its own scenarios.
	explicit bool
}

func addTargetFlags(f *pflag.FlagSet, o *targetOpts) {
	f.StringVar(&o.target, "target", string(target.Console), "the autoscaler judged: console (the reference console: left out, its own scenarios; given, --target console, the target scenarios on a zone the run makes, judged as hpa and keda are), hpa (the cluster's HorizontalPodAutoscaler on a Deployment) or keda (a KEDA ScaledObject and the HPA it makes); hpa and keda run the target scenarios on --platform kind or kubeconfig")
	f.StringVar(&o.workload, "workload", "worker", "with --target hpa or keda: the scale target deployed, worker (the reference worker Deployment) or queue (a query scheduler and its pulling queriers; the queriers scale)")
	f.StringVar(&o.deployment, "deployment", "", "kubeconfig with --target: adopt this Deployment (in --namespace) as the scale target, judged as it is; nothing is deployed")
	f.StringVar(&o.hpa, "hpa", "", "kubeconfig with --target hpa: the HorizontalPodAutoscaler of --deployment to judge (with keda: the HPA KEDA made, default keda-hpa-<scaled object>)")
	f.StringVar(&o.scaledObject, "scaled-object", "", "kubeconfig with --target keda: the ScaledObject of --deployment to judge")
	f.StringVar(&o.url, "load-url", "", "kubeconfig with --target, adopting: the base URL the load's calls go to ({load-url}/mcp); needed when adopting, a loopback address (127.0.0.0/8), e.g. your kubectl port-forward to the Service")
}

// targetFromRef builds the Target the platform's Up described (a variable
// so that tests can put a fake in its place).
var targetFromRef = kube.FromRef

// adopting reports whether any of the adopt flags is set.
func (t targetOpts) adopting() bool {
	return t.deployment != "" || t.hpa != "" || t.scaledObject != "" || t.url != ""
}

// resolveTarget checks the target flags against the platform and, for
// --target hpa or keda, returns the spec the Kubernetes platform deploys or
// adopts (nil: the console, as always). Every error is a usage error.
func resolveTarget(platformName, namespace string, t targetOpts) (*platform.TargetSpec, error) {
	kind, err := target.ParseKind(t.target)
	if err != nil {
		return nil, fmt.Errorf("--target: %w", err)
	}
	if t.workload != "worker" && t.workload != "queue" {
		return nil, fmt.Errorf("--workload %q: want worker or queue", t.workload)
	}
	if kind == target.Console {
		switch {
		case t.workload != "worker":
			return nil, errors.New("--workload queue needs --target hpa or keda: the reference console scales its own workers")
		case t.adopting():
			return nil, errors.New("--deployment, --hpa, --scaled-object and --load-url adopt a scale target: they need --target hpa or keda on --platform kubeconfig")
		}
		return nil, nil
	}
	if platformName != "kind" && platformName != "kubeconfig" {
		return nil, fmt.Errorf("--target %s runs on --platform kind or kubeconfig (the cluster's own autoscaler); --platform %s runs the reference console only", kind, platformName)
	}
	spec := &platform.TargetSpec{Kind: string(kind), Workload: t.workload}
	if !t.adopting() {
		return spec, nil
	}
	if platformName != "kubeconfig" {
		return nil, errors.New("--deployment, --hpa, --scaled-object and --load-url adopt a scale target that already runs: use --platform kubeconfig (kind deploys its own)")
	}
	if t.workload != "worker" {
		return nil, errors.New("--workload names what scaleproof deploys; an adopted scale target is judged as it is: leave --workload out")
	}
	var missing []string
	if namespace == "" {
		missing = append(missing, "--namespace")
	}
	if t.deployment == "" {
		missing = append(missing, "--deployment")
	}
	switch kind {
	case target.HPA:
		if t.hpa == "" {
			missing = append(missing, "--hpa")
		}
		if t.scaledObject != "" {
			return nil, errors.New("--scaled-object is for --target keda")
		}
	case target.KEDA:
		if t.scaledObject == "" {
			missing = append(missing, "--scaled-object")
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("adopting a scale target with --target %s needs %s", kind, strings.Join(missing, ", "))
	}
	spec.Adopt = &platform.Adopt{Namespace: namespace, Deployment: t.deployment, HPA: t.hpa, ScaledObject: t.scaledObject, LoadURL: t.url}
	return spec, nil
}

// targetsKeyword is --scenarios targets: every target scenario.
const targetsKeyword = "targets"

// cleanScenarioNames cleans --scenarios: names trimmed, empty ones dropped, and
// each name (or the targets keyword's expansion) run once, in first-seen
// order ("targets,spike" runs the five once).
func cleanScenarioNames(names []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range names {
		switch n = strings.TrimSpace(n); {
		case n == "":
		case n == targetsKeyword:
			for _, s := range scenarios.TargetScenarios() {
				add(s.Name)
			}
		default:
			add(n)
		}
	}
	return out
}

// mergedTargetNames are the target scenarios' old names whose scenario is
// now one for the console and every target: old → new.
var mergedTargetNames = map[string]string{"target-outage": "outage", "target-max-lowered": "max-lowered", "target-roles": "viewer-refused",
	"target-sustained": "sustained", "target-spike": "spike"}

// targetScenarioNames reads --scenarios for a run on target kind: whether
// the target scenarios run (always for hpa and keda; for the console when
// --target console was given (explicit) or names has targetsKeyword), and
// their names with the keyword expanded (nil: all). Without --target, the
// names are the console's own scenarios. Target and console scenarios in
// one run are a usage error, as are the console's own scenarios with a
// target.
func targetScenarioNames(kind target.Kind, explicit bool, names []string) (bool, []string, error) {
	onTarget := kind != target.Console || explicit ||
		slices.ContainsFunc(names, func(n string) bool { return strings.TrimSpace(n) == targetsKeyword })
	var tnames, cnames []string
	names = cleanScenarioNames(names) // the targets keyword expanded
	for _, n := range names {
		if _, err := scenarios.SelectTargets([]string{n}); err != nil {
			if now, ok := mergedTargetNames[n]; ok {
				how := ""
				if kind == target.Console && !explicit {
					how = fmt.Sprintf(" (--target console --scenarios %s runs it on a target zone; without --target it is the console's own)", now)
				}
				return false, nil, fmt.Errorf("--scenarios %s: it is now %s, one scenario for the console and every target%s", n, now, how)
			}
			if _, cerr := scenarios.Select([]string{n}); cerr != nil && onTarget {
				return false, nil, fmt.Errorf("--scenarios %s: %w", n, err)
			}
			cnames = append(cnames, n)
			continue
		}
		tnames = append(tnames, n)
	}
	switch {
	case !onTarget:
		return false, nil, nil
	case len(cnames) > 0 && (kind != target.Console || explicit):
		all := scenarioNames(scenarios.TargetScenarios())
		return false, nil, fmt.Errorf("--scenarios %s: --target %s runs the target scenarios (%s, or %s for all); %s are the reference console's own (run them without --target)",
			strings.Join(cnames, ","), kind, strings.Join(all, ", "), targetsKeyword, strings.Join(cnames, ", "))
	case len(cnames) > 0:
		return false, nil, fmt.Errorf("--scenarios %s: the target scenarios (%s) and the console's own scenarios (%s) run in separate runs",
			strings.Join(names, ","), strings.Join(tnames, ", "), strings.Join(cnames, ", "))
	}
	return true, tnames, nil
}

// targetRun is a run's target part: its scenarios and profile, and for the
// console the console's profile the zone it makes is judged under.
type targetRun struct {
	list []scenarios.Scenario
	prof scenarios.Profile
	// console is set when the target is the reference console (--target
	// console with the target scenarios): the run's console profile (the
	// scheduler interval it turns on, the zone's max, the cooldowns when
	// the console does not show its own).
	console *scenarios.Profile
}

func newTargetRun(profile string, names []string) (*targetRun, error) {
	prof, err := scenarios.TargetProfileByName(profile)
	if err != nil {
		return nil, err
	}
	list, err := scenarios.SelectTargets(names)
	if err != nil {
		return nil, err
	}
	return &targetRun{list: list, prof: prof}, nil
}

func (r *targetRun) names() []string {
	out := make([]string, len(r.list))
	for i, s := range r.list {
		out[i] = s.Name
	}
	return out
}

// run builds the Target (the console's zone, or the one the platform
// described) and runs the target scenarios on it; a target that cannot be
// built fails every scenario with the reason.
func (r *targetRun) run(ctx context.Context, pf platform.Platform, ep platform.Endpoints, w *reports.Writer, log *slog.Logger,
	progress func(scenarios.Status), say func(string, ...any)) []reports.Verdict {
	fail := func(err error) []reports.Verdict {
		var out []reports.Verdict
		for _, sc := range r.list {
			v := reports.Verdict{Scenario: sc.Name, Error: err.Error()}
			_ = w.Write(reports.KindVerdict, v)
			out = append(out, v)
		}
		return out
	}
	prof := r.prof
	var t target.Target
	ref := ep.Target
	if r.console != nil {
		var s target.ConsoleSettings
		var err error
		if t, ref, s, err = scenarios.NewEnv(ep, *r.console, w, log).ConsoleTarget(ctx, say); err != nil {
			return fail(err)
		}
		prof = consoleTargetProfile(prof, s)
	} else {
		if ref == nil {
			return fail(errors.New("the platform came up without a scale target (no Endpoints.Target)"))
		}
		var err error
		if t, err = targetFromRef(ctx, ref); err != nil {
			return fail(fmt.Errorf("target %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Deployment, err))
		}
	}
	say("target %s: load to %s/mcp", t.Name(), ref.LoadURL)
	env := scenarios.NewTargetEnv(t, ref, prof, w, log)
	env.Progress = progress
	if f, ok := pf.(platform.Faulter); ok {
		env.Faults = f
	}
	return env.Run(ctx, r.list)
}

// consoleTargetProfile fits the target profile to the console's settings:
// the console keeps a count set by hand for its down cooldown and then
// steps down from it (FactCountSet), so viewer-refused watches the kept
// count for at most the down cooldown less two sample intervals (a reading
// and the round that may follow the cooldown's end), never longer than the
// profile's CountHold.
func consoleTargetProfile(p scenarios.Profile, s target.ConsoleSettings) scenarios.Profile {
	if hold := s.DownCooldown - 2*p.SampleInterval; hold > 0 && hold < p.CountHold {
		p.CountHold = hold
	}
	// the console's workers are not CPU-bound: the published load test's
	// 64 VUs and the post's spike, not the smaller kind figures that keep a
	// 2-core node's CPU-bound HPA target within the machine
	p.VUs, p.SpikeVUScale = scenarios.TargetPublished().VUs, 1
	return p
}

// settings are the target run's settings for the results file.
func (r *targetRun) settings(spec *platform.TargetSpec) map[string]string {
	s := r.prof.TargetSettings()
	if spec == nil { // the console
		s["target"], s["workload"] = string(target.Console), "worker"
		return s
	}
	s["target"], s["workload"] = spec.Kind, spec.Workload
	if a := spec.Adopt; a != nil {
		s["adopted"] = a.Namespace + "/" + a.Deployment
	}
	return s
}
