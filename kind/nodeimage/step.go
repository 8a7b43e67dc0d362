package nodeimage

import (
	"log/slog"
	"os"
	"time"

	"github.com/scaleproof/scaleproof/kind/internal/buildstep"
)

// StepError is a failed build step: its name, how long it ran, and the log
// file that holds the output of the tools it ran.
type StepError = buildstep.Error

// StepTime is how long one step took; Cached is true when its output was
// already there and the step did nothing.
type StepTime = buildstep.Time

// stepCtx is what a step's function gets: the log file to send tool output
// to, and a runner for the real tools that writes into it.
type stepCtx = buildstep.Ctx

// newSteps runs named steps one after another. Each step gets its own log
// file under logDir (NN-name.log); start and end (with the elapsed time) go
// to log.
func newSteps(logDir string, log *slog.Logger, now func() time.Time) *buildstep.Runner {
	return &buildstep.Runner{Dir: logDir, Topic: "node image step", What: "node image step", Log: log, Now: now}
}

// publish makes tmp the finished output dir (a rename, so a half-written
// output never looks finished).
func publish(tmp, dir string) error {
	_ = os.RemoveAll(dir)
	return os.Rename(tmp, dir)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
