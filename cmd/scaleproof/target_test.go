package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestPlanRunTargets: the plan --scenarios and --target make: whether the
// target scenarios run (and which), or the console's own, and the usage
// errors planRun itself gives (not a missing reference binary).
func TestPlanRunTargets(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		target string // the target scenarios' names; "" the console's own
		own    string // the console's own scenarios
		err    string
	}{
		{args: []string{"--scenarios", "targets"}, target: "viewer-refused,sustained,max-lowered,spike,outage"},
		{args: []string{"--scenarios", " targets "}, target: "viewer-refused,sustained,max-lowered,spike,outage"},
		{args: []string{"--target", "console", "--scenarios", "spike"}, target: "spike"},
		{args: []string{"--scenarios", "spike"}, own: "spike"},
		{args: []string{"--scenarios", "sustained,burst"}, own: "sustained,burst"},
		{args: []string{"--scenarios", "targets,burst"}, err: "run in separate runs"},
		{args: []string{"--scenarios", "targets", "--profile", "selftest"}, err: "selftest"},
		{args: []string{"--scenarios", "targets", "--canary"}, err: "--canary"},
		{args: []string{"--scenarios", "targets", "--policy", "hpa"}, err: "--policy hpa"},
		{args: []string{"--scenarios", "target-spike"}, err: "--target console --scenarios spike"},
		{args: []string{"--platform", "kind", "--target", "hpa", "--scenarios", "target-spike"}, err: "it is now spike"},
	} {
		o := &runOpts{}
		c := newRunCmdFor(o)
		if err := c.ParseFlags(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		o.tgt.explicit = c.Flags().Changed("target")
		p, err := planRun(o)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.target != "":
			if p.tr == nil || strings.Join(p.tr.names(), ",") != tc.target {
				t.Errorf("%v: target run %v, want the target scenarios %s", tc.args, p.tr, tc.target)
			}
		default:
			if p.tr != nil || strings.Join(p.names, ",") != tc.own {
				t.Errorf("%v: target run %v, names %v, want the console's own %s", tc.args, p.tr != nil, p.names, tc.own)
			}
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
		{"--platform", "kind", "--target", "hpa", "--scenarios", "burst"},
		{"--target", "console", "--scenarios", "sustained,burst"}, // --target console: the target scenarios only
		{"--platform", "kind", "--target", "hpa", "--canary"},
		{"--platform", "kind", "--target", "keda", "--policy", "hpa"},
		{"--platform", "kubeconfig", "--target", "hpa", "--deployment", "d"},
		{"--workload", "queue"},
		{"--scenarios", "targets,burst"},                                      // the console: target and console scenarios mixed
		{"--scenarios", "targets", "--profile", "selftest"},                   // no selftest target profile
		{"--scenarios", "targets", "--canary"},                                // the console's own scenarios only
		{"--target", "console", "--scenarios", "spike", "--policy", "hpa"},    // judged on the step policy's contracts
		{"--target", "console", "--scenarios", "spike", "--load-shards", "2"}, // the load runs in this process
		{"--target", "console", "--scenarios", "target-nope"},                 // unknown target scenario
		{"--scenarios", "target-spike"},                                       // the old name
		{"--platform", "kind", "--target", "hpa", "--scenarios", "targets,burst"},
	} {
		if _, code := execute(t, newRunCmd(), append(args, "--quiet")...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
		if ents, _ := os.ReadDir("."); len(ents) != 0 {
			t.Errorf("%v left %v", args, ents)
		}
	}
	long := newRunCmd().Long
	for _, w := range []string{"--target", "contract", "n/a", "--target console", "docs/targets.md", "--scaled-object", "--scenarios targets"} {
		if !strings.Contains(long, w) {
			t.Errorf("run --help does not mention %q", w)
		}
	}
}

// TestTargetScenarioNames: --scenarios on each target: hpa and keda always
// run the target scenarios and refuse the console's; the console runs them
// when --target console is given or "targets" is named (without --target,
// every name is its own), and never both kinds at once.
// TestCleanScenarioNames: --scenarios is trimmed, empty names dropped, the
// targets keyword expanded, and each scenario runs once.
func TestCleanScenarioNames(t *testing.T) {
	all := "viewer-refused,sustained,max-lowered,spike,outage"
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"sustained", "sustained"},
		{"targets,targets", all},
		{"targets,spike", all},
		{"spike,spike", "spike"},
		{"spike,,", "spike"},
		{" spike , burst", "spike,burst"},
	} {
		var in []string
		if tc.in != "" {
			in = strings.Split(tc.in, ",")
		}
		if got := strings.Join(cleanScenarioNames(in), ","); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTargetScenarioNames(t *testing.T) {
	all := []string{"viewer-refused", "sustained", "max-lowered", "spike", "outage"}
	for _, tc := range []struct {
		name     string
		kind     target.Kind
		explicit bool // --target given
		in       []string
		on       bool
		names    []string
		want     string // "" ok; else part of the error
	}{
		{name: "console default", kind: target.Console},
		{name: "console's own", kind: target.Console, in: []string{"sustained", "contract"}},
		{name: "--target console: every target scenario", kind: target.Console, explicit: true, on: true},
		{name: "--target console: shared names on the target zone", kind: target.Console, explicit: true,
			in: []string{"sustained", "viewer-refused"}, on: true, names: []string{"sustained", "viewer-refused"}},
		{name: "--target console: a console-only name", kind: target.Console, explicit: true, in: []string{"sustained", "burst"},
			want: "burst are the reference console's own (run them without --target)"},
		{name: "the old sustained name", kind: target.Console, in: []string{"target-sustained"}, want: "now sustained"},
		{name: "console targets", kind: target.Console, in: []string{"targets"}, on: true, names: all},
		{name: "the old spike name", kind: target.HPA, in: []string{"target-spike"}, want: "now spike"},
		{name: "console two by name", kind: target.Console, explicit: true, in: []string{"max-lowered", "spike"}, on: true,
			names: []string{"max-lowered", "spike"}},
		{name: "console's own spike", kind: target.Console, in: []string{"spike"}},
		{name: "console's own max-lowered", kind: target.Console, in: []string{"max-lowered"}},
		{name: "console mixed", kind: target.Console, in: []string{"targets", "burst"}, want: "run in separate runs"},
		{name: "console's own outage", kind: target.Console, in: []string{"outage", "burst"}},
		{name: "console outage on its target zone", kind: target.Console, explicit: true, in: []string{"spike", "outage"}, on: true,
			names: []string{"spike", "outage"}},
		{name: "hpa outage", kind: target.HPA, in: []string{"outage"}, on: true, names: []string{"outage"}},
		{name: "hpa misspelt", kind: target.HPA, in: []string{"target-rolse"}, want: `unknown scenario "target-rolse"`},
		{name: "the old outage name", kind: target.Console, in: []string{"target-outage"}, want: "now outage"},
		{name: "the old max-lowered name", kind: target.HPA, in: []string{"target-max-lowered"}, want: "now max-lowered"},
		{name: "the old roles name", kind: target.KEDA, in: []string{"target-roles"}, want: "now viewer-refused"},
		{name: "hpa default", kind: target.HPA, on: true},
		{name: "keda targets", kind: target.KEDA, in: []string{"targets"}, on: true, names: all},
		{name: "hpa sustained", kind: target.HPA, in: []string{"sustained"}, on: true, names: []string{"sustained"}},
		{name: "hpa console scenario", kind: target.HPA, in: []string{"burst"}, want: "--target hpa runs the target scenarios"},
		{name: "keda mixed", kind: target.KEDA, in: []string{"spike", "max-1"}, want: "max-1 are the reference console's own"},
	} {
		on, names, err := targetScenarioNames(tc.kind, tc.explicit, tc.in)
		switch {
		case tc.want != "":
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case on != tc.on || strings.Join(names, ",") != strings.Join(tc.names, ","):
			t.Errorf("%s: %v %v, want %v %v", tc.name, on, names, tc.on, tc.names)
		}
	}
}

// TestConsoleTargetProfile: the console keeps a count set by hand for its
// down cooldown only, so viewer-refused watches it at most the down cooldown
// less two samples, and never longer than the profile says.
func TestConsoleTargetProfile(t *testing.T) {
	for _, tc := range []struct {
		down, hold, want time.Duration
	}{
		{12 * time.Second, 20 * time.Second, 10 * time.Second},  // quick on local
		{120 * time.Second, 60 * time.Second, 60 * time.Second}, // published
		{time.Second, 20 * time.Second, 20 * time.Second},       // no room: left as it is
	} {
		p := scenarios.TargetQuick()
		p.CountHold = tc.hold
		if got := consoleTargetProfile(p, target.ConsoleSettings{DownCooldown: tc.down}).CountHold; got != tc.want {
			t.Errorf("down cooldown %s, hold %s: %s, want %s", tc.down, tc.hold, got, tc.want)
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
		checkAllFailed(t, vs, tc.want)
	}
	// The console: a console that is not there fails every scenario too.
	quick := scenarios.Quick()
	tr.console = &quick
	away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer away.Close()
	vs := tr.run(context.Background(), nil, platform.Endpoints{ConsoleURL: away.URL}, w, nil, func(scenarios.Status) {}, say)
	checkAllFailed(t, vs, "turning on auto-rebalance every 2s: HTTP 503")
}

func checkAllFailed(t *testing.T, vs []reports.Verdict, want string) {
	t.Helper()
	if len(vs) != len(scenarios.TargetScenarios()) {
		t.Fatalf("%d verdicts", len(vs))
	}
	for _, v := range vs {
		if v.Passed || !strings.Contains(v.Error, want) {
			t.Errorf("%+v, want an error with %q", v, want)
		}
	}
}
