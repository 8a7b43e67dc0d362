// Package skips records why a test skipped, so that `make test` can list
// every skipped test at the end instead of hiding it behind a plain "ok".
// Test code only.
//
// Skip appends one line, "<package dir> <TestName>: <reason>", to the file
// named by $SCALEPROOF_SKIP_LOG (when set; the Makefile sets it) and then
// skips the test. Each line is one write to a file opened O_APPEND, so test
// binaries running in parallel do not interleave their lines.
package skips

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvLog names the file Skip appends to.
const EnvLog = "SCALEPROOF_SKIP_LOG"

// Skip records t's name and the reason (formatted as fmt.Sprint(args...))
// and calls t.Skip(args...).
func Skip(t testing.TB, args ...any) {
	t.Helper()
	Record(t.Name(), fmt.Sprint(args...))
	t.Skip(args...)
}

// Record appends "<package dir> <name>: <reason>" to $SCALEPROOF_SKIP_LOG;
// a no-op when it is unset. Errors are ignored: the list is a courtesy, the
// skip itself still shows in `go test -v`.
func Record(name, reason string) {
	path := os.Getenv(EnvLog)
	if path == "" {
		return
	}
	line := fmt.Sprintf("%s %s: %s\n", pkgDir(), name, strings.ReplaceAll(reason, "\n", " "))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	_, _ = f.WriteString(line)
	_ = f.Close()
}

// pkgDir is the test's working directory (go test runs a test binary in its
// package's directory) relative to the module root, e.g. "./reports".
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if rel, err := filepath.Rel(dir, wd); err == nil {
				return "./" + filepath.ToSlash(rel)
			}
			break
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return wd
}
