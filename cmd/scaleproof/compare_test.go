package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

const (
	smallResults     = "../../reports/render/testdata/small.jsonl"
	regressedResults = "../../reports/render/testdata/regressed.jsonl"
)

// execute runs a command in-process with args and returns its stdout and
// exit code (as main would exit).
func execute(t *testing.T, c *cobra.Command, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&errb)
	c.SetArgs(args)
	c.SilenceUsage, c.SilenceErrors = true, true
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(exitUsage, err) })
	err := c.Execute()
	if err == nil {
		return out.String(), exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return out.String(), ee.code
	}
	t.Logf("error without an exit code: %v", err)
	return out.String(), exitUsage
}

// writeSeeded writes a copy of the small results file with the replacements
// applied (a seeded regression) and returns its path.
func writeSeeded(t *testing.T, repl ...string) string {
	t.Helper()
	b, err := os.ReadFile(smallResults)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			t.Fatalf("seed: %q not in %s", repl[i], smallResults)
		}
		s = strings.Replace(s, repl[i], repl[i+1], 1)
	}
	p := filepath.Join(t.TempDir(), "candidate.jsonl")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompareExitCodes(t *testing.T) {
	dir := t.TempDir()
	tolLoose := filepath.Join(dir, "loose.json")
	if err := os.WriteFile(tolLoose, []byte(`{"up_to_max_growth_pct": 100}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tolBad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(tolBad, []byte(`{"up_to_max": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Seeded: sustained reaches max in 8 s instead of 4 s (+100 %).
	slower := writeSeeded(t, `"up_to_max_s":4,`, `"up_to_max_s":8,`)
	// Seeded: the run was killed (no end record).
	full, _ := os.ReadFile(smallResults)
	killed := filepath.Join(dir, "killed.jsonl")
	if err := os.WriteFile(killed, full[:len(full)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		args    []string
		code    int
		wantOut string
	}{
		{"itself", []string{smallResults, smallResults}, exitOK, "PASS: no regression"},
		{"seeded regression", []string{smallResults, slower}, exitFailed, "sustained: up to max 4 s → 8 s"},
		{"seeded regression within loose tolerances", []string{"--tolerances", tolLoose, smallResults, slower}, exitOK, "may grow by 100 %"},
		{"the hand-made regressed run", []string{smallResults, regressedResults}, exitFailed, "REGRESSED: 4 metric(s)"},
		{"json", []string{"--format", "json", smallResults, regressedResults}, exitFailed, `"regressed": true`},
		{"killed candidate", []string{smallResults, killed}, exitUsage, ""},
		{"missing file", []string{smallResults, filepath.Join(dir, "nope.jsonl")}, exitUsage, ""},
		{"one argument", []string{smallResults}, exitUsage, ""},
		{"bad tolerances", []string{"--tolerances", tolBad, smallResults, smallResults}, exitUsage, ""},
		{"bad format", []string{"--format", "pdf", smallResults, smallResults}, exitUsage, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := execute(t, newCompareCmd(), c.args...)
			if code != c.code {
				t.Errorf("exit code %d, want %d\n%s", code, c.code, out)
			}
			if !strings.Contains(out, c.wantOut) {
				t.Errorf("output lacks %q:\n%s", c.wantOut, out)
			}
		})
	}
}

// TestCompareBadFormatFirst: an unknown --format is the error, before any
// file is read: no warning about the runs, no error about a file.
func TestCompareBadFormatFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.jsonl")
	var out, errb bytes.Buffer
	c := newCompareCmd()
	c.SetOut(&out)
	c.SetErr(&errb)
	c.SetArgs([]string{"--format", "pdf", smallResults, missing})
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	if err == nil || err.Error() != `unknown --format "pdf" (have: markdown, json)` || out.Len()+errb.Len() > 0 {
		t.Errorf("error %v, output %q %q; want only the format's error", err, out.String(), errb.String())
	}
}

func TestCompareOutFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "signoff.md")
	stdout, code := execute(t, newCompareCmd(), "--out", out, smallResults, regressedResults)
	if code != exitFailed || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(b), "## scaleproof compare: REGRESSED") {
		t.Fatalf("signoff.md: %v\n%s", err, b)
	}
}
