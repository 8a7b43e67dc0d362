package contracttest

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
)

// refBin is scaleproof-ref, built once by TestMain ("" in -short mode).
var refBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "scaleproof-contract-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	refBin = filepath.Join(dir, "scaleproof-ref")
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-o", refBin, "./cmd/scaleproof-ref")
	cmd.Dir = filepath.Join(filepath.Dir(self), "..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/scaleproof-ref: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// up brings up the local platform with the quick profile's settings (as
// `scaleproof run --profile quick` does) and the faults on, and returns an
// Env for it. Teardown is registered on t.
func up(t *testing.T, p scenarios.Profile, on faults.Set) *scenarios.Env {
	t.Helper()
	if refBin == "" {
		t.Skip("process-level contract test: skipped in -short mode")
	}
	work := t.TempDir()
	logf, err := os.Create(filepath.Join(work, "harness.log"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(logf, nil))
	l := local.New(local.Config{
		Bin: refBin, WorkDir: work, Group: "contract",
		UpCooldown: p.UpCooldown, DownCooldown: p.DownCooldown, StartupGrace: p.StartupGrace,
		TargetRPS: p.TargetRPS, ConsoleDrain: p.ConsoleDrain,
		Worker: local.WorkerSpec{MaxInflight: p.MaxInflight, WorkMS: p.WorkMS, BootDelay: p.BootDelay,
			Drain: max(p.ConsoleDrain, 5*time.Second)},
		Log: log.With("part", "platform"), Faults: on,
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ep, err := l.Up(ctx)
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		defer dcancel()
		if err := l.Down(dctx); err != nil {
			t.Logf("platform down: %v", err)
		}
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(work, "logs", "*.log"))
			for _, f := range logs {
				if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
					if len(b) > 3000 {
						b = b[len(b)-3000:]
					}
					t.Logf("%s (tail):\n%s", filepath.Base(f), b)
				}
			}
		}
		logf.Close()
	})
	if err != nil {
		t.Fatalf("local up: %v", err)
	}
	env := scenarios.NewEnv(ep, p, nil, log.With("part", "scenarios"))
	env.Faults = platform.FaulterOf(l, "")
	return env
}

// run runs the named scenarios on env (bounded) and returns their verdicts.
func run(t *testing.T, env *scenarios.Env, names ...string) []reports.Verdict {
	t.Helper()
	list, err := scenarios.Select(names)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	return env.Run(ctx, list)
}

func logVerdict(t *testing.T, v reports.Verdict) {
	t.Helper()
	mark := "PASS"
	switch {
	case v.Skipped != "":
		mark = "SKIP"
	case !v.Passed:
		mark = "FAIL"
	}
	t.Logf("%s %s in %.0f s (%s%s)", mark, v.Scenario, v.DurationS, v.Error, v.Skipped)
	for _, f := range v.Facts {
		t.Logf("    %s: %v: %s", f.Name, f.Passed, f.Detail)
	}
}

// caught is the first failed fact of v ("" when none failed).
func caught(v reports.Verdict) string {
	for _, f := range v.Facts {
		if f.Failed() {
			return f.Name
		}
	}
	return ""
}

// TestContractScenariosPassClean runs the contract scenarios on the clean
// reference system with the quick profile (the one `run --scenarios
// contract` uses by default): each must PASS. That each planted fault makes
// its scenario FAIL on the fact meant to catch it is TestSelftestOnLocal's
// (cmd/scaleproof), on the selftest profile.
func TestContractScenariosPassClean(t *testing.T) {
	p := scenarios.Quick()
	t.Run("clean", func(t *testing.T) {
		env := up(t, p, nil)
		vs := run(t, env, scenarios.ContractSet)
		if len(vs) != len(scenarios.Contract()) {
			t.Fatalf("%d verdicts, want %d", len(vs), len(scenarios.Contract()))
		}
		for _, v := range vs {
			logVerdict(t, v)
			if !v.Passed {
				t.Errorf("clean %s failed: %s %s", v.Scenario, caught(v), v.Error)
			}
		}
	})
}

// TestContractSkipsWithoutFaults: on a platform with no fault actions the
// scenarios that need one are skipped with the platform's reason, never
// passed (rate-path, scale-in-drain and low-streak-reset need none and are
// not run here).
func TestContractSkipsWithoutFaults(t *testing.T) {
	env := up(t, scenarios.Quick(), nil)
	env.Faults = platform.NoFaults{Platform: "external", Reason: "it reaches the system only through its URLs"}
	for _, v := range run(t, env, "outage", "restart-cooldown", "restart-keeps-changes", "readiness-routing", "uneven-load") {
		logVerdict(t, v)
		if v.Passed || !strings.Contains(v.Skipped, "platform external cannot") {
			t.Errorf("%s: passed %v, skipped %q; want skipped with the platform's reason", v.Scenario, v.Passed, v.Skipped)
		}
	}
}
