package controller

import "time"

// Clock tells the controller the time. Tests inject a fake one.
type Clock interface{ Now() time.Time }

// Ticker delivers the scheduler's ticks.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// TickerSource makes the scheduler's tickers. Tests inject one that they
// tick by hand, so rounds run without sleeping.
type TickerSource interface {
	NewTicker(d time.Duration) Ticker
}

// SystemClock is the real clock and ticker source.
type SystemClock struct{}

var (
	_ Clock        = SystemClock{}
	_ TickerSource = SystemClock{}
)

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker returns a time.Ticker.
func (SystemClock) NewTicker(d time.Duration) Ticker { return systemTicker{time.NewTicker(d)} }

type systemTicker struct{ t *time.Ticker }

func (t systemTicker) C() <-chan time.Time { return t.t.C }
func (t systemTicker) Stop()               { t.t.Stop() }
