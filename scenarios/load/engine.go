package load

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Engine defaults.
const (
	DefaultRetryAfterCap   = time.Second
	DefaultResultQueue     = 4096
	DefaultResultQueueWait = 50 * time.Millisecond
)

// Causes of the engine's cancellations, as seen by Exec through
// context.Cause(ctx).
var (
	ErrRampDown     = errors.New("load: VU removed by ramp-down and gracefulRampDown elapsed")
	ErrGracefulStop = errors.New("load: profile ended and gracefulStop elapsed")
)

// Option configures an Engine.
type Option func(*config)

type config struct {
	clock     Clock
	retryCap  time.Duration
	metrics   *Metrics
	onResult  func(Result)
	queueSize int
	queueWait time.Duration
	log       *slog.Logger
	stop      <-chan struct{}
}

// WithClock sets the clock of every wait (default SystemClock).
func WithClock(c Clock) Option { return func(o *config) { o.clock = c } }

// WithRetryAfterCap caps the wait after an answer carrying Retry-After (a
// 429, or a 503 from an edge with no ready worker; default 1 s): the VU
// waits min(Result.RetryAfter, cap), plus ThinkTime, before its next
// iteration, as a well-behaved client does (RFC 9110 §10.2.3). An answer
// without Retry-After adds no wait.
func WithRetryAfterCap(d time.Duration) Option { return func(o *config) { o.retryCap = max(d, 0) } }

// WithMetrics makes the run record into m, so that m.Snapshot can be read
// while it goes on. m must be fresh (NewMetrics).
func WithMetrics(m *Metrics) Option { return func(o *config) { o.metrics = m } }

// WithResults streams every Result to fn, for a results file writer. fn is
// called from one goroutine, in order of completion, so it need not be
// safe for concurrent use. A VU hands its result to a queue (see
// WithResultQueue) and goes on; if the queue is full the VU waits at most
// the queue wait, then drops the result from the stream (never from the
// Metrics) and counts it in Metrics.DroppedResults. Run returns after fn has
// returned for every queued result.
func WithResults(fn func(Result)) Option { return func(o *config) { o.onResult = fn } }

// WithResultQueue sets the result queue length (default 4096) and the
// longest a VU waits on a full queue (default 50 ms; 0 drops at once).
func WithResultQueue(size int, maxWait time.Duration) Option {
	return func(o *config) { o.queueSize, o.queueWait = max(size, 0), max(maxWait, 0) }
}

// WithStop ends the run early when stop is closed, as if the profile ended
// at that instant: no iteration starts after it, and iterations in progress
// get the profile's GracefulStop to finish before they are interrupted (k6's
// gracefulStop). Canceling the run's context instead interrupts at once.
func WithStop(stop <-chan struct{}) Option { return func(o *config) { o.stop = stop } }

// WithLogger logs the engine's decisions (VU target changes at debug, the
// end of the profile and interruptions at info). Default: no logging.
func WithLogger(l *slog.Logger) Option { return func(o *config) { o.log = l } }

// Engine runs profiles. Its zero value is not usable: call New. An Engine
// holds only configuration; runs do not share state except a Metrics given
// with WithMetrics.
type Engine struct{ cfg config }

// New returns an Engine with opts applied over the defaults.
func New(opts ...Option) *Engine {
	c := config{clock: systemClock{}, retryCap: DefaultRetryAfterCap, queueSize: DefaultResultQueue,
		queueWait: DefaultResultQueueWait, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&c)
	}
	if c.clock == nil {
		c.clock = systemClock{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return &Engine{cfg: c}
}

// Run is New(opts...).Run(ctx, p, exec).
func Run(ctx context.Context, p Profile, exec Exec, opts ...Option) (*Metrics, error) {
	return New(opts...).Run(ctx, p, exec)
}

// prepare checks what every run needs before it starts (the profile's
// validity perr, an Exec, a live ctx) and returns the Metrics it records
// into (WithMetrics', else new ones).
func (e *Engine) prepare(ctx context.Context, perr error, exec Exec) (*Metrics, error) {
	if perr != nil {
		return nil, perr
	}
	if exec == nil {
		return nil, errors.New("load: nil Exec")
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("load: run not started: %w", context.Cause(ctx))
	}
	if e.cfg.metrics != nil {
		return e.cfg.metrics, nil
	}
	return NewMetrics(), nil
}

// Run drives p with exec until the profile ends (plus graceful stop),
// MaxIterations have started, or ctx is done, and returns the Metrics. When
// ctx ends first, iterations in progress are interrupted at once and Run
// returns the Metrics so far with an error wrapping the context's cause. Run
// returns only after every VU goroutine has returned, so Exec must honour
// its ctx.
func (e *Engine) Run(ctx context.Context, p Profile, exec Exec) (*Metrics, error) {
	m, err := e.prepare(ctx, p.Validate(), exec)
	if err != nil {
		return nil, err
	}
	c := e.cfg
	r := &run{cfg: c, p: p, exec: exec, clock: c.clock, m: m, t0: c.clock.Now(),
		slots: make([]*slot, p.PeakVUs()), draining: map[*slot]time.Time{},
		maxCh: make(chan struct{}), stopCh: make(chan struct{})}
	if err := m.begin(r.t0, c.clock); err != nil {
		return nil, err
	}
	r.hardCtx, r.hardCancel = context.WithCancelCause(ctx)
	defer r.hardCancel(nil)
	r.sink = c.startSink(m)
	err = r.control(ctx)
	r.sink.close()
	m.finish(c.clock.Now())
	return m, err
}

// run is the state of one Run. Fields below mu-less comments are owned by
// the controller goroutine (the caller of Run).
type run struct {
	cfg   config
	p     Profile
	exec  Exec
	clock Clock
	m     *Metrics
	sink  *sink
	t0    time.Time

	hardCtx    context.Context // parent of every iteration; canceled at the hard stop
	hardCancel context.CancelCauseFunc

	issued   atomic.Int64 // iterations handed out
	maxOnce  sync.Once
	maxCh    chan struct{} // closed when MaxIterations is reached
	stopping atomic.Bool
	stopCh   chan struct{} // closed when no iteration may start any more
	wg       sync.WaitGroup

	// controller-owned
	slots    []*slot // index = VU number - 1; nil until first needed
	active   int     // slots[:active] are active, the rest are not
	draining map[*slot]time.Time
}

func (r *run) maxReached() { r.maxOnce.Do(func() { close(r.maxCh) }) }

// control follows the profile, then performs the graceful stop. It returns
// once every VU goroutine has returned.
func (r *run) control(ctx context.Context) error {
	total := r.p.TotalDuration()
	end := r.t0.Add(total)
	at := r.t0 // when the next target change was due
	reason, stopAt := "profile ended", end
	var runErr error
	for { // one pass per target change or drain deadline, both finite
		now := r.clock.Now()
		off := now.Sub(r.t0)
		if off >= total {
			break
		}
		if target := r.p.VUsAt(off); target != r.active {
			r.cfg.log.Debug("load: VU target", "offset", off, "target", target, "from", r.active)
			r.scale(target, at)
		}
		r.expireDrains(now)
		next := r.t0.Add(r.p.NextChange(off))
		t := r.clock.NewTimer(r.wakeAt(next).Sub(now))
		select {
		case <-t.C():
			at = next
			if now := r.clock.Now(); now.Before(next) { // woke early (scaled clocks round)
				at = now
			}
			continue
		case <-ctx.Done():
			t.Stop()
			reason, stopAt = "context done", r.clock.Now()
			runErr = fmt.Errorf("load: run stopped at %s of %s: %w", stopAt.Sub(r.t0), total, context.Cause(ctx))
		case <-r.maxCh:
			t.Stop()
			reason, stopAt = "MaxIterations reached", r.clock.Now()
		case <-r.cfg.stop: // nil channel when not set: never ready
			t.Stop()
			reason, stopAt = "stopped", r.clock.Now()
		}
		break
	}

	// No iteration starts from here on.
	r.stopping.Store(true)
	close(r.stopCh)
	for _, s := range r.slots[:r.active] {
		s.deactivate(stopAt, false)
	}
	r.active = 0
	r.m.setTarget(0)
	deadline := stopAt.Add(r.p.GracefulStop)
	r.cfg.log.Info("load: stopping", "reason", reason, "offset", stopAt.Sub(r.t0),
		"in_flight", r.m.Snapshot().InFlight, "graceful_stop", r.p.GracefulStop)
	allDone := make(chan struct{})
	go func() { r.wg.Wait(); close(allDone) }()
	for { // one pass per drain deadline plus the stop deadline
		now := r.clock.Now()
		r.expireDrains(now)
		if !now.Before(deadline) {
			r.cfg.log.Info("load: gracefulStop elapsed, interrupting", "in_flight", r.m.Snapshot().InFlight)
			r.hardCancel(ErrGracefulStop)
			break
		}
		t := r.clock.NewTimer(r.wakeAt(deadline).Sub(now))
		select {
		case <-allDone:
			t.Stop()
			return runErr
		case <-t.C():
			continue
		case <-ctx.Done(): // iterations are canceled with ctx
			t.Stop()
			if runErr == nil {
				runErr = fmt.Errorf("load: graceful stop cut short: %w", context.Cause(ctx))
			}
		}
		break
	}
	<-allDone
	return runErr
}

// wakeAt is the earlier of t and the first drain deadline.
func (r *run) wakeAt(t time.Time) time.Time {
	for _, d := range r.draining {
		if d.Before(t) {
			t = d
		}
	}
	return t
}

// scale activates or deactivates VUs so that exactly target are active;
// at is when the change was due.
func (r *run) scale(target int, at time.Time) {
	r.m.setTarget(target)
	for ; r.active < target; r.active++ {
		s := r.slots[r.active]
		if s == nil {
			s = &slot{id: r.active + 1, r: r, wake: make(chan struct{}, 1)}
			r.slots[r.active] = s
			r.wg.Add(1)
			go s.loop()
		}
		s.activate(at)
	}
	for ; r.active > target; r.active-- { // highest VU number first
		s := r.slots[r.active-1]
		if deadline, ok := s.deactivate(at, true); ok {
			r.draining[s] = deadline
		}
	}
}

// expireDrains interrupts the iterations of removed VUs whose
// gracefulRampDown has elapsed, and forgets stale entries.
func (r *run) expireDrains(now time.Time) {
	for s, d := range r.draining {
		if s.expire(d, now) {
			delete(r.draining, s)
		}
	}
}

// slot is one VU. Its goroutine lives from its first activation to the end
// of the run; the controller switches it on and off.
type slot struct {
	id   int
	r    *run
	wake chan struct{} // capacity 1: "state changed"

	mu          sync.Mutex
	active      bool
	activeSince time.Time
	busy        bool // in an iteration
	cancel      context.CancelCauseFunc
	drainUntil  time.Time // gracefulRampDown deadline of the current iteration

	ctx       context.Context // the VU's iteration context, owned by loop
	ctxCancel context.CancelCauseFunc
}

func (s *slot) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *slot) activate(at time.Time) {
	s.mu.Lock()
	if !s.active {
		s.active, s.activeSince, s.drainUntil = true, at, time.Time{}
		if !s.busy {
			s.r.m.vuDelta(at, +1)
		}
	}
	s.mu.Unlock()
	s.poke()
}

// deactivate stops s from starting iterations. With drain, an iteration in
// progress gets a gracefulRampDown deadline, returned with true.
func (s *slot) deactivate(at time.Time, drain bool) (time.Time, bool) {
	s.mu.Lock()
	defer s.poke()
	defer s.mu.Unlock()
	if !s.active {
		return time.Time{}, false
	}
	s.active = false
	if !s.busy {
		s.r.m.vuDelta(at, -1)
		return time.Time{}, false
	}
	if !drain {
		return time.Time{}, false
	}
	s.drainUntil = at.Add(s.r.p.GracefulRampDown)
	return s.drainUntil, true
}

// expire interrupts the current iteration if its drain deadline d has
// passed. It reports whether the entry for d is settled (fired or stale).
func (s *slot) expire(d, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.drainUntil.Equal(d) || !s.busy || s.active {
		return true // iteration over, or VU reactivated
	}
	if now.Before(d) {
		return false
	}
	s.cancel(ErrRampDown)
	s.drainUntil = time.Time{}
	return true
}

// loop runs iterations while the slot is active. Every wait is on a timer or
// a channel; each pass starts at most one iteration.
func (s *slot) loop() {
	r := s.r
	defer r.wg.Done()
	defer func() {
		if s.ctxCancel != nil {
			s.ctxCancel(nil)
		}
	}()
	var nextAt time.Time // end of the pause after the previous iteration
	for {
		select { // a state change before this point is read below
		case <-s.wake:
		default:
		}
		s.mu.Lock()
		for !s.active {
			s.mu.Unlock()
			select {
			case <-s.wake:
			case <-r.stopCh:
				return
			}
			s.mu.Lock()
		}
		intended := s.activeSince
		s.mu.Unlock()
		if nextAt.After(intended) {
			intended = nextAt
		}
		if d := intended.Sub(r.clock.Now()); d > 0 {
			t := r.clock.NewTimer(d)
			select {
			case <-t.C():
			case <-s.wake: // state changed: check again
				t.Stop()
				continue
			case <-r.stopCh:
				t.Stop()
				return
			}
		}

		s.mu.Lock()
		if !s.active {
			s.mu.Unlock()
			continue
		}
		if r.stopping.Load() || r.hardCtx.Err() != nil { // stopping, or the run's context ended
			s.mu.Unlock()
			return
		}
		n := r.issued.Add(1)
		if n > r.p.MaxIterations {
			s.mu.Unlock()
			r.maxReached()
			return
		}
		// One context per VU, kept across its iterations until it is
		// canceled (ramp-down expiry), so an iteration allocates none.
		if s.ctx == nil || s.ctx.Err() != nil {
			s.ctx, s.ctxCancel = context.WithCancelCause(r.hardCtx)
		}
		ictx := s.ctx
		s.busy, s.cancel = true, s.ctxCancel
		s.mu.Unlock()

		r.m.iterationStarted(intended)
		res := r.exec(ictx, s.id, n-1)
		end := r.clock.Now()
		var cause error
		if ictx.Err() != nil {
			cause = context.Cause(ictx)
		}

		s.mu.Lock()
		s.busy, s.cancel, s.drainUntil = false, nil, time.Time{}
		if !s.active {
			r.m.vuDelta(end, -1)
		}
		s.mu.Unlock()

		res = complete(res, s.id, n-1, intended, end, cause)
		r.m.record(res)
		r.sink.send(res)
		pause := r.p.ThinkTime
		if (res.Class == Class429 || res.Class == Class5xx) && res.RetryAfter > 0 {
			pause += min(res.RetryAfter, r.cfg.retryCap)
		}
		nextAt = end.Add(pause)
	}
}

// complete fills in what the engine knows about a result. cause is non-nil
// when the iteration's context was canceled.
func complete(res Result, vu int, iter int64, intended, end time.Time, cause error) Result {
	res.VU, res.Iteration = vu, iter
	if res.Start.IsZero() {
		res.Start = intended
	}
	if res.Latency == 0 {
		res.Latency = end.Sub(res.Start)
	}
	if res.Class == "" {
		res.Class = ClassOK
		if res.Err != "" {
			res.Class = ClassTransport
		}
	}
	if cause != nil {
		switch res.Class {
		case ClassTransport, ClassBadResponse:
			res.Class = ClassInterrupted
		}
		if res.Class == ClassInterrupted && res.Err == "" {
			res.Err = cause.Error()
		}
	}
	return res
}

// sink queues results for the WithResults callback; a nil sink (no
// callback) takes none.
type sink struct {
	ch    chan Result
	fn    func(Result)
	wait  time.Duration
	clock Clock
	m     *Metrics
	done  chan struct{}
}

// startSink starts forwarding a run's results to c's WithResults
// callback, a result dropped into m when the queue stays full c.queueWait;
// nil when there is no callback.
func (c config) startSink(m *Metrics) *sink {
	if c.onResult == nil {
		return nil
	}
	k := &sink{ch: make(chan Result, c.queueSize), fn: c.onResult, wait: c.queueWait,
		clock: c.clock, m: m, done: make(chan struct{})}
	go k.forward()
	return k
}

func (k *sink) send(r Result) {
	if k == nil {
		return
	}
	select {
	case k.ch <- r:
		return
	default:
	}
	if k.wait > 0 {
		t := k.clock.NewTimer(k.wait)
		defer t.Stop()
		select {
		case k.ch <- r:
			return
		case <-t.C():
		}
	}
	k.m.dropResult()
}

func (k *sink) forward() {
	defer close(k.done)
	for r := range k.ch {
		k.fn(r)
	}
}

// close is called once no VU can send any more.
func (k *sink) close() {
	if k == nil {
		return
	}
	close(k.ch)
	<-k.done
}
