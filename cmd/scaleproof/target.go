package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// targetOpts are run's target flags: which autoscaler is judged (--target),
// on which workload (--workload), and on --platform kubeconfig the user's
// own scale target to adopt as it is.
type targetOpts struct {
	target, workload                   string
	deployment, hpa, scaledObject, url string
}

func addTargetFlags(f *pflag.FlagSet, o *targetOpts) {
	f.StringVar(&o.target, "target", string(target.Console), "the autoscaler judged: console (the reference console, the five scenarios), hpa (the cluster's HorizontalPodAutoscaler on a Deployment) or keda (a KEDA ScaledObject and the HPA it makes); hpa and keda run the target scenarios on --platform kind or kubeconfig")
	f.StringVar(&o.workload, "workload", "worker", "with --target hpa or keda: the scale target deployed, worker (the reference worker Deployment) or queue (a query scheduler and its pulling queriers; the queriers scale)")
	f.StringVar(&o.deployment, "deployment", "", "kubeconfig with --target: adopt this Deployment (in --namespace) as the scale target, judged as it is; nothing is deployed")
	f.StringVar(&o.hpa, "hpa", "", "kubeconfig with --target hpa: the HorizontalPodAutoscaler of --deployment to judge (with keda: the HPA KEDA made, default keda-hpa-<scaled object>)")
	f.StringVar(&o.scaledObject, "scaled-object", "", "kubeconfig with --target keda: the ScaledObject of --deployment to judge")
	f.StringVar(&o.url, "load-url", "", "kubeconfig with --target, adopting: the base URL the load's calls go to ({load-url}/mcp); default: what the platform finds")
}

// targetFromRef builds the Target the platform's Up described (a variable
// so that tests can put a fake in its place).
var targetFromRef = target.FromRef

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

// targetRun is a run's target part: its scenarios and profile.
type targetRun struct {
	list []scenarios.TargetScenario
	prof scenarios.TargetProfile
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

// run builds the Target the platform described and runs the target
// scenarios on it; a target that cannot be built fails every scenario
// with the reason.
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
	if ep.Target == nil {
		return fail(errors.New("the platform came up without a scale target (no Endpoints.Target)"))
	}
	t, err := targetFromRef(ctx, ep.Target)
	if err != nil {
		return fail(fmt.Errorf("target %s %s/%s: %w", ep.Target.Kind, ep.Target.Namespace, ep.Target.Deployment, err))
	}
	say("target %s: load to %s/mcp", t.Name(), ep.Target.LoadURL)
	env := scenarios.NewTargetEnv(t, ep.Target, r.prof, w, log)
	env.Progress = progress
	if f, ok := pf.(platform.Faulter); ok {
		env.Faults = f
	}
	return env.Run(ctx, r.list)
}

// settings are the target run's settings for the results file.
func (r *targetRun) settings(spec *platform.TargetSpec) map[string]string {
	s := r.prof.Settings()
	s["target"], s["workload"] = spec.Kind, spec.Workload
	if a := spec.Adopt; a != nil {
		s["adopted"] = a.Namespace + "/" + a.Deployment
	}
	return s
}
