// Package observe watches the system under test while a scenario runs: the
// console's /readyz (every 1 s with a 5 s timeout, Ramen 0.7.5's autoscaling notes, "Load tests") and
// a scale target's count, max, ready and last decision (every 1 s), read
// through target.Target's State. Waits are
// event-driven on the sample stream (e2e-framework's wait.For shape), never
// sleeps.
//
// Must not import scenarios/ (only scenarios/consoleclient and scenarios/target).
package observe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// ReadyzFailure is one /readyz poll that was not 200 within the timeout.
type ReadyzFailure struct {
	At     time.Time `json:"at"`
	Status int       `json:"status,omitempty"` // 0 when no answer
	Err    string    `json:"err,omitempty"`
	// TimedOut: no answer within the poll's timeout (counted apart from
	// answers that were not 200 and from other transport errors).
	TimedOut bool `json:"timed_out,omitempty"`
}

// Kind is how the poll failed: "timed out", "HTTP <status>" or "error".
func (f ReadyzFailure) Kind() string {
	switch {
	case f.TimedOut:
		return "timed out"
	case f.Status != 0:
		return fmt.Sprintf("HTTP %d", f.Status)
	}
	return "error"
}

// Readyz polls a console's /readyz.
type Readyz struct {
	Client   *consoleclient.Client
	Interval time.Duration // 1 s in the published load test
	OnFail   func(ReadyzFailure)

	mu       sync.Mutex
	polls    int
	failures []ReadyzFailure
}

// Run polls until ctx ends.
func (r *Readyz) Run(ctx context.Context) {
	Every(ctx, r.Interval, func() bool {
		st, err := r.Client.Readyz(ctx)
		if ctx.Err() != nil {
			return false
		}
		r.mu.Lock()
		r.polls++
		if err != nil || st != 200 {
			f := ReadyzFailure{At: time.Now(), Status: st}
			if err != nil {
				f.Err = err.Error()
				var ne net.Error
				f.TimedOut = errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
			}
			r.failures = append(r.failures, f)
			if r.OnFail != nil {
				r.OnFail(f)
			}
		}
		r.mu.Unlock()
		return true
	})
}

// Every calls do at once and then at every interval (a second when
// interval is not positive) until ctx ends or do returns false.
func Every(ctx context.Context, interval time.Duration, do func() bool) {
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for do() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Stats returns the number of polls and a copy of the failures.
func (r *Readyz) Stats() (int, []ReadyzFailure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.polls, append([]ReadyzFailure(nil), r.failures...)
}

// Sample is one observation of a zone: the one sample type every target's
// readings share (target.Sample).
type Sample = target.Sample

// Zone samples one scale target (a console zone, an HPA's Deployment)
// through its Read.
type Zone struct {
	// Read takes one reading (target.Target's State).
	Read func(context.Context) (target.State, error)
	// Name is what the target is called in a wait's error ("g/a").
	Name     string
	Interval time.Duration // 1 s in the published load test
	OnSample func(Sample)

	mu      sync.Mutex
	samples []Sample
	changed chan struct{} // closed and replaced on every sample
}

// NewZone returns a sampler reading through read every interval.
func NewZone(read func(context.Context) (target.State, error), name string, interval time.Duration) *Zone {
	return &Zone{Read: read, Name: name, Interval: interval, changed: make(chan struct{})}
}

// Run samples until ctx ends; the first sample is taken at once.
func (z *Zone) Run(ctx context.Context) {
	Every(ctx, z.Interval, func() bool { z.SampleNow(ctx); return true })
}

// SampleNow takes one sample, records it, and calls OnSample (outside the
// sampler's lock, so the callback may read the sampler).
func (z *Zone) SampleNow(ctx context.Context) Sample {
	st, err := z.Read(ctx)
	if err != nil && ctx.Err() != nil {
		return Sample{At: time.Now(), Err: "cancelled"} // cancelled mid-request: not a sample
	}
	s := target.SampleOf(st)
	if s.At.IsZero() {
		s.At = time.Now()
	}
	z.mu.Lock()
	if err != nil {
		s = Sample{At: time.Now(), Err: err.Error()}
		if n := len(z.samples); n > 0 {
			last := z.samples[n-1]
			s.Count, s.Max, s.Ready, s.Desired, s.Min = last.Count, last.Max, last.Ready, last.Desired, last.Min
		}
	}
	z.samples = append(z.samples, s)
	close(z.changed)
	z.changed = make(chan struct{})
	z.mu.Unlock()
	if z.OnSample != nil {
		z.OnSample(s)
	}
	return s
}

// Samples returns a copy of every sample so far.
func (z *Zone) Samples() []Sample {
	z.mu.Lock()
	defer z.mu.Unlock()
	return append([]Sample(nil), z.samples...)
}

// Last returns the latest sample (zero when none).
func (z *Zone) Last() Sample {
	z.mu.Lock()
	defer z.mu.Unlock()
	if len(z.samples) == 0 {
		return Sample{}
	}
	return z.samples[len(z.samples)-1]
}

// WaitFor waits until a sample taken after the call satisfies cond, or the
// timeout passes; the error names what was awaited and the last sample.
func (z *Zone) WaitFor(ctx context.Context, what string, timeout time.Duration, cond func(Sample) bool) (Sample, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	z.mu.Lock()
	seen := len(z.samples)
	ch := z.changed
	z.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return z.Last(), fmt.Errorf("%s for %s in %s: last sample count=%d max=%d ready=%d",
				Waited(time.Since(start), timeout, ctx.Err()), what, z.Name, z.Last().Count, z.Last().Max, z.Last().Ready)
		case <-ch:
		}
		z.mu.Lock()
		news := append([]Sample(nil), z.samples[seen:]...)
		seen = len(z.samples)
		ch = z.changed
		z.mu.Unlock()
		for _, s := range news {
			if s.Err == "" && cond(s) {
				return s, nil
			}
		}
	}
}

// Waited says how a bounded wait ended, for an error message: "waited 2m0s"
// when the timeout passed, "interrupted after 1m0s of 2m0s" when the wait
// was cancelled first (err is the wait's context error; elapsed is rounded
// to 0.1 s).
func Waited(elapsed, timeout time.Duration, err error) string {
	if errors.Is(err, context.Canceled) {
		return fmt.Sprintf("interrupted after %s of %s", elapsed.Round(100*time.Millisecond), timeout)
	}
	return fmt.Sprintf("waited %s", timeout)
}
