// Package steps records the timed steps of a cluster maker (kind/,
// cloud/deployer) and of the system deployed on its cluster: each step is a
// JUnit case of the run and a progress line ("kind: create cluster in
// 19.5 s"). One Step type for every maker; it imports nothing of the module.
package steps

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Step is one timed step; Err is nil when it succeeded.
type Step struct {
	Name     string
	Duration time.Duration
	Err      error
}

// Recorder runs and records steps. Its zero value records, logs nothing and
// prints nothing.
type Recorder struct {
	// Prefix starts each progress line ("kind", "GKE"); Topic names the
	// log records ("kind step", "cloud step").
	Prefix, Topic string
	Log           *slog.Logger     // nil: no log records
	Out           io.Writer        // progress lines; nil: none
	Now           func() time.Time // nil: time.Now

	mu    sync.Mutex
	steps []Step
}

// Run runs fn as the step name: it logs its start, times it, records it
// and, when it succeeded, prints "<Prefix>: <name> in <s> s". It returns
// fn's error.
func (r *Recorder) Run(name string, fn func() error) error {
	now := r.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	if r.Log != nil {
		r.Log.Info(r.Topic, "step", name)
	}
	err := fn()
	d := now().Sub(start)
	r.mu.Lock()
	r.steps = append(r.steps, Step{Name: name, Duration: d, Err: err})
	r.mu.Unlock()
	switch {
	case err != nil:
		if r.Log != nil {
			r.Log.Error(r.Topic+" failed", "step", name, "seconds", d.Seconds(), "err", err)
		}
	default:
		if r.Log != nil {
			r.Log.Info(r.Topic+" done", "step", name, "seconds", d.Seconds())
		}
		if r.Out != nil {
			fmt.Fprintf(r.Out, "%s: %s in %.1f s\n", r.Prefix, name, d.Seconds())
		}
	}
	return err
}

// Steps are the steps recorded so far, oldest first.
func (r *Recorder) Steps() []Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Step(nil), r.steps...)
}
