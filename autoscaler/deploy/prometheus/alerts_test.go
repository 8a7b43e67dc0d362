package prometheus_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/internal/skips"
)

// promtool returns promtool's path; without it the test is skipped, unless
// CI=true (CI installs it with make deps-prometheus), where it fails.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool not on PATH with CI=true: run `make deps-prometheus` (Debian package prometheus)")
		}
		skips.Skip(t, "promtool not on PATH (make deps-prometheus)")
	}
	return p
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestAlertsCheckRules(t *testing.T) {
	out := run(t, promtool(t), "check", "rules", "alerts.yaml")
	if !strings.Contains(out, "SUCCESS: 1 rules found") {
		t.Fatalf("promtool check rules: %s", out)
	}
}

// TestAlertsFireAfterThreeHours runs alerts_test.yaml: the alert fires for a
// zone at its max for 3 h, not at 2h59m, not for a zone below its max, and
// not for one that dipped below its max within the 3 h.
func TestAlertsFireAfterThreeHours(t *testing.T) {
	out := run(t, promtool(t), "test", "rules", "alerts_test.yaml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules: %s", out)
	}
}

// TestAlertsUseConsoleMetrics keeps the rule's metric names in step with the
// gauges the console exports.
func TestAlertsUseConsoleMetrics(t *testing.T) {
	rules, err := os.ReadFile("alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "console", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"scaleproof_console_zone_count", "scaleproof_console_zone_max_count"} {
		if !strings.Contains(string(rules), name) {
			t.Errorf("alerts.yaml does not use %s", name)
		}
		if !strings.Contains(string(src), `"`+name+`"`) {
			t.Errorf("the console no longer exports %s (autoscaler/console/metrics.go)", name)
		}
	}
	if !strings.Contains(string(rules), "for: 3h") {
		t.Errorf("alerts.yaml: the maxed-out alert must wait 3h (seed 000)")
	}
}
