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
