package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/promserver"
	"github.com/scaleproof/scaleproof/internal/skips"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
)

// TestPolicyFlags: --policy and --prometheus are checked before anything
// starts, and hpa without a Prometheus fails early with a clear message.
func TestPolicyFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "keda"}, `--policy "keda": want step or hpa`},
		{[]string{"--prometheus", "maybe"}, `--prometheus "maybe": want auto, off or http://HOST:PORT`},
		{[]string{"--policy", "hpa", "--prometheus", "off"}, "--policy hpa needs Prometheus"},
		{[]string{"--scenarios", "spike", "--prometheus", "off"}, "the spike scenario needs Prometheus"},
		{[]string{"--platform", "external", "--policy", "hpa"}, "needs --prometheus URL"},
		{[]string{"--platform", "kubeconfig", "--policy", "hpa", "--prometheus", "http://127.0.0.1:9090"}, "platform kubeconfig deploys none"},
		{[]string{"--platform", "gke", "--scenarios", "spike"}, "the spike scenario needs Prometheus (the hpa metric source and the signal), and platform gke deploys none"},
		{[]string{"--scenarios", "near-threshold"}, "run it with --policy hpa"},
	}
	for _, tc := range tests {
		o := &policyOpts{}
		cmd := newRunCmd()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		o.policy, _ = cmd.Flags().GetString("policy")
		o.prometheus, _ = cmd.Flags().GetString("prometheus")
		platformName, _ := cmd.Flags().GetString("platform")
		names, _ := cmd.Flags().GetStringSlice("scenarios")
		list, err := scenarios.Select(names)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.resolve(platformName, names, list); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	o := &policyOpts{policy: "hpa", prometheus: "http://127.0.0.1:9090"}
	list, err := o.resolve("local", nil, scenarios.All())
	if err != nil || len(list) != 6 || list[5].Name != "spike" {
		t.Fatalf("--policy hpa runs the five and spike: %d scenarios %v", len(list), err)
	}
	if o.deployPrometheus {
		t.Error("local deploys a Prometheus into a cluster")
	}
	// kind deploys its own Prometheus beside the reference system
	for _, k := range []struct {
		policy string
		names  []string
		want   bool
	}{{"hpa", nil, true}, {"step", []string{"spike"}, true}, {"step", []string{"sustained"}, false}} {
		o := &policyOpts{policy: k.policy, prometheus: "auto"}
		list, err := scenarios.Select(k.names)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.resolve("kind", k.names, list); err != nil || o.deployPrometheus != k.want {
			t.Errorf("kind, --policy %s --scenarios %v: %v, deploys Prometheus %v; want %v", k.policy, k.names, err, o.deployPrometheus, k.want)
		}
		if got := o.settings("kind", scenarios.Quick())["prometheus"]; got != map[bool]string{true: "in-cluster", false: "none"}[k.want] {
			t.Errorf("kind results' prometheus setting %q", got)
		}
	}
	if list, _ = o.resolve("local", []string{"sustained"}, list[2:3]); len(list) != 1 {
		t.Fatalf("--scenarios wins: %d", len(list))
	}
	if s := o.settings("local", scenarios.Quick()); s["policy"] != "hpa" || s["hpa_threshold"] != "24" || s["hpa_polling_interval"] != "3s" {
		t.Fatalf("settings %v", s)
	}
}

// TestHPAOnLocal is the done-when run of issue 3: the quick profile on the
// local platform with --policy hpa, the real prometheus binary as the metric
// source, the sustained and spike scenarios. It prints the table row and the
// spike scenario's result, and checks the verdicts, the results file's
// signal and at_max records, and that nothing is left running.
func TestHPAOnLocal(t *testing.T) {
	if testing.Short() || builtHarness == "" {
		t.Skip("end-to-end run skipped in -short mode")
	}
	if _, err := promserver.Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: make deps-prometheus)", err)
		}
		skips.Skip(t, err)
	}
	// The default artifacts folder, which is relative (./_artifacts/<run-id>):
	// a relative path once left Prometheus reading a targets file that did
	// not exist, and the hpa zones never scaled.
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, builtHarness, "run", "--platform", "local", "--profile", "quick", "--policy", "hpa",
		"--scenarios", "sustained,spike", "--ref-bin", builtRef, "--quiet")
	cmd.Dir = work
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ARTIFACTS=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	arts, _ := filepath.Glob(filepath.Join(work, "_artifacts", "*"))
	if len(arts) != 1 {
		t.Fatalf("want one run folder under ./_artifacts, have %v (stderr: %s)", arts, stderr.String())
	}
	art := arts[0]
	took := time.Since(start)
	t.Logf("scaleproof run --policy hpa (%s):\n%s", took.Round(time.Second), stdout.String())
	dump := func() {
		t.Logf("stderr:\n%s", stderr.String())
		logs, _ := filepath.Glob(filepath.Join(art, "logs", "*.log"))
		for _, l := range logs {
			if b, err := os.ReadFile(l); err == nil && len(b) > 0 && (strings.Contains(l, "console") || strings.Contains(l, "prometheus")) {
				if len(b) > 3000 {
					b = b[len(b)-3000:]
				}
				t.Logf("%s (tail):\n%s", filepath.Base(l), b)
			}
		}
	}
	if err != nil {
		dump()
		t.Fatalf("scaleproof run: %v", err)
	}
	out := stdout.String()
	var row string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "local ") {
			row = sc.Text()
		}
	}
	if row == "" || !strings.Contains(out, "PASS  sustained") || !strings.Contains(out, "PASS  spike") {
		dump()
		t.Fatalf("no table row or a scenario did not pass:\n%s", out)
	}

	res, err := reports.Read(filepath.Join(art, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Meta.Policy != "hpa" || res.Meta.Settings["hpa_threshold"] != "24" || res.Incomplete || len(res.Verdicts) != 2 {
		t.Fatalf("results: policy %q settings %v incomplete %v verdicts %d", res.Meta.Policy, res.Meta.Settings, res.Incomplete, len(res.Verdicts))
	}
	sum := res.Summary
	if sum == nil || sum.UpTo3S <= 0 || sum.BackTo1S <= sum.UpTo3S || sum.Calls.Server5xx != 0 || sum.Calls.OK == 0 {
		t.Fatalf("summary row %+v", sum)
	}
	for _, v := range res.Verdicts {
		if !v.Passed {
			t.Errorf("%s failed: %+v", v.Scenario, v)
		}
		if v.Scenario == "spike" {
			var facts []string
			for _, f := range v.Facts {
				facts = append(facts, f.Name+": "+f.Detail)
			}
			t.Logf("spike: peak %d, back to 1 at %.0f s, %.0f s long, calls %+v\n  %s", v.PeakCount, v.BackTo1S, v.DurationS, v.Calls,
				strings.Join(facts, "\n  "))
		}
	}
	// The signal and at_max records (kinds the reports package skips).
	b, err := os.ReadFile(filepath.Join(art, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	signals, atMax, hpaScale := 0, 0, 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		var rec struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		switch rec.Kind {
		case scenarios.KindSignal:
			var s scenarios.SignalRecord
			if err := json.Unmarshal(rec.Data, &s); err != nil || s.Scenario != "spike" || s.Threshold != 24 || s.Policy != "hpa" {
				t.Fatalf("signal record %s: %v", rec.Data, err)
			}
			signals++
		case scenarios.KindAtMax:
			atMax++
		}
	}
	for _, ev := range res.Events {
		if strings.Contains(ev.Reason, "per replica") {
			hpaScale++
		}
	}
	if signals < 30 || atMax != 2 || hpaScale == 0 {
		t.Fatalf("%d signal records, %d at_max records, %d scale events decided by the hpa policy", signals, atMax, hpaScale)
	}
	if took > 5*time.Minute {
		t.Errorf("the run took %s; keep it under ~4 minutes", took)
	}
}
