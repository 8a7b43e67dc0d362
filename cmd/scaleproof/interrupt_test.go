package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scaleproof/scaleproof/internal/proctest"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// builtHarness and builtRef are scaleproof and scaleproof-ref, built once
// by TestMain (empty in -short mode: the process-level tests skip).
var builtHarness, builtRef string

func TestMain(m *testing.M) {
	flag.Parse()
	var dir string
	if !testing.Short() {
		var err error
		if dir, err = os.MkdirTemp("", "scaleproof-cmd-test-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, b := range []struct{ out, pkg string }{
			{"scaleproof", "github.com/scaleproof/scaleproof/cmd/scaleproof"},
			{"scaleproof-ref", "github.com/scaleproof/scaleproof/cmd/scaleproof-ref"},
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b.pkg, err, out)
				os.RemoveAll(dir)
				os.Exit(1)
			}
		}
		builtHarness, builtRef = filepath.Join(dir, "scaleproof"), filepath.Join(dir, "scaleproof-ref")
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if builtRef != "" {
			if pids := proctest.WaitNone(func() []int { return proctest.Of(builtRef, "") }, 10*time.Second); len(pids) > 0 {
				fmt.Fprintf(os.Stderr, "scaleproof-ref processes left after the tests: %v\n", pids)
				code = max(code, 1)
			}
		}
		if dir != "" {
			os.RemoveAll(dir)
		}
		os.Exit(code)
	}))
}

// harnessRun is one `scaleproof run` child process.
type harnessRun struct {
	t     *testing.T
	cmd   *exec.Cmd
	art   string
	start time.Time

	mu     sync.Mutex
	stderr []string
	lines  chan string // every stderr line, for waits
	done   chan struct{}
	err    error
}

func startHarness(t *testing.T, args ...string) *harnessRun {
	t.Helper()
	if builtHarness == "" {
		t.Skip("runs the harness as a process; skipped in -short mode")
	}
	h := &harnessRun{t: t, art: filepath.Join(t.TempDir(), "artifacts"), lines: make(chan string, 1024), done: make(chan struct{})}
	args = append([]string{"run", "--ref-bin", builtRef, "--artifacts", h.art, "--quiet"}, args...)
	h.cmd = exec.Command(builtHarness, args...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	h.cmd.Stderr = pw
	h.cmd.Stdout = &bytes.Buffer{}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	h.start = time.Now()
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			h.mu.Lock()
			h.stderr = append(h.stderr, sc.Text())
			h.mu.Unlock()
			select {
			case h.lines <- sc.Text():
			default:
			}
		}
		pr.Close()
	}()
	go func() {
		err := h.cmd.Wait()
		<-lines
		h.err = err
		close(h.done)
	}()
	t.Cleanup(func() {
		select {
		case <-h.done:
		default:
			_ = h.cmd.Process.Kill()
			<-h.done
		}
		if t.Failed() {
			h.dump()
		}
	})
	return h
}

func (h *harnessRun) dump() {
	h.mu.Lock()
	h.t.Logf("harness stderr:\n%s", strings.Join(h.stderr, "\n"))
	h.mu.Unlock()
	if b, err := os.ReadFile(filepath.Join(h.art, "scaleproof.log")); err == nil {
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		h.t.Logf("scaleproof.log (tail):\n%s", b)
	}
}

func (h *harnessRun) signal(sig syscall.Signal) time.Time {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatalf("send %s to the harness: %v", sig, err)
	}
	return time.Now()
}

// exit waits for the harness to exit and returns its exit code.
func (h *harnessRun) exit(timeout time.Duration) int {
	h.t.Helper()
	select {
	case <-h.done:
	case <-time.After(timeout):
		h.t.Fatalf("waited %s for the harness to exit", timeout)
	}
	var ee *exec.ExitError
	if errors.As(h.err, &ee) {
		return ee.ExitCode()
	}
	if h.err != nil {
		h.t.Fatalf("harness: %v", h.err)
	}
	return 0
}

// waitLine waits for a stderr line containing s.
func (h *harnessRun) waitLine(s string, timeout time.Duration) {
	h.t.Helper()
	h.mu.Lock()
	seen := slices.ContainsFunc(h.stderr, func(l string) bool { return strings.Contains(l, s) })
	h.mu.Unlock()
	deadline := time.After(timeout)
	for !seen {
		select {
		case l := <-h.lines:
			seen = strings.Contains(l, s)
		case <-h.done:
			h.t.Fatalf("the harness exited before printing %q", s)
		case <-deadline:
			h.t.Fatalf("waited %s for the harness to print %q", timeout, s)
		}
	}
}

// waitFor polls cond (a file or /proc: there is no event to wait on) every
// 50 ms until it holds, the harness exits, or timeout passes.
func (h *harnessRun) waitFor(what string, timeout time.Duration, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-h.done:
			h.t.Fatalf("the harness exited while waiting for %s", what)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("waited %s for %s", timeout, what)
		}
	}
}

func (h *harnessRun) resultsPath() string { return filepath.Join(h.art, "results.jsonl") }

// records counts the results file's records of kind whose data contains has.
func (h *harnessRun) records(kind, has string) int {
	b, err := os.ReadFile(h.resultsPath())
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(line, []byte(`{"kind":"`+kind+`"`)) && bytes.Contains(line, []byte(has)) {
			n++
		}
	}
	return n
}

// refProcs lists the run's live scaleproof-ref processes (their stderr goes
// to the run's artifacts folder), filtered by server ("console", "edge",
// "worker"; "" for all).
func (h *harnessRun) refProcs(server string) []int {
	var out []int
	for _, pid := range proctest.Of(builtRef, h.art) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err == nil && (server == "" || bytes.Contains(b, []byte("\x00"+server+"\x00"))) {
			out = append(out, pid)
		}
	}
	return out
}

// checkInterrupted checks what every interrupted run must leave: exit code
// 130, no reference process left, a results file that reads back and is
// marked incomplete.
// freezeWorkerUnderLoad waits until max-1 has been under load for 3
// samples, then freezes (SIGSTOP) its worker; the cleanup kills it.
func (h *harnessRun) freezeWorkerUnderLoad(t *testing.T) {
	t.Helper()
	h.waitFor("3 samples of max-1 under load", 2*time.Minute, func() bool { return h.records(reports.KindSampleRaw, `"max-1"`) >= 3 })
	workers := h.refProcs("worker")
	if len(workers) == 0 {
		t.Fatal("no worker process")
	}
	if err := syscall.Kill(workers[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(workers[0], syscall.SIGKILL) })
}

func (h *harnessRun) checkInterrupted(code int, sent time.Time) *reports.Results {
	t := h.t
	t.Helper()
	took := time.Since(sent)
	if code != exitInterrupted {
		t.Errorf("exit code %d, want %d", code, exitInterrupted)
	}
	if left := h.refProcs(""); len(left) > 0 {
		t.Errorf("scaleproof-ref processes left when the harness exited: %v", left)
		if still := proctest.WaitNone(func() []int { return h.refProcs("") }, 10*time.Second); len(still) > 0 {
			t.Errorf("... and still there 10 s later: %v", still)
			for _, pid := range still {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	res, err := reports.Read(h.resultsPath())
	if err != nil {
		t.Fatalf("results file of an interrupted run: %v", err)
	}
	if !res.Incomplete || res.End != nil {
		t.Errorf("results: incomplete=%v end=%+v, want incomplete without an end record", res.Incomplete, res.End)
	}
	h.mu.Lock()
	for _, l := range h.stderr {
		if strings.Contains(l, "panic") || strings.Contains(l, "DATA RACE") {
			t.Errorf("harness stderr: %s", l)
		}
	}
	h.mu.Unlock()
	// The table on stdout and table.md say the run is incomplete.
	if out := h.cmd.Stdout.(*bytes.Buffer).String(); !strings.Contains(out, "INCOMPLETE: the run was interrupted") {
		t.Errorf("stdout of an interrupted run does not say INCOMPLETE:\n%s", out)
	}
	if md, err := os.ReadFile(filepath.Join(h.art, "table.md")); err != nil || !strings.HasPrefix(string(md), "**INCOMPLETE:** the run was interrupted") {
		t.Errorf("table.md of an interrupted run: %v\n%s", err, md)
	}
	t.Logf("exit %d %.1fs after the signal; results: %d verdicts, %d seconds, incomplete=%v", code, took.Seconds(), len(res.Verdicts), len(res.Seconds), res.Incomplete)
	return res
}

// TestInterruptTearsDown sends Ctrl-C (SIGINT) or SIGTERM to `scaleproof run`
// at several moments: the run tears the platform down (no scaleproof-ref
// process is left), exits 130, and leaves a valid results file marked
// incomplete.
func TestInterruptTearsDown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		scenarios string
		sig       syscall.Signal
		when      string
		ready     func(h *harnessRun) bool
	}{
		{"SIGINT while the platform comes up", "max-1", syscall.SIGINT, "the console's log file",
			func(h *harnessRun) bool {
				_, err := os.Stat(filepath.Join(h.art, "logs", "console.log"))
				return err == nil
			}},
		{"SIGTERM while the platform comes up", "max-1", syscall.SIGTERM, "the edge's log file",
			func(h *harnessRun) bool {
				_, err := os.Stat(filepath.Join(h.art, "logs", "edge.log"))
				return err == nil
			}},
		{"SIGINT under load", "max-1", syscall.SIGINT, "3 samples of max-1 under load",
			func(h *harnessRun) bool { return h.records(reports.KindSampleRaw, `"max-1"`) >= 3 }},
		{"SIGTERM under load", "max-1", syscall.SIGTERM, "3 samples of max-1 under load",
			func(h *harnessRun) bool { return h.records(reports.KindSampleRaw, `"max-1"`) >= 3 }},
		{"SIGINT while workers start", "sustained", syscall.SIGINT, "a second worker starting",
			func(h *harnessRun) bool { return len(h.refProcs("worker")) >= 2 }},
		{"SIGINT after a verdict", "viewer-refused,max-1", syscall.SIGINT, "the first verdict",
			func(h *harnessRun) bool { return h.records(reports.KindVerdict, "") >= 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := startHarness(t, "--scenarios", tc.scenarios)
			h.waitFor(tc.when, 2*time.Minute, func() bool { return tc.ready(h) })
			sent := h.signal(tc.sig)
			code := h.exit(time.Minute)
			h.checkInterrupted(code, sent)
			h.waitLine("tearing down", time.Second)
		})
	}
}

// TestInterruptWithFrozenWorker: Ctrl-C while a worker is frozen (SIGSTOP)
// still tears everything down: the frozen worker gets its drain and then
// SIGKILL, and the harness exits within that bound.
func TestInterruptWithFrozenWorker(t *testing.T) {
	t.Parallel()
	h := startHarness(t, "--scenarios", "max-1")
	h.freezeWorkerUnderLoad(t)
	sent := h.signal(syscall.SIGINT)
	code := h.exit(90 * time.Second)
	h.checkInterrupted(code, sent)
}

// TestSecondInterruptExitsAtOnce: a second Ctrl-C during the teardown (kept
// long by a frozen worker) exits at once, and the reference processes die
// with the harness (they get SIGKILL when their parent dies).
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	t.Parallel()
	h := startHarness(t, "--scenarios", "max-1")
	h.freezeWorkerUnderLoad(t)
	h.signal(syscall.SIGINT)
	h.waitLine("tearing down", 30*time.Second)
	sent := h.signal(syscall.SIGINT)
	code := h.exit(5 * time.Second)
	if took := time.Since(sent); took > 3*time.Second {
		t.Errorf("second Ctrl-C: exited after %s, want at once", took)
	}
	if left := proctest.WaitNone(func() []int { return h.refProcs("") }, 10*time.Second); len(left) > 0 {
		t.Errorf("scaleproof-ref processes outlived the harness: %v", left)
	}
	h.waitLine("exiting now", time.Second)
	if code != exitInterrupted {
		t.Errorf("exit code %d, want %d", code, exitInterrupted)
	}
	res, err := reports.Read(h.resultsPath())
	if err != nil || !res.Incomplete {
		t.Fatalf("results after a second Ctrl-C: %v, incomplete=%v", err, res != nil && res.Incomplete)
	}
	t.Logf("second Ctrl-C: exit %d after %.2fs", code, time.Since(sent).Seconds())
}

// TestHarnessNeverHangs points the harness at systems that accept
// connections and never answer: it gives up within its timeouts, and what
// it reports names what it waited for.
func TestHarnessNeverHangs(t *testing.T) {
	if builtHarness == "" {
		t.Skip("runs the harness as a process; skipped in -short mode")
	}
	// A listener that accepts and never answers.
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		hole.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	// A console whose /readyz is fine but whose API never answers.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			return
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })

	keys := filepath.Join(t.TempDir(), "keys.json")
	k := func(name, role string, groups ...string) platform.Key {
		return platform.Key{Name: name, Key: name + "-0123456789abcdef", Role: role, Groups: groups}
	}
	if err := platform.WriteKeysFile(keys, platform.Keys{SuperAdmin: k("root", "super_admin"),
		GroupAdmin: k("ga", "group_admin", "g"), Viewer: k("v", "viewer"), MCPUser: k("m", "mcp_user")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, console, edge string
		code                int
		within              time.Duration
		says                string
	}{
		{"console never answers", "http://" + hole.Addr().String(), slow.URL, exitInfra, 30 * time.Second, "/readyz"},
		{"console API never answers", slow.URL, slow.URL, exitFailed, 60 * time.Second, "turning on auto-rebalance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := startHarness(t, "--platform", "external", "--console-url", tc.console, "--edge-url", tc.edge,
				"--keys", keys, "--group", "g", "--scenarios", "viewer-refused")
			code := h.exit(tc.within)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			h.mu.Lock()
			out := strings.Join(h.stderr, "\n")
			h.mu.Unlock()
			res, err := reports.Read(h.resultsPath())
			if err == nil {
				for _, v := range res.Verdicts {
					out += "\n" + v.Error
				}
			}
			if !strings.Contains(out, tc.says) {
				t.Errorf("the harness does not say what it waited for (%q):\n%s", tc.says, out)
			}
			t.Logf("exit %d after %.1fs: %s", code, time.Since(h.start).Seconds(), tailLine(out))
		})
	}
}

func tailLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
