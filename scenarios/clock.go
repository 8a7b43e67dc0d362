package scenarios

import (
	"context"
	"time"
)

// Clock is the scenarios' time: every hold of a scenario phase is a Sleep on
// it (Env.Clock). SystemClock is the real one; tests pass a
// fake that advances on Sleep.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (its error then).
	Sleep(ctx context.Context, d time.Duration) error
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SystemClock is the real clock.
func SystemClock() Clock { return systemClock{} }

// clockOrSystem is c, or the system clock when c is nil (an unset
// Env.Clock).
func clockOrSystem(c Clock) Clock {
	if c == nil {
		return systemClock{}
	}
	return c
}
