package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios"
)

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		args    []string
		code    int
		wantOut []string
		outFile string // --out target checked for wantOut instead of stdout
	}{
		{"text", []string{smallResults}, exitOK, []string{"Platform  Up to 3", "FAIL  burst"}, ""},
		{"published with columns", []string{"--published", "--columns", "429pct,flaps", smallResults}, exitOK,
			[]string{"GKE", "local ÷ EKS", "429 %", "Flaps"}, ""},
		{"markdown", []string{"--format", "markdown", smallResults}, exitOK, []string{"| Platform | Up to 3 |", "### FAIL burst"}, ""},
		{"json", []string{"--format", "json", smallResults, regressedResults}, exitOK, []string{`"schema": "scaleproof.report/v1"`}, ""},
		{"junit to a file", []string{"--format", "junit", "--out", filepath.Join(dir, "junit.xml"), smallResults}, exitOK,
			[]string{"<testsuites", `name="burst / no 5xx"`}, filepath.Join(dir, "junit.xml")},
		{"html to a file", []string{"--format", "html", "-o", filepath.Join(dir, "r.html"), smallResults}, exitOK,
			[]string{"<!doctype html>", "<svg"}, filepath.Join(dir, "r.html")},
		{"unknown format", []string{"--format", "pdf", smallResults}, exitUsage, nil, ""},
		{"unknown column", []string{"--columns", "latency", smallResults}, exitUsage, nil, ""},
		{"missing file", []string{filepath.Join(dir, "nope.jsonl")}, exitUsage, nil, ""},
		{"no file", nil, exitUsage, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := execute(t, newReportCmd(), c.args...)
			if code != c.code {
				t.Fatalf("exit code %d, want %d\n%s", code, c.code, out)
			}
			if c.outFile != "" {
				b, err := os.ReadFile(c.outFile)
				if err != nil {
					t.Fatal(err)
				}
				out = string(b)
			}
			for _, w := range c.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%.2000s", w, out)
				}
			}
		})
	}
}

func TestProgressModes(t *testing.T) {
	st := func(sc, phase, decision string, el time.Duration, ok int64) scenarios.Status {
		return scenarios.Status{Scenario: sc, Phase: phase, Elapsed: el, Expected: 30 * time.Second, VUs: 64,
			Count: 3, Max: 3, Ready: 2, Decision: decision, Calls: reports.Calls{OK: ok, TooMany: 7}}
	}
	updates := []scenarios.Status{
		st("sustained", "64 VUs until count reaches 3", "", time.Second, 10),
		st("sustained", "64 VUs until count reaches 3", "up 1->3: busy", 2*time.Second, 1234),
		st("sustained", "hold at 3", "up 1->3: busy", 40*time.Second, 2000), // longer than expected
		st("burst", "burst: 64 VUs for 4.5s", "", time.Second, 5),
	}
	cases := []struct {
		name  string
		mode  progressMode
		want  []string
		empty bool
	}{
		{"quiet", progressOff, nil, true},
		{"plain", progressPlain, []string{"sustained      64 VUs until count reaches 3", "1s of ~30s  VUs 64  count 3/3 ready 2  ok 10 429 7 5xx 0",
			"decision: up 1->3: busy", "hold at 3", "40s, over the ~30s expected", "burst"}, false},
		{"bars", progressBars, []string{"sustained", "hold at 3", "last decision: up 1->3: busy", "burst", "ok 2 000", "[="}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b syncBuffer
			p := newProgressMode(&b, c.mode)
			for _, u := range updates {
				p.update(u)
				if c.mode == progressBars {
					time.Sleep(250 * time.Millisecond) // one redraw per update
				}
			}
			p.done()
			p.done() // twice is fine
			out := b.String()
			t.Logf("output:\n%s", out)
			if strings.Contains(out, "40s of") {
				t.Errorf("a line overruns its total (40s of 30s):\n%s", out)
			}
			if c.empty != (out == "") {
				t.Fatalf("output %q, want empty %v", out, c.empty)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if p := newProgress(&bytes.Buffer{}, false); p.mode != progressPlain {
		t.Errorf("a buffer is not a terminal: mode %v, want plain", p.mode)
	}
	if p := newProgress(os.Stderr, true); p.mode != progressOff {
		t.Errorf("--quiet: mode %v, want off", p.mode)
	}
}

// syncBuffer is a bytes.Buffer safe for mpb's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTrim(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"a longer phase name", 8, "a longe…"},
		{"count → 3 and more", 9, "count →…"},
		{"abc", 1, "a"},
	}
	for _, c := range cases {
		if got := trim(c.in, c.n); got != c.want {
			t.Errorf("trim(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// TestKilledRunRendersPartial kills a real run (SIGKILL, no teardown) once
// its first scenario is judged and the second is under way, then renders
// the results file it left: every format must work and say the run is
// incomplete, the second scenario without a verdict.
func TestKilledRunRendersPartial(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the harness on local processes; skipped in -short mode")
	}
	dir := t.TempDir()
	harness, ref := buildBinaries(t, dir)
	art := filepath.Join(dir, "artifacts")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness, "run", "--platform", "local", "--profile", "quick",
		"--scenarios", "viewer-refused,max-1", "--ref-bin", ref, "--artifacts", art, "--quiet")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // kill the reference processes with it
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	}()
	results := filepath.Join(art, "results.jsonl")
	// Wait until max-1 has started and has a few zone samples.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if n := countSamples(results, "max-1"); n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("max-1 never got under way; stderr:\n%s", stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	killed = true

	res, err := reports.Read(results)
	if err != nil {
		t.Fatalf("the killed run's file must read back: %v", err)
	}
	if !res.Incomplete {
		t.Fatal("a killed run's file must read as incomplete")
	}
	views := res.Views()
	if len(views) != 2 || views[0].Verdict == nil || views[1].Verdict != nil || len(views[1].Samples) < 3 {
		t.Fatalf("views: %d, first verdict %v, second verdict %v", len(views), views[0].Verdict != nil, len(views) > 1 && views[1].Verdict != nil)
	}
	for _, f := range render.Formats {
		out, code := execute(t, newReportCmd(), "--format", f, results)
		if code != exitOK {
			t.Fatalf("report --format %s: exit %d", f, code)
		}
		if !strings.Contains(strings.ToLower(out), "incomplete") {
			t.Errorf("report --format %s does not say incomplete:\n%.1500s", f, out)
		}
	}
}

// countSamples counts the zone_sample records of a scenario in a results
// file being written (a cut last line is ignored).
func countSamples(path, scenario string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, `"kind":"zone_sample"`) && strings.Contains(l, `"scenario":"`+scenario+`"`) {
			n++
		}
	}
	return n
}
