package main

import (
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
