package load

import (
	"math"
	"sync"
	"testing"
	"time"
)

// fakeClock moves only when the test calls Advance. waitTimers lets a test
// wait until the engine is parked on its timers, instead of sleeping.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*fakeTimer]struct{}
	changed chan struct{} // closed and replaced whenever timers change
}

type fakeTimer struct {
	c    *fakeClock
	ch   chan time.Time
	when time.Time
}

var fakeEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock() *fakeClock {
	return &fakeClock{now: fakeEpoch, timers: map[*fakeTimer]struct{}{}, changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1), when: c.now.Add(d)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers[t] = struct{}{}
	c.notifyLocked()
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, ok := t.c.timers[t]
	if ok {
		delete(t.c.timers, t)
		t.c.notifyLocked()
	}
	return ok
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.when.After(c.now) {
			t.ch <- t.when
			delete(c.timers, t)
		}
	}
	c.notifyLocked()
}

// waitTimers blocks until at least n timers are pending. The 10 s guard
// only turns a bug into a failure instead of a hang.
func (c *fakeClock) waitTimers(t testing.TB, n int) {
	t.Helper()
	guard := time.NewTimer(10 * time.Second)
	defer guard.Stop()
	for {
		c.mu.Lock()
		got, ch := len(c.timers), c.changed
		c.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-guard.C:
			t.Fatalf("fake clock: %d timers pending, waited for %d", got, n)
		}
	}
}

// waitTimerAt blocks until a timer due at when is pending.
func (c *fakeClock) waitTimerAt(t testing.TB, when time.Time) {
	t.Helper()
	guard := time.NewTimer(10 * time.Second)
	defer guard.Stop()
	for {
		c.mu.Lock()
		found, ch := false, c.changed
		for tm := range c.timers {
			found = found || tm.when.Equal(when)
		}
		c.mu.Unlock()
		if found {
			return
		}
		select {
		case <-ch:
		case <-guard.C:
			t.Fatalf("fake clock: no timer due at %s", when)
		}
	}
}

// scaledClock runs factor times faster than the real clock, so a profile
// of minutes runs in a fraction of a second while every duration the
// engine sees keeps its nominal value.
type scaledClock struct {
	origin time.Time // real
	factor float64
}

func newScaledClock(factor float64) *scaledClock {
	return &scaledClock{origin: time.Now(), factor: factor}
}

func (c *scaledClock) Now() time.Time {
	return fakeEpoch.Add(time.Duration(float64(time.Since(c.origin)) * c.factor))
}

func (c *scaledClock) NewTimer(d time.Duration) Timer {
	return systemTimer{time.NewTimer(time.Duration(math.Ceil(float64(d) / c.factor)))}
}

var (
	_ Clock = (*fakeClock)(nil)
	_ Clock = (*scaledClock)(nil)
	_ Clock = systemClock{}
)
