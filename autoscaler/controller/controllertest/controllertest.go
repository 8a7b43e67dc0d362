package controllertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

// Clock is a settable clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

var _ controller.Clock = (*Clock)(nil)

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { setLocked(&c.mu, &c.t, t) }

// setLocked sets *p to v while holding mu: the setters of Clock and Fleet.
func setLocked[T any](mu *sync.Mutex, p *T, v T) {
	mu.Lock()
	defer mu.Unlock()
	*p = v
}

// Tickers is a ticker source whose tickers tick when the test says so.
// Every ticker it makes is announced on Created.
type Tickers struct {
	created chan *Ticker
}

var _ controller.TickerSource = (*Tickers)(nil)

// NewTickers returns a ticker source; it announces up to 64 tickers nobody
// has taken with Next.
func NewTickers() *Tickers { return &Tickers{created: make(chan *Ticker, 64)} }

// NewTicker makes a ticker and announces it.
func (ts *Tickers) NewTicker(d time.Duration) controller.Ticker {
	t := &Ticker{Interval: d, c: make(chan time.Time), stopped: make(chan struct{})}
	ts.created <- t
	return t
}

// Next waits for the next ticker made (the scheduler starting or taking a
// new configuration). It fails after timeout, which only guards a broken
// test: nothing sleeps.
func (ts *Tickers) Next(timeout time.Duration) (*Ticker, error) {
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	select {
	case t := <-ts.created:
		return t, nil
	case <-tm.C:
		return nil, fmt.Errorf("no ticker made within %s", timeout)
	}
}

// Ticker is a fake ticker.
type Ticker struct {
	Interval time.Duration
	c        chan time.Time
	once     sync.Once
	stopped  chan struct{}
}

// C is the tick channel.
func (t *Ticker) C() <-chan time.Time { return t.c }

// Stop marks the ticker stopped.
func (t *Ticker) Stop() { t.once.Do(func() { close(t.stopped) }) }

// Stopped is closed once the ticker is stopped.
func (t *Ticker) Stopped() <-chan struct{} { return t.stopped }

// Tick delivers one tick and returns once the scheduler took it; it fails
// when the ticker is stopped or after timeout.
func (t *Ticker) Tick(now time.Time, timeout time.Duration) error {
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	select {
	case t.c <- now:
		return nil
	case <-t.stopped:
		return errors.New("ticker stopped")
	case <-tm.C:
		return fmt.Errorf("tick not taken within %s", timeout)
	}
}

// Worker is a fake worker of a fake fleet.
type Worker struct {
	Endpoint   fleet.Endpoint
	InFlight   int
	Limit      int
	CallsTotal uint64
	// Unreachable makes its scrape fail; NotReadyGauge makes it report
	// itself not ready.
	Unreachable   bool
	NotReadyGauge bool
	// NoLimitMetric makes its scrape fail as a /metrics without the
	// in-flight limit does (controller.ErrNoInflightLimit).
	NoLimitMetric bool
}

// ScaleCall records one call of Scale.
type ScaleCall struct {
	Group, Zone string
	Replicas    int
	Victims     []string
}

// Fleet is a fake platform: a scale target, discovery and scraper in one.
// New workers are listed ready at once with limit 32, unless NewNotReady.
type Fleet struct {
	clock controller.Clock

	mu           sync.Mutex
	zones        map[string][]*Worker
	canaries     map[string]*Worker // the zone's canary, not part of its replicas
	byID         map[string]*Worker
	seq          int
	scales       []ScaleCall
	scaleErr     error
	discoveryErr error
	newNotReady  bool
	record       bool
}

var (
	_ controller.ScaleTarget = (*Fleet)(nil)
	_ controller.Discovery   = (*Fleet)(nil)
	_ controller.Scraper     = (*Fleet)(nil)
)

// NewFleet returns an empty fleet whose workers are created at clock's time.
func NewFleet(clock controller.Clock) *Fleet {
	return &Fleet{clock: clock, zones: map[string][]*Worker{}, canaries: map[string]*Worker{}, byID: map[string]*Worker{}, record: true}
}

// AddCanary gives the zone a canary worker, ready with limit 32, listed
// after the stable ones: Scale never counts, adds or removes it. It returns
// the canary's ID.
func (f *Fleet) AddCanary(group, zone string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	w := &Worker{
		Endpoint: fleet.Endpoint{ID: fmt.Sprintf("%s-%s-canary-%d", group, zone, f.seq), Addr: fmt.Sprintf("fake:%d", f.seq),
			Ready: true, Created: f.clock.Now(), Canary: true},
		Limit: DefaultLimit,
	}
	f.byID[w.Endpoint.ID] = w
	f.canaries[zkey(group, zone)] = w
	return w.Endpoint.ID
}

// DefaultLimit is the in-flight limit of a new fake worker (RAMEN_MAX_INFLIGHT).
const DefaultLimit = 32

func zkey(group, zone string) string { return group + "/" + zone }

// SetScaleError makes Scale fail with err (nil: succeed).
func (f *Fleet) SetScaleError(err error) { setLocked(&f.mu, &f.scaleErr, err) }

// SetDiscoveryError makes Endpoints fail with err (nil: succeed).
func (f *Fleet) SetDiscoveryError(err error) { setLocked(&f.mu, &f.discoveryErr, err) }

// SetNewNotReady makes new workers start listed not ready.
func (f *Fleet) SetNewNotReady(v bool) { setLocked(&f.mu, &f.newNotReady, v) }

// SetRecord turns the recording of Scale calls on or off (benchmarks).
func (f *Fleet) SetRecord(v bool) { setLocked(&f.mu, &f.record, v) }

// Scale sets the zone's workers: new ones are appended; going down removes
// the victims first, then the newest.
func (f *Fleet) Scale(_ context.Context, group, zone string, replicas int, victims []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.record {
		f.scales = append(f.scales, ScaleCall{group, zone, replicas, slices.Clone(victims)})
	}
	if f.scaleErr != nil {
		return f.scaleErr
	}
	k := zkey(group, zone)
	ws := f.zones[k]
	for _, v := range victims {
		if len(ws) <= replicas {
			break
		}
		ws = slices.DeleteFunc(ws, func(w *Worker) bool {
			if w.Endpoint.ID == v {
				delete(f.byID, v)
				return true
			}
			return false
		})
	}
	for len(ws) > replicas {
		delete(f.byID, ws[len(ws)-1].Endpoint.ID)
		ws = ws[:len(ws)-1]
	}
	for len(ws) < replicas {
		f.seq++
		w := &Worker{
			Endpoint: fleet.Endpoint{ID: fmt.Sprintf("%s-%s-%d", group, zone, f.seq), Addr: fmt.Sprintf("fake:%d", f.seq),
				Ready: !f.newNotReady, Created: f.clock.Now()},
			Limit: DefaultLimit,
		}
		f.byID[w.Endpoint.ID] = w
		ws = append(ws, w)
	}
	f.zones[k] = ws
	return nil
}

// Endpoints lists the zone's workers.
func (f *Fleet) Endpoints(_ context.Context, group, zone string) ([]fleet.Endpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.discoveryErr != nil {
		return nil, f.discoveryErr
	}
	ws := f.zones[zkey(group, zone)]
	out := make([]fleet.Endpoint, len(ws), len(ws)+1)
	for i, w := range ws {
		out[i] = w.Endpoint
	}
	if c := f.canaries[zkey(group, zone)]; c != nil {
		out = append(out, c.Endpoint)
	}
	return out, nil
}

// Scrape returns the worker's fake metrics.
func (f *Fleet) Scrape(ctx context.Context, ep fleet.Endpoint) (autoscaler.WorkerSample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := autoscaler.WorkerSample{ID: ep.ID, Created: ep.Created}
	if err := ctx.Err(); err != nil {
		return s, err
	}
	w := f.byID[ep.ID]
	switch {
	case w == nil:
		return s, fmt.Errorf("scrape %s: no such worker", ep.ID)
	case w.Unreachable:
		return s, fmt.Errorf("scrape %s: connection refused", ep.ID)
	case w.NoLimitMetric:
		return s, fmt.Errorf("scrape %s: parse metrics: %w", ep.ID, controller.ErrNoInflightLimit)
	}
	s.Reachable = true
	s.Ready = w.Endpoint.Ready && !w.NotReadyGauge
	s.InFlight, s.Limit, s.CallsTotal = w.InFlight, w.Limit, w.CallsTotal
	return s, nil
}

// Update calls fn on each worker of the zone, its canary last (to set
// load, readiness, ...).
func (f *Fleet) Update(group, zone string, fn func(w *Worker)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.zones[zkey(group, zone)] {
		fn(w)
	}
	if c := f.canaries[zkey(group, zone)]; c != nil {
		fn(c)
	}
}

// SetLoad sets every worker of the zone to inFlight calls in flight and adds
// callsDelta to its call counter.
func (f *Fleet) SetLoad(group, zone string, inFlight int, callsDelta uint64) {
	f.Update(group, zone, func(w *Worker) {
		w.InFlight = inFlight
		w.CallsTotal += callsDelta
	})
}

// Replicas returns how many stable workers the zone runs (its canary apart).
func (f *Fleet) Replicas(group, zone string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.zones[zkey(group, zone)])
}

// Scales returns the Scale calls so far.
func (f *Fleet) Scales() []ScaleCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.scales)
}
