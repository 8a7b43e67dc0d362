package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimCommand: `scaleproof sim` writes a results file that report and
// compare read unchanged, and its HTML report; bad flags are exit 2.
func TestSimCommand(t *testing.T) {
	dir := t.TempDir()
	out, code := execute(t, newSimCmd(), "--profile", "quick", "--artifacts", dir, "-q")
	if code != exitOK || !strings.Contains(out, "sim ") || !strings.Contains(out, "PASS  sustained") {
		t.Fatalf("sim: exit %d\n%s", code, out)
	}
	results := filepath.Join(dir, "results.jsonl")
	for _, f := range []string{results, filepath.Join(dir, "report.html"), filepath.Join(dir, "junit.xml")} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	out, code = execute(t, newReportCmd(), "--format", "html", "--out", filepath.Join(dir, "again.html"), results)
	if code != exitOK {
		t.Fatalf("report --format html: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "again.html")); !strings.Contains(string(b), "<svg") {
		t.Error("report of a sim results file has no chart")
	}
	if out, code = execute(t, newCompareCmd(), results, results); code != exitOK || !strings.Contains(out, "PASS") {
		t.Fatalf("compare sim with itself: exit %d\n%s", code, out)
	}
	if out, code := execute(t, newSimCmd(), "--fleet", "20", "--fleet-duration", "2m", "-q"); code != exitOK || !strings.Contains(out, "20 zones for 2m0s") {
		t.Fatalf("sim --fleet: exit %d\n%s", code, out)
	}
	if out, code := execute(t, newSimCmd(), "--designs", "--profile", "quick", "-q"); code != exitOK ||
		!strings.Contains(out, "earlier round") || !strings.Contains(out, "309 s") || strings.Count(out, "sim, ") != 8 ||
		!strings.Contains(out, "1 310 of 63 761 = 2.05 %") {
		t.Fatalf("sim --designs: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"--fleet", "20", "--designs"},
		{"--fleet", "-5"},
		{"--fleet", "0"},
		{"--policy", "pid"},
		{"--model", "mars"},
		{"--model", "gke", "--set", "one_zone=maybe"},
		{"--set", "nope=1"},
		{"--set", "up_cooldown=soon"},
		{"--sweep", "up_cooldown=0s", "--designs"},
		{"--calibrate", filepath.Join(dir, "missing.jsonl")},
		{"--scenarios", "nope"},
	} {
		if _, code := execute(t, newSimCmd(), append(args, "--profile", "quick", "--artifacts", dir, "-q")...); code != exitUsage {
			t.Errorf("sim %v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestSimSweepCommand: a sweep writes its page and prints a row per point.
func TestSimSweepCommand(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "sweep.html")
	out, code := execute(t, newSimCmd(), "--profile", "quick", "--scenarios", "sustained",
		"--sweep", "up_cooldown=0s,6s", "--sweep", "interval=1s,2s", "--out", page, "-q")
	if code != exitOK || strings.Count(out, " yes") != 4 {
		t.Fatalf("sweep: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(page); err != nil || strings.Count(string(b), "<svg") != 4 {
		t.Fatalf("sweep page: %v, %d charts", err, strings.Count(string(b), "<svg"))
	}
}
