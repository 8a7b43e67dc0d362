// Package buildstep runs the named, logged steps of an image build (the
// node image's, the KEDA images'): each step has its own log file that
// holds the output of the tools it runs, and its start, end and elapsed
// time go to a slog.Logger.
package buildstep

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

// CacheRoot is ~/.cache/scaleproof (or $XDG_CACHE_HOME/scaleproof; the
// system temp dir stands for the user cache dir when there is none): the
// directory the image builds keep their caches under.
func CacheRoot() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "scaleproof")
}

// Error is a failed step: its name, how long it ran, and the log file that
// holds the output of the tools it ran.
type Error struct {
	What    string // starts the message: "node image step", "keda images: step"
	Step    string
	Log     string
	Elapsed time.Duration
	Err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %q failed after %.1f s: %v (log: %s)", e.What, e.Step, e.Elapsed.Seconds(), e.Err, e.Log)
}

func (e *Error) Unwrap() error { return e.Err }

// Time is how long one step took; Cached is true when its output was
// already there and the step did nothing.
type Time struct {
	Name    string
	Elapsed time.Duration
	Cached  bool
}

// Runner runs named steps one after another. Each step gets its own log
// file under Dir (NN-name.log).
type Runner struct {
	Dir string
	// Topic names the log records ("node image step": "… cached", "… done",
	// "… failed"); What starts an Error's message.
	Topic, What string
	Log         *slog.Logger
	Now         func() time.Time // nil: time.Now
	// Heartbeat, when > 0, is how often a running step logs that it still
	// runs and for how long (Topic+" running").
	Heartbeat time.Duration
	// Times are the steps run so far, oldest first.
	Times []Time
	n     int
}

// Ctx is what a step's function gets: the log file to send tool output to,
// and runners for the real tools that write into it.
type Ctx struct {
	context.Context
	Log io.Writer
}

// Skipped records the step name as cached without running anything.
func (r *Runner) Skipped(name string) {
	r.Times = append(r.Times, Time{Name: name, Cached: true})
}

// Run runs fn as the step name. When done reports true the step is skipped
// and logged as cached. The error returned is an *Error.
func (r *Runner) Run(ctx context.Context, name string, done func() bool, fn func(sc *Ctx) error) error {
	r.n++
	if done != nil && done() {
		r.Log.Info(r.Topic+" cached", "step", name)
		r.Skipped(name)
		return nil
	}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return &Error{What: r.What, Step: name, Err: err}
	}
	path := filepath.Join(r.Dir, fmt.Sprintf("%02d-%s.log", r.n, name))
	f, err := os.Create(path)
	if err != nil {
		return &Error{What: r.What, Step: name, Log: path, Err: err}
	}
	defer f.Close()
	now := r.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	r.Log.Info(r.Topic, "step", name, "log", path)
	stop := r.heartbeat(name, start, now)
	err = fn(&Ctx{Context: ctx, Log: f})
	stop()
	el := now().Sub(start)
	r.Times = append(r.Times, Time{Name: name, Elapsed: el})
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		fmt.Fprintf(f, "\nFAILED after %.1f s: %v\n", el.Seconds(), err)
		r.Log.Error(r.Topic+" failed", "step", name, "seconds", el.Round(100*time.Millisecond).Seconds(), "log", path, "err", err)
		return &Error{What: r.What, Step: name, Log: path, Elapsed: el, Err: err}
	}
	fmt.Fprintf(f, "\ndone in %.1f s\n", el.Seconds())
	r.Log.Info(r.Topic+" done", "step", name, "seconds", el.Round(100*time.Millisecond).Seconds())
	return nil
}

// heartbeat logs, every Heartbeat until stop is called, that the step is
// still running and for how long.
func (r *Runner) heartbeat(name string, start time.Time, now func() time.Time) (stop func()) {
	if r.Heartbeat <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(r.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r.Log.Info(r.Topic+" running", "step", name, "seconds", now().Sub(start).Round(time.Second).Seconds())
			}
		}
	}()
	return func() { close(done); <-exited }
}

// Cmd runs one tool in dir with its output going to the step log. env
// entries are added to the process environment.
func (sc *Ctx) Cmd(dir string, env []string, name string, args ...string) error {
	return sc.run(sc.Log, dir, env, name, args...)
}

// Output runs one tool and returns its stdout (stderr goes to the log).
func (sc *Ctx) Output(dir string, env []string, name string, args ...string) (string, error) {
	var out strings.Builder
	if err := sc.run(io.MultiWriter(&out, sc.Log), dir, env, name, args...); err != nil {
		return "", err
	}
	return out.String(), nil
}

func (sc *Ctx) run(stdout io.Writer, dir string, env []string, name string, args ...string) error {
	c := exec.CommandContext(sc, name, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	c.Stdout, c.Stderr = stdout, sc.Log
	prefix := ""
	if len(env) > 0 {
		prefix = strings.Join(env, " ") + " "
	}
	fmt.Fprintf(sc.Log, "$ %s%s %s\n", prefix, name, strings.Join(args, " "))
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
