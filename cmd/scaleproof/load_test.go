package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios/load"
)

// mcpEcho answers every tools/call with a JSON-RPC result; every 4th call
// of /limited gets 429.
func mcpEcho(t *testing.T) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     int64  `json:"id"`
			Method string `json:"method"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || req.Method != "tools/call" ||
			r.Header.Get("Authorization") != "Bearer k1" {
			http.Error(w, "bad request", 400)
			return
		}
		if k := n.Add(1); r.URL.Path == "/limited" && k%4 == 0 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}`, req.ID)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func execLoad(t *testing.T, args ...string) (string, int) {
	t.Helper()
	c := newLoadCmd()
	var out bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&out)
	c.SetArgs(args)
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(exitUsage, err) })
	err := c.Execute()
	code := exitOK
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case err != nil:
		code = exitUsage
	}
	return out.String(), code
}

func TestLoadCommand(t *testing.T) {
	srv := mcpEcho(t)
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     []string // in the output
	}{
		{"constant-vus passes", []string{"--url", srv.URL + "/mcp", "--tool", "echo", "--bearer", "k1", "--vus", "2",
			"--duration", "300ms", "--max-iterations", "200", "--threshold", "rate_ok>0.99", "--client", "net/http"},
			0, []string{"closed-loop", "calls ok", "✓ rate_ok>0.99"}},
		{"threshold crossed is 99", []string{"--url", srv.URL + "/limited", "--tool", "echo", "--bearer", "k1",
			"--vus", "1", "--duration", "300ms", "--max-iterations", "40", "--threshold", "rate_429<0.05"},
			exitThreshold, []string{"✗ rate_429<0.05", "calls 429", "errors (distinct reasons", "429 Too Many Requests"}},
		{"abortOnFail stops the run early", []string{"--url", srv.URL + "/limited", "--tool", "echo", "--bearer", "k1",
			"--vus", "1", "--think-time", "5ms", "--duration", "1m", "--max-iterations", "100000", "--threshold", "rate_429<0.05,abortOnFail"},
			exitThreshold, []string{"stopped early: threshold rate_429<0.05 crossed", "✗ rate_429<0.05"}},
		{"arrival rate", []string{"--url", srv.URL + "/mcp", "--tool", "echo", "--header", "Authorization: Bearer k1",
			"--rate", "50", "--duration", "200ms", "--pre-allocated-vus", "2"},
			0, []string{"open model", "dropped_iterations", "constant-arrival-rate"}},
		{"bad stages", []string{"--url", srv.URL, "--stages", "2m"}, exitUsage, nil},
		{"bad threshold", []string{"--url", srv.URL, "--threshold", "p95<<1"}, exitUsage, nil},
		{"vus with an arrival rate", []string{"--url", srv.URL, "--rate", "5", "--vus", "3"}, exitUsage, nil},
		{"no url", []string{"--vus", "1"}, exitUsage, nil},
		{"zero vus", []string{"--url", srv.URL, "--vus", "0"}, exitUsage, nil},
		{"negative duration", []string{"--url", srv.URL, "--duration", "-1s"}, exitUsage, nil},
		{"negative time unit", []string{"--url", srv.URL, "--rate", "5", "--time-unit", "-1s"}, exitUsage, nil},
		{"zero duration", []string{"--url", srv.URL, "--duration", "0s"}, exitUsage, []string{"--duration 0s: want a duration > 0"}},
		{"zero time unit", []string{"--url", srv.URL, "--rate", "5", "--time-unit", "0"}, exitUsage, []string{"--time-unit 0s: want a duration > 0"}},
		{"negative rate", []string{"--url", srv.URL, "--rate", "-5"}, exitUsage, []string{"--rate -5: want iterations per --time-unit > 0"}},
		{"zero rate", []string{"--url", srv.URL, "--executor", "constant-arrival-rate", "--rate", "0"}, exitUsage, []string{"--rate 0: want iterations per --time-unit > 0"}},
		{"rate with ramping-arrival-rate", []string{"--url", srv.URL, "--executor", "ramping-arrival-rate", "--stages", "1s:1", "--rate", "0"}, exitUsage, []string{"ramping-arrival-rate takes --start-rate and --stages, not --rate"}},
		{"max vus under the default pre-allocation", []string{"--url", srv.URL, "--rate", "20", "--max-vus", "2", "--duration", "300ms"},
			exitOK, []string{"VUs 2 pre-allocated, 2 max"}},
		{"args without tool", []string{"--url", srv.URL, "--args", `{"a":1}`}, exitUsage, nil},
		{"args not an object", []string{"--url", srv.URL, "--tool", "x", "--args", `[1]`}, exitUsage, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out, code := execLoad(t, append(tc.args, "--artifacts", dir, "--quiet")...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tc.wantCode, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tc.wantCode == exitUsage {
				return
			}
			checkLoadResults(t, filepath.Join(dir, "results.jsonl"), tc.wantCode)
		})
	}
}

// checkLoadResults: the file reads back complete, renders in every format
// and compares with itself without regressions.
func checkLoadResults(t *testing.T, path string, code int) {
	t.Helper()
	res, err := reports.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Incomplete || res.End.ExitCode != code || len(res.Loads) != 1 || len(res.Verdicts) != 1 || len(res.Seconds) == 0 {
		t.Fatalf("results: incomplete %v end %+v loads %d verdicts %d seconds %d", res.Incomplete, res.End, len(res.Loads), len(res.Verdicts), len(res.Seconds))
	}
	l := res.Loads[0]
	if l.Calls.Total() != l.Iterations || l.Iterations == 0 || l.Histogram == "" || l.DataSent == 0 {
		t.Errorf("load record %+v", l)
	}
	var reasons429 int64 // every 429 has its reason in the record's error set
	for _, e := range l.Errors {
		if e.Class == "429" {
			reasons429 += e.Count
		}
	}
	if reasons429 != l.Calls.TooMany {
		t.Errorf("the error set counts %d calls answered 429, the totals %d: %+v", reasons429, l.Calls.TooMany, l.Errors)
	}
	var sum int64
	merged := hdr.New(1, int64(10*time.Minute/time.Microsecond), 2)
	for _, s := range res.Seconds {
		sum += s.Calls.Total()
		if s.Histogram != "" {
			h, err := hdr.Decode([]byte(s.Histogram))
			if err != nil {
				t.Fatalf("second %d histogram: %v", s.T, err)
			}
			merged.Merge(h)
		}
	}
	// The seconds' histograms add up to the run's (interrupted calls have none).
	if want := l.Iterations - l.Calls.Interrupted; merged.TotalCount() != want {
		t.Errorf("per-second histograms hold %d calls, want %d", merged.TotalCount(), want)
	}
	if run, err := hdr.Decode([]byte(l.Histogram)); err != nil || run.TotalCount() != merged.TotalCount() {
		t.Errorf("run histogram %v (err %v), per-second sum %d", run, err, merged.TotalCount())
	}
	if sum != l.Iterations {
		t.Errorf("seconds add to %d calls, load record says %d", sum, l.Iterations)
	}
	for _, f := range render.Formats {
		var b bytes.Buffer
		if err := render.Render(&b, f, []*reports.Results{res}, render.Options{}); err != nil || b.Len() == 0 {
			t.Errorf("render %s: %v", f, err)
		}
	}
	cmp, err := render.Compare(res, res, render.DefaultTolerances())
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Regressed() {
		t.Errorf("a run compared with itself regressed")
	}
}

// TestLoadConfigFile: --config holds the same settings; a flag wins.
func TestLoadConfigFile(t *testing.T) {
	srv := mcpEcho(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "load.yaml")
	yaml := fmt.Sprintf(`url: %s/mcp
tool: echo
args: {text: hi}
headers: {Authorization: Bearer k1}
executor: ramping-arrival-rate
startRate: 10
timeUnit: 1s
stages:
  - {duration: 200ms, target: 40}
preAllocatedVUs: 2
maxVUs: 4
gracefulStop: 1s
thresholds:
  - p99<5s
  - {threshold: rate_errors<0.5, abortOnFail: true}
`, srv.URL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := execLoad(t, "--config", cfg, "--artifacts", dir, "-q") // -q, as run, sim and selftest take it
	if code != 0 || !strings.Contains(out, "ramping-arrival-rate") || !strings.Contains(out, "✓ rate_errors<0.5") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	checkLoadResults(t, filepath.Join(dir, "results.jsonl"), 0)

	if err := os.WriteFile(cfg, []byte("url: x\nvuz: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, code := execLoad(t, "--config", cfg); code != exitUsage {
		t.Errorf("unknown key: exit %d, want 2", code)
	}
}

// TestLoadInterrupted: Ctrl-C during `scaleproof load` stops it gracefully
// with exit 130 and the results file says what was measured.
func TestLoadInterrupted(t *testing.T) {
	if builtHarness == "" {
		t.Skip("runs scaleproof as a process; skipped in -short mode")
	}
	first := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID int64 `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		once.Do(func() { close(first) })
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}`, req.ID)
	}))
	defer srv.Close()
	dir := t.TempDir()
	cmd := exec.Command(builtHarness, "load", "--url", srv.URL+"/mcp", "--tool", "echo", "--vus", "2",
		"--think-time", "10ms", "--duration", "10m", "--graceful-stop", "5s", "--artifacts", dir, "--quiet")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-first:
	case <-time.After(30 * time.Second): // a guard, not a synchronisation
		_ = cmd.Process.Kill()
		t.Fatal("no call reached the server")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("scaleproof load did not exit after SIGINT:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit %v, want %d:\n%s", err, exitInterrupted, out.String())
	}
	res, rerr := reports.Read(filepath.Join(dir, "results.jsonl"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if res.End == nil || res.End.ExitCode != exitInterrupted || len(res.Verdicts) != 1 || !res.Verdicts[0].Interrupted ||
		len(res.Loads) != 1 || res.Loads[0].Calls.OK == 0 {
		t.Errorf("results: end %+v verdicts %+v loads %d", res.End, res.Verdicts, len(res.Loads))
	}
}

// TestLoadSummaryDataRates: the data rows give the rate in the unit that
// fits it, as k6's summary does ("3.9 MB  1.9 MB/s", not "1947.9 kB/s"),
// and no rate when the run took no time.
func TestLoadSummaryDataRates(t *testing.T) {
	p := &loadPlan{closed: &load.Profile{Executor: load.ExecutorConstantVUs, VUs: 1, Duration: time.Second}}
	for _, tc := range []struct {
		name      string
		durationS float64
		sent      int64
		want      string
	}{
		{"megabytes", 2, 3_900_000, "data_sent........... 3.9 MB  1.9 MB/s\n"},
		{"bytes", 2, 500, "data_sent........... 500 B  250 B/s\n"},
		{"no time", 0, 3_900_000, "data_sent........... 3.9 MB\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeLoadSummary(&b, reports.LoadSummary{DurationS: tc.durationS, DataSent: tc.sent}, p, nil)
			if !strings.Contains(b.String(), "  "+tc.want) {
				t.Errorf("summary has no line %q:\n%s", tc.want, b.String())
			}
		})
	}
}
