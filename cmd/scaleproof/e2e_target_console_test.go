package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
	"github.com/scaleproof/scaleproof/scenarios/target/kube"
)

// TestTargetScenariosOnConsole: the target scenarios that judge hpa and
// keda, run on the reference console (local platform, quick profile): every
// verdict passes, every target fact is judged (none n/a) on the console's
// own contract text, and "the trail names the actor" applies on the console
// while it is n/a for an HPA. A subset (sustained, viewer-refused, about
// 50 s): all five take about 4 minutes on 2 cores. Both run on the target
// zone because --target console is given.
func TestTargetScenariosOnConsole(t *testing.T) {
	if testing.Short() || builtHarness == "" {
		t.Skip("end-to-end run skipped in -short mode")
	}
	art := filepath.Join(t.TempDir(), "artifacts")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, builtHarness, "run", "--platform", "local", "--profile", "quick", "--target", "console",
		"--scenarios", "sustained,viewer-refused", "--ref-bin", builtRef, "--artifacts", art,
		"--screenshots=false", "--json", "--quiet")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("scaleproof run --target console --scenarios sustained,viewer-refused: %s", time.Since(start).Round(time.Second))
	var out struct {
		Verdicts []reports.Verdict `json:"verdicts"`
	}
	if jerr := json.Unmarshal(stdout.Bytes(), &out); err != nil || jerr != nil {
		t.Fatalf("run: %v, --json: %v\nstderr:\n%s\nstdout:\n%s", err, jerr, stderr.String(), stdout.String())
	}
	// The contracts the console declares under the quick profile's
	// settings (which its GET /api/v1/config/autoscale shows) and the max 3.
	q := scenarios.Quick()
	want := target.NewConsoleWith(nil, platform.Keys{}, "g", "z", target.ConsoleSettings{UpCooldown: q.UpCooldown,
		DownCooldown: q.DownCooldown, Interval: q.SchedulerInterval, LowRounds: 3, Max: q.Max}).Contracts()
	seen := map[target.Fact]bool{}
	for _, v := range out.Verdicts {
		if !v.Passed {
			t.Errorf("%s: %+v", v.Scenario, v)
		}
		for _, f := range v.Facts {
			c, promised := want[target.Fact(f.Name)]
			if !promised { // a fact of the scenario's own
				if !f.Passed {
					t.Errorf("%s: fact %q failed: %s", v.Scenario, f.Name, f.Detail)
				}
				continue
			}
			if !f.Passed || f.NotApplicable != "" || f.Contract == "" || f.Contract != c.Text {
				t.Errorf("%s: fact %q: passed %v, n/a %q, contract %q; want passed on the console's contract %q (%s)",
					v.Scenario, f.Name, f.Passed, f.NotApplicable, f.Contract, c.Text, f.Detail)
			}
			seen[target.Fact(f.Name)] = true
		}
	}
	if len(out.Verdicts) != 2 || len(seen) != 6 || !seen[target.FactTrailActor] {
		t.Errorf("%d verdicts, facts judged %v; want 2 verdicts and the six facts of sustained and viewer-refused", len(out.Verdicts), seen)
	}

	// The same fact on an HPA: not its promise (Events name the controller).
	cs := fake.NewClientset(&autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "h"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "d", APIVersion: "apps/v1"}},
	})
	h, err := kube.NewHPA(context.Background(), kube.HPAConfig{Run: cs, Admin: cs, Viewer: cs, Namespace: "n", Deployment: "d", HPA: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if c := h.Contracts()[target.FactTrailActor]; c.Applies || !strings.Contains(c.NotApplicable, "Event") {
		t.Errorf("hpa: %q applies %v (%q), want n/a", target.FactTrailActor, c.Applies, c.NotApplicable)
	}
}
