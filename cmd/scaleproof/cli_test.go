package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// TestFlagValueNames: no flag's help shows a phrase as its value's name,
// as pflag does with the first backquoted words of a usage (--ttl showed
// "--ttl scaleproof cloud janitor" where "--ttl duration" was meant).
func TestFlagValueNames(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.Contains(name, " ") {
				t.Errorf("%s --%s shows %q as its value's name", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	for _, c := range []*cobra.Command{newRunCmd(), newSelftestCmd(), newUpCmd(), newReportCmd(), newCompareCmd(), newRecommendCmd(),
		newKindCmd(), newSimCmd(), newLoadCmd(), newLoadShardCmd(), newCloudCmd()} {
		walk(c)
	}
}

// TestUsageErrorLeavesNoFolder: a usage error found after the artifacts
// folder was made (here a --ref-bin that does not exist, and bad external
// URLs) removes the folders it made; an existing --artifacts folder stays.
func TestUsageErrorLeavesNoFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("ARTIFACTS", "")
	for _, args := range [][]string{
		{"--ref-bin", "/nonexistent/scaleproof-ref"},
		{"--platform", "external", "--console-url", "ftp://x", "--edge-url", "http://127.0.0.1:1", "--keys", "k.json"},
		{"--ref-bin", "/nonexistent/scaleproof-ref", "--artifacts", "deep/er/folder"},
	} {
		if _, code := execute(t, newRunCmd(), args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
		if ents, _ := os.ReadDir("."); len(ents) != 0 {
			t.Errorf("%v left %v", args, ents)
		}
	}
	if err := os.Mkdir("mine", 0o755); err != nil {
		t.Fatal(err)
	}
	execute(t, newRunCmd(), "--ref-bin", "/nonexistent/scaleproof-ref", "--artifacts", "mine")
	if _, err := os.Stat("mine"); err != nil {
		t.Errorf("an existing --artifacts folder was removed: %v", err)
	}
}

// TestPlatformErrorPrintsNoTable: an external platform whose console is not
// ready is a platform error (exit 3) with no empty table before it, and
// table.md says no scenario ran.
func TestPlatformErrorPrintsNoTable(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	k := func(name, role string, groups ...string) platform.Key {
		return platform.Key{Name: name, Key: name + "-0123456789abcdef", Role: role, Groups: groups}
	}
	if err := platform.WriteKeysFile(keys, platform.Keys{SuperAdmin: k("root", "super_admin"), GroupAdmin: k("ga", "group_admin", "loadtest"),
		Viewer: k("vw", "viewer"), MCPUser: k("mcp", "mcp_user")}); err != nil {
		t.Fatal(err)
	}
	art := filepath.Join(dir, "artifacts")
	out, code := execute(t, newRunCmd(), "--platform", "external", "--name", "GKE", "--console-url", down.URL, "--edge-url", down.URL,
		"--keys", keys, "--group", "loadtest", "--artifacts", art, "--quiet")
	if code != exitInfra {
		t.Fatalf("exit %d, want %d:\n%s", code, exitInfra, out)
	}
	if strings.Contains(out, "Up to 3") || strings.Contains(out, "\nGKE ") {
		t.Errorf("a platform error printed a table:\n%s", out)
	}
	md, err := os.ReadFile(filepath.Join(art, "table.md"))
	if err != nil || !strings.HasPrefix(string(md), "**NOT RUN:** platform up: ") || strings.Contains(string(md), "| Platform") {
		t.Errorf("table.md: %v\n%s", err, md)
	}
}
