package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// openArtifacts makes the artifacts folder dir and the harness's own log in
// it (logName, JSON lines at info level), for run, up and selftest. Both
// errors are usage errors (exit 2): the folder given cannot be written.
// closeLog closes the log file.
func openArtifacts(dir, logName string) (log *slog.Logger, closeLog func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, withCode(exitUsage, fmt.Errorf("artifacts folder: %w", err))
	}
	f, err := os.Create(filepath.Join(dir, logName))
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	return slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})), func() { _ = f.Close() }, nil
}

// artifactsDir is the artifacts folder of a command: flag (--artifacts)
// when given, else $ARTIFACTS (as kubetest2 and Prow set it), else
// ./_artifacts/<name>. It creates nothing.
func artifactsDir(flag, name string) string {
	if flag != "" {
		return flag
	}
	if a := os.Getenv("ARTIFACTS"); a != "" {
		return a
	}
	return filepath.Join("_artifacts", name)
}
