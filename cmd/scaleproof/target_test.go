package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// TestResolveTarget: the target flags against the platform: the console
// needs none; hpa and keda run on kind and kubeconfig only; adopting needs
// namespace, deployment and the HPA (or ScaledObject); each refusal says
// what to do.
func TestResolveTarget(t *testing.T) {
	for _, tc := range []struct {
		name, platform, ns string
		o                  targetOpts
		want               string // "" ok; else part of the error
		spec               *platform.TargetSpec
	}{
		{name: "console", platform: "local", o: targetOpts{target: "console", workload: "worker"}},
		{name: "unknown target", platform: "kind", o: targetOpts{target: "vpa", workload: "worker"}, want: "want one of console, hpa, keda"},
		{name: "bad workload", platform: "kind", o: targetOpts{target: "hpa", workload: "batch"}, want: "want worker or queue"},
		{name: "queue on console", platform: "local", o: targetOpts{target: "console", workload: "queue"}, want: "needs --target hpa or keda"},
		{name: "adopt flags on console", platform: "kubeconfig", o: targetOpts{target: "console", workload: "worker", deployment: "d"}, want: "need --target hpa or keda"},
		{name: "hpa on local", platform: "local", o: targetOpts{target: "hpa", workload: "worker"}, want: "--platform kind or kubeconfig"},
		{name: "keda on external", platform: "external", o: targetOpts{target: "keda", workload: "worker"}, want: "--platform external runs the reference console only"},
		{name: "hpa on gke", platform: "gke", o: targetOpts{target: "hpa", workload: "worker"}, want: "--platform kind or kubeconfig"},
		{name: "hpa on kind", platform: "kind", o: targetOpts{target: "hpa", workload: "worker"}, spec: &platform.TargetSpec{Kind: "hpa", Workload: "worker"}},
		{name: "keda queue on kind", platform: "kind", o: targetOpts{target: "keda", workload: "queue"}, spec: &platform.TargetSpec{Kind: "keda", Workload: "queue"}},
		{name: "adopt on kind", platform: "kind", o: targetOpts{target: "hpa", workload: "worker", hpa: "h"}, want: "use --platform kubeconfig"},
		{name: "adopt missing all", platform: "kubeconfig", o: targetOpts{target: "hpa", workload: "worker", url: "http://127.0.0.1:1"}, want: "needs --namespace, --deployment, --hpa"},
		{name: "adopt missing hpa", platform: "kubeconfig", ns: "n", o: targetOpts{target: "hpa", workload: "worker", deployment: "d"}, want: "needs --hpa"},
		{name: "adopt keda missing scaled object", platform: "kubeconfig", ns: "n", o: targetOpts{target: "keda", workload: "worker", deployment: "d", hpa: "h"}, want: "needs --scaled-object"},
		{name: "adopt hpa with scaled object", platform: "kubeconfig", ns: "n", o: targetOpts{target: "hpa", workload: "worker", deployment: "d", hpa: "h", scaledObject: "s"}, want: "--scaled-object is for --target keda"},
		{name: "adopt queue", platform: "kubeconfig", ns: "n", o: targetOpts{target: "hpa", workload: "queue", deployment: "d", hpa: "h"}, want: "leave --workload out"},
		{name: "adopt hpa", platform: "kubeconfig", ns: "n", o: targetOpts{target: "hpa", workload: "worker", deployment: "d", hpa: "h"},
			spec: &platform.TargetSpec{Kind: "hpa", Workload: "worker", Adopt: &platform.Adopt{Namespace: "n", Deployment: "d", HPA: "h"}}},
		{name: "adopt keda", platform: "kubeconfig", ns: "n", o: targetOpts{target: "keda", workload: "worker", deployment: "d", scaledObject: "s", url: "http://x"},
			spec: &platform.TargetSpec{Kind: "keda", Workload: "worker", Adopt: &platform.Adopt{Namespace: "n", Deployment: "d", ScaledObject: "s", LoadURL: "http://x"}}},
		{name: "kubeconfig deploys hpa", platform: "kubeconfig", o: targetOpts{target: "hpa", workload: "worker"}, spec: &platform.TargetSpec{Kind: "hpa", Workload: "worker"}},
	} {
		spec, err := resolveTarget(tc.platform, tc.ns, tc.o)
		switch {
		case tc.want != "":
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case (spec == nil) != (tc.spec == nil) || spec != nil && (spec.Kind != tc.spec.Kind || spec.Workload != tc.spec.Workload ||
			(spec.Adopt == nil) != (tc.spec.Adopt == nil) || spec.Adopt != nil && *spec.Adopt != *tc.spec.Adopt):
			t.Errorf("%s: spec %+v, want %+v", tc.name, spec, tc.spec)
		}
	}
}

// TestRunTargetUsage: run refuses bad target flags with exit 2 before it
// makes anything; --help explains targets and contracts.
func TestRunTargetUsage(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("ARTIFACTS", "")
	for _, args := range [][]string{
		{"--target", "hpa"}, // local
		{"--platform", "kind", "--target", "hpa", "--profile", "selftest"},
		{"--platform", "kind", "--target", "hpa", "--scenarios", "sustained"},
		{"--platform", "kind", "--target", "hpa", "--canary"},
		{"--platform", "kind", "--target", "keda", "--policy", "hpa"},
		{"--platform", "kubeconfig", "--target", "hpa", "--deployment", "d"},
		{"--workload", "queue"},
	} {
		if _, code := execute(t, newRunCmd(), append(args, "--quiet")...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
		if ents, _ := os.ReadDir("."); len(ents) != 0 {
			t.Errorf("%v left %v", args, ents)
		}
	}
	long := newRunCmd().Long
	for _, w := range []string{"--target", "contract", "n/a", "target-spike", "docs/targets.md", "--scaled-object"} {
		if !strings.Contains(long, w) {
			t.Errorf("run --help does not mention %q", w)
		}
	}
}

// TestTargetRunFailures: a platform that came up without a target, or a
// target that cannot be built, fails every target scenario with the
// reason (written to the results), never passes one.
func TestTargetRunFailures(t *testing.T) {
	tr, err := newTargetRun("quick", nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "results.jsonl")
	w, err := reports.Create(path, reports.RunMeta{Platform: "kind", Profile: "quick"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(reports.End{})
	say := func(string, ...any) {}
	old := targetFromRef
	defer func() { targetFromRef = old }()
	targetFromRef = func(context.Context, *platform.TargetRef) (target.Target, error) {
		return nil, errors.New("no such HPA")
	}
	for _, tc := range []struct {
		ep   platform.Endpoints
		want string
	}{
		{platform.Endpoints{}, "without a scale target"},
		{platform.Endpoints{Target: &platform.TargetRef{Kind: "hpa", Namespace: "n", Deployment: "d"}}, "target hpa n/d: no such HPA"},
	} {
		vs := tr.run(context.Background(), nil, tc.ep, w, nil, func(scenarios.Status) {}, say)
		if len(vs) != len(scenarios.TargetScenarios()) {
			t.Fatalf("%d verdicts", len(vs))
		}
		for _, v := range vs {
			if v.Passed || !strings.Contains(v.Error, tc.want) {
				t.Errorf("%+v, want an error with %q", v, tc.want)
			}
		}
	}
}
