package local_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scaleproof/scaleproof/internal/proctest"
)

// refBin is scaleproof-ref, built once for the package by TestMain (empty in
// -short mode: the process-level tests skip).
var refBin string

// TestMain builds scaleproof-ref once (CGO_ENABLED=0, as `make build`),
// runs the tests, and then checks that no goroutine leaked and that no
// scaleproof-ref process of this package outlived its test.
func TestMain(m *testing.M) {
	flag.Parse()
	var dir string
	if !testing.Short() {
		var err error
		dir, err = os.MkdirTemp("", "scaleproof-local-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "temp dir:", err)
			os.Exit(1)
		}
		refBin = filepath.Join(dir, "scaleproof-ref")
		_, self, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(self), "..", "..", "..")
		cmd := exec.Command("go", "build", "-o", refBin, "./cmd/scaleproof-ref")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build ./cmd/scaleproof-ref: %v\n%s", err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if refBin != "" {
			if pids := proctest.WaitNone(func() []int { return proctest.Of(refBin, "") }, 10*time.Second); len(pids) > 0 {
				fmt.Fprintf(os.Stderr, "scaleproof-ref processes left after the tests: %v\n", pids)
				if code == 0 {
					code = 1
				}
			}
		}
		if dir != "" {
			os.RemoveAll(dir)
		}
		os.Exit(code)
	}))
}
