package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestVersionCommands: both binaries answer `version` and --version with
// one line naming the binary (scaleproof-ref had none).
func TestVersionCommands(t *testing.T) {
	if builtHarness == "" {
		t.Skip("runs the binaries; skipped in -short mode")
	}
	for _, tc := range []struct{ bin, name string }{{builtHarness, "scaleproof"}, {builtRef, "scaleproof-ref"}} {
		for _, arg := range []string{"version", "--version"} {
			out, err := exec.Command(tc.bin, arg).CombinedOutput()
			line := strings.TrimSpace(string(out))
			if err != nil || !strings.HasPrefix(line, tc.name+" ") || strings.Count(line, "\n") != 0 {
				t.Errorf("%s %s: %q %v", tc.name, arg, out, err)
			}
		}
	}
}

func TestRunMessages(t *testing.T) {
	if got := plural(1, "scenario"); got != "1 scenario" {
		t.Errorf("plural(1) = %q", got)
	}
	if got := plural(6, "scenario"); got != "6 scenarios" {
		t.Errorf("plural(6) = %q", got)
	}
	if got := promLabel(""); got != "no prometheus" {
		t.Errorf(`promLabel("") = %q, not prometheus ""`, got)
	}
	if got := promLabel("http://127.0.0.1:9090"); got != "prometheus http://127.0.0.1:9090" {
		t.Errorf("promLabel = %q", got)
	}
}

// TestHelpTexts: report without a file says what it needs and shows its
// usage (exit 2); run --help lists every artifact and the exit codes;
// recommend-bounds' --workers follows the reference worker the default
// queries measure.
func TestHelpTexts(t *testing.T) {
	c := newReportCmd()
	var errb strings.Builder
	c.SetErr(&errb)
	c.SetArgs(nil)
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "at least one results file") || !strings.Contains(err.Error(), "Usage:") {
		t.Errorf("report without arguments: %v, want exit 2 with the usage", err)
	}
	long := newRunCmd().Long
	for _, w := range []string{"results.jsonl", "report.html", "junit.xml", "junit_runner.xml", "table.md", "scaleproof.log", "logs/", "keys.json",
		"Exit codes: 0", "130 interrupted"} {
		if !strings.Contains(long, w) {
			t.Errorf("run --help does not mention %q", w)
		}
	}
	if f := newRecommendCmd().Flags().Lookup("workers"); f == nil || f.DefValue != "32" {
		t.Errorf("recommend-bounds --workers default %v, want 32 (the reference worker's in-flight limit)", f)
	}
}
