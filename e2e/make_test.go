//go:build !e2e

package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMakeE2EStopsOnCtrlC: Ctrl-C during a step of make e2e (or
// e2e-console, e2e-targets) lets that step tear down, runs no further step,
// and ends make with the interrupted line. The steps are stand-ins (make
// -o skips the image prerequisites): the first, like `scaleproof run`,
// answers SIGINT by tearing down and exiting 130; the second must never
// start. The signal goes to make's whole process group, as a terminal's
// Ctrl-C does. (make test runs it; make e2e's specs, built with -tags e2e,
// do not.)
func TestMakeE2EStopsOnCtrlC(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	const (
		first  = `sh -c 'trap "echo step torn down; exit 130" INT; echo step started; while :; do sleep 0.1; done' || rc=$$((rc ? rc : $$?)); `
		second = `echo second step ran || rc=1; `
	)
	for _, target := range []string{"e2e", "e2e-console", "e2e-targets"} {
		t.Run(target, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "make", "-s", "-C", root, "-o", "deps-kind", "-o", "kind-node-image", "-o", "keda-images",
				target, "E2E_CONSOLE="+first+second, "E2E_TARGETS="+first+second, "E2E_DIR="+t.TempDir())
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = cmd.Stdout // make's own lines too, in order
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var lines []string
			sc := bufio.NewScanner(out)
			for sc.Scan() { // bounded by ctx: the pipe closes when every step's process has ended
				lines = append(lines, sc.Text())
				if sc.Text() == "step started" && len(lines) == 1 {
					if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
						t.Fatal(err)
					}
				}
			}
			err = cmd.Wait()
			got := strings.Join(lines, "\n")
			for _, want := range []string{"step torn down", "make " + target + ": interrupted"} {
				if !strings.Contains(got, want) {
					t.Errorf("output lacks %q:\n%s", want, got)
				}
			}
			if strings.Contains(got, "second step ran") || strings.Count(got, "step started") != 1 {
				t.Errorf("a step ran after Ctrl-C:\n%s", got)
			}
			if err == nil || ctx.Err() != nil {
				t.Errorf("make ended with %v (context: %v), want a failure of its own", err, ctx.Err())
			}
		})
	}
}
