package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
)

func TestJudgeFault(t *testing.T) {
	sc, _ := scenarios.Select([]string{"sustained", "max-1"})
	for _, c := range []struct {
		name   string
		run    suiteRun
		caught bool
		fact   string
		errHas string
		failed []string
	}{
		{"first failing fact in scenario order", suiteRun{name: "x", scenarios: sc, verdicts: []reports.Verdict{
			{Scenario: "sustained", Facts: []reports.Fact{{Name: "a", Passed: true}, {Name: "b", Passed: false}, {Name: "c", Passed: false}}},
			{Scenario: "max-1", Facts: []reports.Fact{{Name: "d", Passed: false}}},
		}}, true, "b", "", []string{"sustained: b", "sustained: c", "max-1: d"}},
		{"every fact passed", suiteRun{name: "x", scenarios: sc, verdicts: []reports.Verdict{
			{Scenario: "sustained", Passed: true, Facts: []reports.Fact{{Name: "a", Passed: true}}},
			{Scenario: "max-1", Passed: true, Facts: []reports.Fact{{Name: "d", Passed: true}}},
		}}, false, "", "every fact passed", nil},
		{"a not-applicable fact is not a catch", suiteRun{name: "x", scenarios: sc, verdicts: []reports.Verdict{
			{Scenario: "sustained", Passed: true, Facts: []reports.Fact{{Name: "a", NotApplicable: "no such promise"}, {Name: "b", Passed: true}}},
			{Scenario: "max-1", Passed: true, Facts: []reports.Fact{{Name: "d", Passed: true}}},
		}}, false, "", "every fact passed", nil},
		{"a scenario error is not a catch", suiteRun{name: "x", scenarios: sc, verdicts: []reports.Verdict{
			{Scenario: "sustained", Error: "create zone: HTTP 502", Facts: nil},
		}}, false, "", "create zone: HTTP 502; 1 of 2 scenarios ran", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			row := judgeFault(&c.run)
			if row.Caught != c.caught || row.Fact != c.fact || !strings.Contains(row.Error, c.errHas) || !slices.Equal(row.Failed, c.failed) {
				t.Errorf("row %+v, want caught %v by %q, error with %q, failing facts %q", row, c.caught, c.fact, c.errHas, c.failed)
			}
		})
	}
	b := judgeBaseline(&suiteRun{scenarios: sc, verdicts: []reports.Verdict{{Scenario: "sustained", Passed: true}}})
	if b.Passed {
		t.Errorf("a baseline that ran 1 of 2 scenarios passed: %+v", b)
	}
}

// TestSelftestOnLocal is `scaleproof selftest`: a clean baseline and every
// planted fault of the catalogue on the local platform (selftest profile);
// every fault must be caught by a failing fact and the baseline must pass.
// caughtBy is, for each fault of the catalogue, the scenario and the fact
// (its name's beginning; settings follow in brackets) that must catch it.
// alsoBy names the facts that judge the same rule decision by decision
// where the rule's own fact judges an outcome: either one failing catches
// the fault (plus-one-steps: a step of 1 → 2 where the harness's reading of
// the load, allowed to be 20 % high, asks for only 2 passes the outcome but
// never the round recomputed from what the console read).
var caughtBy = map[string]struct{ scenario, fact string }{
	faults.IgnoreUpCooldown:        {"sustained", "no step up within the up cooldown"},
	faults.IgnoreDownCooldown:      {"sustained", "no step down within the down cooldown"},
	faults.DropToOne:               {"sustained", "every step down is exactly one worker"},
	faults.PlusOneSteps:            {"sustained", "the first step up under load goes straight to the proportional target"},
	faults.AuditHolds:              {"max-1", "holds are not audited"},
	faults.LoweredMaxLazy:          {"max-lowered", "a lowered max applies in the request"},
	faults.DownTooEarly:            {"sustained", "no step down before 3 low rounds in a row"},
	faults.Linger:                  {"sustained", "once a step down is allowed it comes within one scheduler interval"},
	faults.ScaleInUnreachable:      {"outage", "no step down while a worker is unreachable"},
	faults.NoDrain:                 {"scale-in-drain", "no call failed around the scale-ins"},
	faults.EdgeResend:              {"no-double-execution", "no call runs twice: executions never exceed calls sent"},
	faults.IgnoreRate:              {"rate-path", "the calls-per-second trigger alone scales up"},
	faults.DownUnderRate:           {"rate-path", "no step down while count − 1 workers could not carry the rate"},
	faults.ForgetCooldownOnRestart: {"restart-cooldown", "no step down within the down cooldown of the last change, across a console restart"},
	faults.WorkerAdmitsOverLimit:   {"max-1", "back-pressure exactly at the limit"},
	faults.MaxLeaksToGroup:         {"max-lowered", "the group's other zone did not move: count, max and audit unchanged"},
	faults.CountAboveMaxAccepted:   {"viewer-refused", "an admin's count above the max"},
	faults.AuditForcedAsScheduler:  {"viewer-refused", "every audit entry names the actor that caused it"},
	faults.AuditReadableByViewer:   {"viewer-refused", "viewer gets 403 on every admin-only read"},
	faults.ViewerMayRebalance:      {"viewer-refused", "viewer and MCP-user keys get 403 on every mutating route"},
	faults.MaxAloneNotPersisted:    {"restart-keeps-changes", "a max changed alone survives a console restart"},
	faults.HPAIgnoreStabilization:  {"spike", "no scale-down before the"},
	faults.HPAIgnoreTolerance:      {"near-threshold", "a ratio within the tolerance"},
	faults.HPAIgnoreScaleUpLimit:   {"scale-up-limit", "scale-up within the policy's limits"},
	faults.EdgeRouteUnready:        {"readiness-routing", "a worker that fails readiness gets no new calls once the edge has re-read the listing"},
	faults.StreakNotReset:          {"low-streak-reset", "no step down until 3 new low rounds after a round that is not low"},
	faults.BusiestWorker:           {"uneven-load", "no step up while one worker is busy and the mean is under 50 %"},
	faults.CanaryNotCapacity:       {"sustained", "each step round's cooldown clock, low streak and previous samples agree"},
}

var alsoBy = map[string]string{
	faults.PlusOneSteps: "every step round decided as the step rules say",
}

func TestSelftestOnLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("self-test skipped in -short mode")
	}
	dir := t.TempDir()
	harness, ref := buildBinaries(t, dir)
	art := filepath.Join(dir, "artifacts")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, harness, "selftest", "--ref-bin", ref, "--artifacts", art, "--json", "--quiet")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var rep SelftestReport
	if jerr := json.Unmarshal(stdout.Bytes(), &rep); jerr != nil {
		t.Fatalf("selftest: %v; decode --json: %v\nstderr:\n%s\nstdout:\n%s", err, jerr, stderr.String(), stdout.String())
	}
	t.Logf("selftest took %.0f s wall (%.0f s reported), %d platforms at once", time.Since(start).Seconds(), rep.TookS, rep.Parallel)
	for _, r := range rep.Faults {
		t.Logf("%-22s %-12s %s", r.Fault, r.Scenario, r.Fact)
		if r.Retried != "" {
			t.Logf("%-22s made again: the first try's platform did not come up: %s", r.Fault, r.Retried)
		}
	}
	if rep.Baseline.Retried != "" {
		t.Logf("baseline made again: the first try's platform did not come up: %s", rep.Baseline.Retried)
	}
	if err != nil {
		t.Errorf("selftest: %v (reason %q)\nstderr:\n%s", err, rep.Reason, stderr.String())
	}
	if !rep.Passed || !rep.Baseline.Passed {
		t.Errorf("selftest passed %v, baseline passed %v: %v", rep.Passed, rep.Baseline.Passed, rep.Baseline.Failed)
	}
	if !rep.Baseline.Passed {
		// A clean baseline that fails is a flaky verdict or a real bug: keep
		// what it measured (results, the processes' logs) where CI keeps its
		// artifacts, since the test's folder goes with it.
		for _, b := range []string{"baseline", "baseline-hpa"} {
			logVerdicts(t, filepath.Join(art, b, "results.jsonl"))
			if keep := os.Getenv("ARTIFACTS"); keep != "" {
				if err := os.CopyFS(filepath.Join(keep, "selftest-"+b), os.DirFS(filepath.Join(art, b))); err != nil {
					t.Log(err)
				}
			}
		}
	}
	if len(rep.Faults) != len(faults.Catalog) {
		t.Errorf("%d faults in the report, the catalogue has %d", len(rep.Faults), len(faults.Catalog))
	}
	for _, r := range rep.Faults {
		if !r.Caught || r.Fact == "" {
			t.Errorf("fault %s not caught: %s", r.Fault, r.Error)
		}
		if want, ok := caughtBy[r.Fault]; !ok {
			t.Errorf("fault %s: no expected fact in caughtBy", r.Fault)
		} else if !slices.ContainsFunc(r.Failed, func(f string) bool {
			also := alsoBy[r.Fault]
			return strings.HasPrefix(f, want.scenario+": "+want.fact) || also != "" && strings.HasPrefix(f, want.scenario+": "+also)
		}) {
			// The fact of the rule the fault breaks must fail; another fact
			// failing first (a check in the scenario's body that the fault
			// also breaks, depending on when the next sample lands) is fine.
			t.Errorf("fault %s: %s: %q did not fail; failing facts: %q", r.Fault, want.scenario, want.fact, r.Failed)
			logVerdicts(t, r.Results)
		}
		if res, err := reports.Read(r.Results); err != nil || res.Incomplete || len(res.Verdicts) == 0 {
			t.Errorf("fault %s: results %s: %v", r.Fault, r.Results, err)
		}
	}
	for _, f := range []string{"selftest.json", "selftest.md"} {
		b, err := os.ReadFile(filepath.Join(art, f))
		if err != nil {
			t.Error(err)
		} else if keep := os.Getenv("ARTIFACTS"); keep != "" {
			// CI keeps the self-test's table beside its other artifacts.
			if err := os.WriteFile(filepath.Join(keep, f), b, 0o644); err != nil {
				t.Log(err)
			}
		}
	}
}

// logVerdicts logs each verdict of a results file that did not pass: its
// error and every fact's detail, so a fault caught by an unexpected fact can
// be understood from the test's log alone (the artifacts are gone with the
// test's temporary folder).
func logVerdicts(t *testing.T, results string) {
	t.Helper()
	res, err := reports.Read(results)
	if err != nil {
		t.Logf("results %s: %v", results, err)
		return
	}
	for _, v := range res.Verdicts {
		if v.Passed {
			continue
		}
		t.Logf("  %s: error %q", v.Scenario, v.Error)
		for _, f := range v.Facts {
			t.Logf("    passed %-5v %s: %s", f.Passed, f.Name, f.Detail)
		}
	}
}

// TestSelftestRetriesAPlatformThatDidNotComeUp: a run whose platform does not
// come up answered nothing about its faults, so the self-test makes it once
// more (the first try's artifacts kept in NAME-try1) and, when the second try
// fails too, exits 3 (infrastructure), never 1 (a fault not caught). The
// reference binary here exits at once, so both tries fail.
func TestSelftestRetriesAPlatformThatDidNotComeUp(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "scaleproof-ref")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'cannot start' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	art := filepath.Join(dir, "artifacts")
	out, code := execute(t, newSelftestCmd(), "--ref-bin", bin, "--faults", faults.DropToOne, "--parallel", "2",
		"--artifacts", art, "--json", "--quiet")
	if code != exitInfra {
		t.Errorf("exit %d, want %d (the platform did not come up)", code, exitInfra)
	}
	var rep SelftestReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("decode --json: %v\n%s", err, out)
	}
	if len(rep.Faults) != 1 {
		t.Fatalf("%d fault rows, want 1: %+v", len(rep.Faults), rep.Faults)
	}
	for name, r := range map[string]struct{ retried, err string }{
		"baseline":       {rep.Baseline.Retried, rep.Baseline.Error},
		faults.DropToOne: {rep.Faults[0].Retried, rep.Faults[0].Error},
	} {
		if !strings.Contains(r.retried, "platform up") || !strings.Contains(r.err, "platform up") {
			t.Errorf("%s: retried %q, error %q; want both to name the platform's failure", name, r.retried, r.err)
		}
		if _, err := os.Stat(filepath.Join(art, name+"-try1", "results.jsonl")); err != nil {
			t.Errorf("%s: the first try's results: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(art, name, "results.jsonl")); err != nil {
			t.Errorf("%s: the second try's results: %v", name, err)
		}
	}
}
