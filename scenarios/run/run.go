// Package run is a run's lifecycle, written once for `scaleproof run`,
// `selftest`, `sim`, `up` and the e2e suites: the artifacts folder and the
// harness's log in it, the interrupt trap (Trap), the teardown in
// kubetest2's order (every log saved before anything is deleted, within a
// budget of a fresh context, so a cancelled run still tears down), the exit
// code a run's verdicts give, written with its results, and the outputs
// beside results.jsonl (table.md, report.html, junit.xml, the steps'
// junit_runner.xml).
//
// It imports only the results format and its renderers: never a platform,
// a cluster maker or a command (a platform is anything with DumpLogs and
// Down).
package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/scaleproof/scaleproof/reports"
)

// Exit codes of a run (the commands' too).
const (
	ExitOK          = 0   // every scenario passed
	ExitFailed      = 1   // a scenario failed, or nothing was judged
	ExitUsage       = 2   // bad flags or input; nothing ran
	ExitInfra       = 3   // the platform did not come up, or its teardown failed
	ExitInterrupted = 130 // Ctrl-C (SIGINT) or SIGTERM
)

// ArtifactsDir is the artifacts folder of a command: flag (--artifacts)
// when given, else $ARTIFACTS (as kubetest2 and Prow set it), else
// ./_artifacts/<name>. It creates nothing.
func ArtifactsDir(flag, name string) string {
	if flag != "" {
		return flag
	}
	if a := os.Getenv("ARTIFACTS"); a != "" {
		return a
	}
	return filepath.Join("_artifacts", name)
}

// OpenArtifacts makes the artifacts folder dir and the harness's own log in
// it (logName, JSON lines at info level). An error means the folder cannot
// be written. closeLog closes the log file.
func OpenArtifacts(dir, logName string) (log *slog.Logger, closeLog func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("artifacts folder: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, logName))
	if err != nil {
		return nil, nil, err
	}
	return slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})), func() { _ = f.Close() }, nil
}

// Teardowner is what Teardown takes down: a platform, or a cluster maker
// alone (the e2e suites that deploy their own system).
type Teardowner interface {
	DumpLogs(ctx context.Context, dir string) error
	Down(ctx context.Context) error
}

// DefaultTeardownBudget bounds a teardown whose platform names no budget of
// its own: kind's cluster delete and the local processes' drain take
// seconds.
const DefaultTeardownBudget = 2 * time.Minute

// TeardownBudget is t's own budget (TeardownBudget() > 0: a cloud's
// cluster delete takes minutes, GKE about 5, EKS up to 15), else
// DefaultTeardownBudget.
func TeardownBudget(t Teardowner) time.Duration {
	if b, ok := t.(interface{ TeardownBudget() time.Duration }); ok && b.TeardownBudget() > 0 {
		return b.TeardownBudget()
	}
	return DefaultTeardownBudget
}

// Teardown dumps t's logs into logsDir, then takes it down (kubetest2's
// order: nothing is deleted before its logs are saved), within
// TeardownBudget(t) of a fresh context (the run's may be cancelled:
// Ctrl-C). record (nil: none) gets each step's name ("DumpLogs", "Down"),
// start and error. It returns Down's error; a failed dump is logged
// (log nil: not) and does not stop Down.
func Teardown(t Teardowner, logsDir string, log *slog.Logger, record func(name string, start time.Time, err error)) error {
	if record == nil {
		record = func(string, time.Time, error) {}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(context.Background(), TeardownBudget(t))
	defer cancel()
	start := time.Now()
	err := t.DumpLogs(ctx, logsDir)
	record("DumpLogs", start, err)
	if err != nil {
		log.Warn("dump logs", "err", err)
	}
	start = time.Now()
	err = t.Down(ctx)
	record("Down", start, err)
	if err != nil {
		log.Warn("platform down", "err", err)
	}
	return err
}

// ExitCode is the exit code of a run that planned scenarios and gave
// verdicts, and why: ExitInterrupted when it was interrupted; ExitInfra when
// the platform did not come up (upErr); ExitFailed when a scenario failed,
// fewer verdicts came than were planned, or every scenario was skipped
// (nothing judged is not a pass: a dashboard must not go green on it);
// else ExitOK with reason "".
func ExitCode(verdicts []reports.Verdict, planned int, upErr error, interrupted bool) (code int, reason string) {
	switch {
	case interrupted:
		return ExitInterrupted, "interrupted"
	case upErr != nil:
		return ExitInfra, "platform up: " + upErr.Error()
	}
	if row := reports.SummaryRow("", verdicts); !row.Passed || len(verdicts) < planned {
		return ExitFailed, "a scenario failed"
	}
	if AllSkipped(verdicts) {
		return ExitFailed, NothingJudged
	}
	return ExitOK, ""
}

// NothingJudged is ExitCode's reason when every scenario was skipped.
const NothingJudged = "nothing judged: every scenario was skipped"

// AllSkipped reports whether there are verdicts and every one is a skip.
func AllSkipped(vs []reports.Verdict) bool {
	return len(vs) > 0 && !slices.ContainsFunc(vs, func(v reports.Verdict) bool { return v.Skipped == "" })
}

// Close writes the run's summary row into its results and, unless the run
// was interrupted (its results then end where they stopped, marked
// incomplete when read), closes them with code and reason.
func Close(w *reports.Writer, row reports.Row, code int, reason string) error {
	errs := []error{w.Write(reports.KindSummary, row)}
	if code != ExitInterrupted {
		errs = append(errs, w.Close(reports.End{Ended: time.Now(), ExitCode: code, Reason: reason}))
	}
	return errors.Join(errs...)
}
