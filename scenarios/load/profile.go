package load

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Executor names, as in k6.
const (
	ExecutorConstantVUs = "constant-vus"
	ExecutorRampingVUs  = "ramping-vus"
)

// Defaults mirrored from k6, and safety limits.
const (
	DefaultGracefulStop     = 30 * time.Second // k6 gracefulStop default
	DefaultGracefulRampDown = 30 * time.Second // k6 gracefulRampDown default
	DefaultMaxIterations    = 10_000_000       // set by ConstantVUs and RampingVUs
	VULimit                 = 100_000          // upper bound on any VU count of a profile
	MaxDuration             = 7 * 24 * time.Hour
)

// Stage is one k6 ramping-vus stage: over Duration the VU count moves
// linearly from the previous target to Target.
type Stage struct {
	Duration time.Duration
	Target   int
}

// Profile describes how many VUs run when. Zero durations mean zero (no
// grace, no think time): use ConstantVUs or RampingVUs for k6's defaults.
type Profile struct {
	Executor string // ExecutorConstantVUs or ExecutorRampingVUs

	// constant-vus
	VUs      int
	Duration time.Duration

	// ramping-vus
	StartVUs int
	Stages   []Stage

	// GracefulRampDown: a VU removed by a ramp-down may finish the iteration
	// it is in for this long, then the iteration is interrupted.
	GracefulRampDown time.Duration
	// GracefulStop: at the end of the profile, iterations in progress may
	// finish for this long, then they are interrupted.
	GracefulStop time.Duration
	// ThinkTime is the pause of a VU between two of its iterations.
	ThinkTime time.Duration
	// MaxIterations is a hard bound on the iterations of a run (> 0).
	MaxIterations int64
}

// ConstantVUs returns a constant-vus profile with k6's default graceful
// periods and DefaultMaxIterations.
func ConstantVUs(vus int, d time.Duration) Profile {
	return Profile{Executor: ExecutorConstantVUs, VUs: vus, Duration: d,
		GracefulRampDown: DefaultGracefulRampDown, GracefulStop: DefaultGracefulStop,
		MaxIterations: DefaultMaxIterations}
}

// RampingVUs returns a ramping-vus profile with k6's default graceful
// periods and DefaultMaxIterations.
func RampingVUs(startVUs int, stages ...Stage) Profile {
	return Profile{Executor: ExecutorRampingVUs, StartVUs: startVUs, Stages: append([]Stage(nil), stages...),
		GracefulRampDown: DefaultGracefulRampDown, GracefulStop: DefaultGracefulStop,
		MaxIterations: DefaultMaxIterations}
}

// Validate reports every problem of p, joined.
func (p Profile) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("load: profile: "+format, a...)) }
	vus := func(name string, n int) {
		if n < 0 || n > VULimit {
			bad("%s %d out of [0, %d]", name, n, VULimit)
		}
	}
	dur := func(name string, d time.Duration) {
		if d < 0 || d > MaxDuration {
			bad("%s %s out of [0, %s]", name, d, MaxDuration)
		}
	}
	switch p.Executor {
	case ExecutorConstantVUs:
		vus("VUs", p.VUs)
		if p.VUs == 0 {
			bad("constant-vus needs VUs > 0")
		}
		dur("Duration", p.Duration)
		if p.Duration == 0 {
			bad("constant-vus needs Duration > 0")
		}
		if p.StartVUs != 0 || len(p.Stages) != 0 {
			bad("constant-vus takes VUs and Duration, not StartVUs or Stages")
		}
	case ExecutorRampingVUs:
		vus("StartVUs", p.StartVUs)
		if len(p.Stages) == 0 {
			bad("ramping-vus needs at least one stage")
		}
		var total time.Duration
		peak := p.StartVUs
		for i, s := range p.Stages {
			vus(fmt.Sprintf("stage %d target", i), s.Target)
			dur(fmt.Sprintf("stage %d duration", i), s.Duration)
			if s.Duration > 0 {
				total += s.Duration
			}
			peak = max(peak, s.Target)
		}
		if len(p.Stages) > 0 {
			if total == 0 {
				bad("ramping-vus needs a total stage duration > 0")
			}
			if total > MaxDuration {
				bad("total stage duration %s over %s", total, MaxDuration)
			}
			if peak <= 0 {
				bad("ramping-vus needs StartVUs or some stage target > 0")
			}
		}
		if p.VUs != 0 || p.Duration != 0 {
			bad("ramping-vus takes StartVUs and Stages, not VUs or Duration")
		}
	default:
		bad("executor %q is not %q or %q", p.Executor, ExecutorConstantVUs, ExecutorRampingVUs)
	}
	dur("GracefulRampDown", p.GracefulRampDown)
	dur("GracefulStop", p.GracefulStop)
	dur("ThinkTime", p.ThinkTime)
	if p.MaxIterations <= 0 {
		bad("MaxIterations %d must be > 0 (safety bound)", p.MaxIterations)
	}
	return errors.Join(errs...)
}

// TotalDuration is the time during which iterations may start: Duration for
// constant-vus, the sum of the stage durations for ramping-vus. Graceful
// periods come after it.
func (p Profile) TotalDuration() time.Duration {
	switch p.Executor {
	case ExecutorConstantVUs:
		return p.Duration
	case ExecutorRampingVUs:
		var total time.Duration
		for _, s := range p.Stages {
			total += max(s.Duration, 0)
		}
		return total
	}
	return 0
}

// PeakVUs is the largest VU count the profile asks for.
func (p Profile) PeakVUs() int {
	switch p.Executor {
	case ExecutorConstantVUs:
		return max(p.VUs, 0)
	case ExecutorRampingVUs:
		peak := max(p.StartVUs, 0)
		for _, s := range p.Stages {
			peak = max(peak, s.Target)
		}
		return peak
	}
	return 0
}

// VUsAt is the target VU count at offset t from the start. It is 0 before
// the start and from TotalDuration on (the profile has ended; only graceful
// stop remains). Within a ramping-vus stage it is the floor of the linear
// interpolation from the previous target, so a ramp from 5 to 50 over 2m
// reaches 27 at 1m and a ramp from 50 to 0 drops to 49 right after it
// begins. A stage covers [its start, its end): at a boundary the next stage
// applies, so zero-duration stages are instant jumps.
func (p Profile) VUsAt(t time.Duration) int {
	if t < 0 {
		return 0
	}
	switch p.Executor {
	case ExecutorConstantVUs:
		if t < p.Duration {
			return p.VUs
		}
	case ExecutorRampingVUs:
		from, start := p.StartVUs, time.Duration(0)
		for _, s := range p.Stages {
			end := start + max(s.Duration, 0)
			if t < end {
				return interpolate(from, s.Target, t-start, end-start)
			}
			from, start = s.Target, end
		}
	}
	return 0
}

// interpolate is floor(from + (to-from)*elapsed/d) in exact integer
// arithmetic, for 0 <= elapsed < d.
func interpolate(from, to int, elapsed, d time.Duration) int {
	diff := int64(to) - int64(from)
	if diff == 0 || elapsed <= 0 {
		return from
	}
	abs := uint64(diff)
	if diff < 0 {
		abs = uint64(-diff)
	}
	hi, lo := bits.Mul64(abs, uint64(elapsed))
	q, r := bits.Div64(hi, lo, uint64(d)) // q < abs since elapsed < d: no overflow
	if diff > 0 {
		return from + int(q)
	}
	if r != 0 {
		q++
	}
	return from - int(q)
}

// NextChange is the smallest offset u > t at which VUsAt(u) != VUsAt(t), or
// TotalDuration if the target does not change before the end. t must be in
// [0, TotalDuration).
func (p Profile) NextChange(t time.Duration) time.Duration {
	total := p.TotalDuration()
	if p.Executor != ExecutorRampingVUs || t >= total {
		return total
	}
	v := p.VUsAt(t)
	start := time.Duration(0)
	for _, s := range p.Stages {
		end := start + max(s.Duration, 0)
		if t >= end || end == start {
			start = end
			continue
		}
		lo := max(t, start)
		// VUsAt is monotone within [start, end).
		if p.VUsAt(lo) != v {
			return lo
		}
		if hi := end - 1; p.VUsAt(hi) != v {
			for hi-lo > 1 { // bounded: ~log2(stage duration in ns) steps
				mid := lo + (hi-lo)/2
				if p.VUsAt(mid) == v {
					lo = mid
				} else {
					hi = mid
				}
			}
			return hi
		}
		start = end
	}
	return total
}

// Scale returns a copy of p with every duration (Duration, stage durations,
// GracefulRampDown, GracefulStop, ThinkTime) multiplied by f, rounded to the
// nanosecond; VU counts and MaxIterations are unchanged. Use it for quick
// versions of long profiles; f <= 0 yields zero durations, which Validate
// rejects.
func (p Profile) Scale(f float64) Profile {
	scale := func(d time.Duration) time.Duration {
		if f <= 0 || d <= 0 {
			return 0
		}
		x := math.Round(float64(d) * f)
		if x >= math.MaxInt64 {
			return math.MaxInt64
		}
		return time.Duration(x)
	}
	q := p
	q.Duration = scale(p.Duration)
	q.GracefulRampDown = scale(p.GracefulRampDown)
	q.GracefulStop = scale(p.GracefulStop)
	q.ThinkTime = scale(p.ThinkTime)
	if p.Stages != nil {
		q.Stages = make([]Stage, len(p.Stages))
		for i, s := range p.Stages {
			q.Stages[i] = Stage{Duration: scale(s.Duration), Target: s.Target}
		}
	}
	return q
}
