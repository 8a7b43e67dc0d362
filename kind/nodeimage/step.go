package nodeimage

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// StepError is a failed build step: its name, how long it ran, and the log
// file that holds the output of the tools it ran.
type StepError struct {
	Step    string
	Log     string
	Elapsed time.Duration
	Err     error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("node image step %q failed after %.1f s: %v (log: %s)", e.Step, e.Elapsed.Seconds(), e.Err, e.Log)
}

func (e *StepError) Unwrap() error { return e.Err }

// StepTime is how long one step took; Cached is true when its output was
// already there and the step did nothing.
type StepTime struct {
	Name    string
	Elapsed time.Duration
	Cached  bool
}

// steps runs named steps one after another. Each step gets its own log file
// under logDir (NN-name.log); start and end (with the elapsed time) go to log.
type steps struct {
	logDir string
	log    *slog.Logger
	now    func() time.Time
	n      int
	times  []StepTime
}

func newSteps(logDir string, log *slog.Logger, now func() time.Time) *steps {
	if now == nil {
		now = time.Now
	}
	return &steps{logDir: logDir, log: log, now: now}
}

// stepCtx is what a step's function gets: the log file to send tool output
// to, and a runner for the real tools that writes into it.
type stepCtx struct {
	context.Context
	Log io.Writer
	env []string
}

// run runs fn as the step name. When done reports true the step is skipped
// and logged as cached. The error returned is a *StepError.
func (s *steps) run(ctx context.Context, name string, done func() bool, fn func(sc *stepCtx) error) error {
	s.n++
	if done != nil && done() {
		s.log.Info("node image step cached", "step", name)
		s.times = append(s.times, StepTime{Name: name, Cached: true})
		return nil
	}
	if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		return &StepError{Step: name, Err: err}
	}
	path := filepath.Join(s.logDir, fmt.Sprintf("%02d-%s.log", s.n, name))
	f, err := os.Create(path)
	if err != nil {
		return &StepError{Step: name, Log: path, Err: err}
	}
	defer f.Close()
	start := s.now()
	s.log.Info("node image step", "step", name, "log", path)
	err = fn(&stepCtx{Context: ctx, Log: f})
	el := s.now().Sub(start)
	s.times = append(s.times, StepTime{Name: name, Elapsed: el})
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		fmt.Fprintf(f, "\nFAILED after %.1f s: %v\n", el.Seconds(), err)
		s.log.Error("node image step failed", "step", name, "seconds", round1(el), "log", path, "err", err)
		return &StepError{Step: name, Log: path, Elapsed: el, Err: err}
	}
	fmt.Fprintf(f, "\ndone in %.1f s\n", el.Seconds())
	s.log.Info("node image step done", "step", name, "seconds", round1(el))
	return nil
}

func round1(d time.Duration) float64 {
	return float64(d.Round(100*time.Millisecond)) / float64(time.Second)
}

// cmd runs one tool with its output going to the step log. env entries are
// added to the process environment.
func (sc *stepCtx) cmd(dir string, env []string, name string, args ...string) error {
	c := exec.CommandContext(sc, name, args...)
	c.Dir = dir
	c.Env = append(append(os.Environ(), sc.env...), env...)
	c.Stdout, c.Stderr = sc.Log, sc.Log
	fmt.Fprintf(sc.Log, "$ %s%s %s\n", envPrefix(env), name, strings.Join(args, " "))
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// output runs one tool and returns its stdout (stderr goes to the log).
func (sc *stepCtx) output(dir string, name string, args ...string) (string, error) {
	c := exec.CommandContext(sc, name, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), sc.env...)
	var out strings.Builder
	c.Stdout, c.Stderr = io.MultiWriter(&out, sc.Log), sc.Log
	fmt.Fprintf(sc.Log, "$ %s %s\n", name, strings.Join(args, " "))
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return out.String(), nil
}

func envPrefix(env []string) string {
	if len(env) == 0 {
		return ""
	}
	return strings.Join(env, " ") + " "
}

// publish makes tmp the finished output dir (a rename, so a half-written
// output never looks finished).
func publish(tmp, dir string) error {
	_ = os.RemoveAll(dir)
	return os.Rename(tmp, dir)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
