package worker

import (
	"context"
	"time"
)

// A work call's CPU cost (Config.CPUPerCall, `scaleproof-ref worker
// --cpu-per-call`). By default a call only sleeps, so a worker's CPU use
// stays near zero however many calls it holds, and an autoscaler on the
// HPA's CPU resource metric never sees the load. With a cost of m
// millicores a call burns about m/1000 of one core while it is held, as a
// duty cycle: in each BurnSlice it spins for m/1000 of the slice and sleeps
// the rest, until the call's own duration is over or its context ends. A
// pod's CPU use then follows its in-flight calls: n calls at m millicores
// use about n*m millicores (up to the pod's CPU limit), which is what the
// HPA's averageUtilization of the CPU request is computed from
// (resource metric: usage / request, averaged over the pods).
const (
	// BurnSlice is the duty cycle's period. 10 ms is short against a
	// call (200 ms by default) and against metrics-server's window
	// (kubelet's CPU usage rate, tens of seconds), and long against
	// the timer's resolution.
	BurnSlice = 10 * time.Millisecond
	// MaxCPUPerCall is the most one call can burn: it runs on one
	// goroutine, so at most one core (1000 millicores).
	MaxCPUPerCall = 1000
)

// DutyCycle is one slice of a call that burns millicores (clamped to
// 0..MaxCPUPerCall): spin for millicores/1000 of slice and sleep the rest,
// the slice first cut to left (what is left of the call; <= 0 gives 0, 0).
// spin + rest == min(slice, left).
func DutyCycle(millicores int, slice, left time.Duration) (spin, rest time.Duration) {
	if left <= 0 || slice <= 0 {
		return 0, 0
	}
	millicores = min(max(millicores, 0), MaxCPUPerCall)
	s := min(slice, left)
	spin = s * time.Duration(millicores) / MaxCPUPerCall
	return spin, s - spin
}

// Burner holds a work call for its duration while burning CPU: Millicores
// per call, as DutyCycle's slices of BurnSlice.
type Burner struct {
	// Millicores is the call's CPU cost, 0..MaxCPUPerCall (clamped).
	Millicores int
	// Now is the clock the call's end is measured on; nil means time.Now.
	Now func() time.Time
	// Spin keeps the CPU busy for d; nil means a loop reading Now until
	// d has passed. Tests replace it (and Now) to check the arithmetic.
	Spin func(d time.Duration)
	// Sleep waits d or until ctx ends (then ctx.Err()); nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Hold holds the call for d: slice after slice, spin then sleep, until d
// has passed on Now (nil) or ctx ends (ctx.Err(), checked at every slice and
// during each sleep; a spin lasts at most one slice). The number of slices
// is bounded (2*ceil(d/BurnSlice)+2) whatever the clock does.
func (b Burner) Hold(ctx context.Context, d time.Duration) error {
	now := b.Now
	if now == nil {
		now = time.Now
	}
	spinFor := b.Spin
	if spinFor == nil {
		spinFor = func(d time.Duration) {
			until := now().Add(d)
			for now().Before(until) {
			}
		}
	}
	sleepFor := b.Sleep
	if sleepFor == nil {
		sleepFor = Sleep
	}
	end := now().Add(d)
	slices := 2*int((d+BurnSlice-1)/BurnSlice) + 2
	for range slices {
		if err := ctx.Err(); err != nil {
			return err
		}
		spin, rest := DutyCycle(b.Millicores, BurnSlice, end.Sub(now()))
		if spin+rest <= 0 {
			return nil
		}
		if spin > 0 {
			spinFor(spin)
		}
		if rest > 0 {
			if err := sleepFor(ctx, rest); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}
