package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Open-model executor names, as in k6.
const (
	ExecutorConstantArrivalRate = "constant-arrival-rate"
	ExecutorRampingArrivalRate  = "ramping-arrival-rate"
)

// DefaultTimeUnit is k6's default timeUnit of the arrival-rate executors.
const DefaultTimeUnit = time.Second

// RateStage is one ramping-arrival-rate stage: over Duration the iteration
// rate moves linearly from the previous target (StartRate for the first
// stage) to Target iterations per TimeUnit.
type RateStage struct {
	Duration time.Duration
	Target   float64
}

// ArrivalProfile is an open-model profile: iterations start at a rate,
// independent of how fast the target answers, as k6's arrival-rate
// executors do (https://grafana.com/docs/k6/latest/using-k6/scenarios/executors/constant-arrival-rate/,
// .../ramping-arrival-rate/, and the page "Arrival-rate VU allocation"):
//
//   - iteration starts are spaced fractionally: at Rate 10 per 1 s one starts
//     every 100 ms;
//   - each iteration needs a free VU: PreAllocatedVUs are made before the
//     start; when none is free another is made, up to MaxVUs; when MaxVUs are
//     all busy the iteration is dropped (counted in
//     Metrics.DroppedIterations, with no Result and no latency);
//   - at the end no iteration starts; iterations in progress may run
//     GracefulStop longer, then they are interrupted.
//
// Latency is measured from each iteration's scheduled start, so a target
// that stalls shows the stall in the percentiles.
type ArrivalProfile struct {
	Executor string // ExecutorConstantArrivalRate or ExecutorRampingArrivalRate
	TimeUnit time.Duration

	// constant-arrival-rate: Rate iterations per TimeUnit for Duration.
	Rate     float64
	Duration time.Duration

	// ramping-arrival-rate: from StartRate per TimeUnit along Stages.
	StartRate float64
	Stages    []RateStage

	PreAllocatedVUs int
	MaxVUs          int // 0 means PreAllocatedVUs (k6's default)
	GracefulStop    time.Duration
	MaxIterations   int64 // hard bound on iterations scheduled (> 0)
}

// ConstantArrivalRate returns a constant-arrival-rate profile with k6's
// defaults (gracefulStop 30 s) and DefaultMaxIterations.
func ConstantArrivalRate(rate float64, timeUnit, d time.Duration, preAllocated, maxVUs int) ArrivalProfile {
	return ArrivalProfile{Executor: ExecutorConstantArrivalRate, Rate: rate, TimeUnit: timeUnit, Duration: d,
		PreAllocatedVUs: preAllocated, MaxVUs: maxVUs, GracefulStop: DefaultGracefulStop, MaxIterations: DefaultMaxIterations}
}

// RampingArrivalRate returns a ramping-arrival-rate profile with k6's
// defaults and DefaultMaxIterations.
func RampingArrivalRate(startRate float64, timeUnit time.Duration, preAllocated, maxVUs int, stages ...RateStage) ArrivalProfile {
	return ArrivalProfile{Executor: ExecutorRampingArrivalRate, StartRate: startRate, TimeUnit: timeUnit,
		Stages: append([]RateStage(nil), stages...), PreAllocatedVUs: preAllocated, MaxVUs: maxVUs,
		GracefulStop: DefaultGracefulStop, MaxIterations: DefaultMaxIterations}
}

func (p ArrivalProfile) maxVUs() int {
	if p.MaxVUs == 0 {
		return p.PreAllocatedVUs
	}
	return p.MaxVUs
}

func (p ArrivalProfile) timeUnit() time.Duration {
	if p.TimeUnit <= 0 {
		return DefaultTimeUnit
	}
	return p.TimeUnit
}

// Validate reports every problem of p, joined.
func (p ArrivalProfile) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("load: profile: "+format, a...)) }
	rate := func(name string, r float64) {
		if math.IsNaN(r) || r < 0 || r > 1e9 {
			bad("%s %v out of [0, 1e9] per time unit", name, r)
		}
	}
	dur := func(name string, d time.Duration) {
		if d < 0 || d > MaxDuration {
			bad("%s %s out of [0, %s]", name, d, MaxDuration)
		}
	}
	switch p.Executor {
	case ExecutorConstantArrivalRate:
		rate("rate", p.Rate)
		if p.Rate == 0 {
			bad("constant-arrival-rate needs a rate > 0")
		}
		dur("duration", p.Duration)
		if p.Duration == 0 {
			bad("constant-arrival-rate needs a duration > 0")
		}
		if len(p.Stages) != 0 || p.StartRate != 0 {
			bad("constant-arrival-rate takes rate and duration, not stages or a start rate")
		}
	case ExecutorRampingArrivalRate:
		rate("start rate", p.StartRate)
		if len(p.Stages) == 0 {
			bad("ramping-arrival-rate needs at least one stage")
		}
		var total time.Duration
		for i, s := range p.Stages {
			rate(fmt.Sprintf("stage %d target", i+1), s.Target)
			dur(fmt.Sprintf("stage %d duration", i+1), s.Duration)
			total += max(s.Duration, 0)
		}
		if len(p.Stages) > 0 && (total == 0 || total > MaxDuration) {
			bad("total stage duration %s out of (0, %s]", total, MaxDuration)
		}
		if p.Rate != 0 || p.Duration != 0 {
			bad("ramping-arrival-rate takes a start rate and stages, not rate or duration")
		}
	default:
		bad("executor %q is not %q or %q", p.Executor, ExecutorConstantArrivalRate, ExecutorRampingArrivalRate)
	}
	dur("time unit", p.TimeUnit)
	dur("gracefulStop", p.GracefulStop)
	if p.PreAllocatedVUs < 0 || p.PreAllocatedVUs > VULimit {
		bad("preAllocatedVUs %d out of [0, %d]", p.PreAllocatedVUs, VULimit)
	}
	if m := p.maxVUs(); m < p.PreAllocatedVUs || m > VULimit || m == 0 {
		bad("maxVUs %d must be in [max(preAllocatedVUs, 1), %d]", m, VULimit)
	}
	if p.MaxIterations <= 0 {
		bad("MaxIterations %d must be > 0 (safety bound)", p.MaxIterations)
	}
	return errors.Join(errs...)
}

// TotalDuration is the time during which iterations are scheduled.
func (p ArrivalProfile) TotalDuration() time.Duration {
	if p.Executor == ExecutorConstantArrivalRate {
		return p.Duration
	}
	var t time.Duration
	for _, s := range p.Stages {
		t += max(s.Duration, 0)
	}
	return t
}

// RateAt is the iteration rate, per TimeUnit, at offset t (0 outside the
// profile).
func (p ArrivalProfile) RateAt(t time.Duration) float64 {
	if t < 0 || t >= p.TotalDuration() {
		return 0
	}
	if p.Executor == ExecutorConstantArrivalRate {
		return p.Rate
	}
	from, start := p.StartRate, time.Duration(0)
	for _, s := range p.Stages {
		end := start + max(s.Duration, 0)
		if t < end {
			return from + (s.Target-from)*float64(t-start)/float64(end-start)
		}
		from, start = s.Target, end
	}
	return 0
}

// schedule yields the scheduled offsets of iterations 0, 1, 2, ... in
// order: iteration i starts when the integral of the rate reaches i
// (iteration 0 at the start), so starts are spaced fractionally.
type schedule struct {
	p        ArrivalProfile
	unit     float64 // time unit in seconds
	stage    int
	stageT0  float64 // stage start, seconds
	stageN0  float64 // iterations due before the stage start
	from, to float64 // rate per second at the stage's start and end
	dur      float64 // stage length, seconds
	total    float64
}

func newSchedule(p ArrivalProfile) *schedule {
	s := &schedule{p: p, unit: p.timeUnit().Seconds(), total: p.TotalDuration().Seconds(), stage: -1}
	if p.Executor == ExecutorConstantArrivalRate {
		s.stage, s.from, s.to, s.dur = 0, p.Rate/s.unit, p.Rate/s.unit, s.total
		return s
	}
	s.from = p.StartRate / s.unit
	s.nextStage()
	return s
}

func (s *schedule) nextStage() {
	if s.stage >= 0 {
		s.stageN0 += (s.from + s.to) / 2 * s.dur
		s.stageT0 += s.dur
		s.from = s.to
	}
	s.stage++
	if s.stage < len(s.p.Stages) {
		st := s.p.Stages[s.stage]
		s.dur, s.to = max(st.Duration, 0).Seconds(), st.Target/s.unit
	}
}

// at is the offset at which iteration n is due, or false when the profile
// ends first.
func (s *schedule) at(n int64) (time.Duration, bool) {
	x := float64(n)
	for { // bounded: one pass per stage
		if s.p.Executor == ExecutorConstantArrivalRate {
			t := x / s.from
			return time.Duration(t * 1e9), t < s.total
		}
		if s.stage >= len(s.p.Stages) {
			return 0, false
		}
		inStage := (s.from + s.to) / 2 * s.dur
		if x-s.stageN0 < inStage {
			// Solve from*u + (to-from)/(2 dur) u² = k for u in [0, dur).
			k := x - s.stageN0
			a := (s.to - s.from) / (2 * s.dur)
			var u float64
			if math.Abs(a) < 1e-12 {
				if s.from == 0 {
					u = 0
				} else {
					u = k / s.from
				}
			} else {
				disc := s.from*s.from + 4*a*k
				u = (-s.from + math.Sqrt(max(disc, 0))) / (2 * a)
			}
			u = min(max(u, 0), s.dur)
			t := s.stageT0 + u
			if t >= s.total {
				return 0, false
			}
			return time.Duration(t * 1e9), true
		}
		s.nextStage()
	}
}

// RunArrival drives an open-model profile with exec and returns the
// Metrics. Options are those of New (WithClock, WithMetrics, WithResults,
// WithStop, WithLogger; WithRetryAfterCap has no effect: an open model
// does not wait for the target). Like Engine.Run it returns only after
// every VU goroutine has returned; when ctx ends first, iterations in
// progress are interrupted and the error wraps the context's cause.
func RunArrival(ctx context.Context, p ArrivalProfile, exec Exec, opts ...Option) (*Metrics, error) {
	return New(opts...).RunArrival(ctx, p, exec)
}

// RunArrival: see the package function.
func (e *Engine) RunArrival(ctx context.Context, p ArrivalProfile, exec Exec) (*Metrics, error) {
	m, err := e.prepare(ctx, p.Validate(), exec)
	if err != nil {
		return nil, err
	}
	c := e.cfg
	t0 := c.clock.Now()
	if err := m.begin(t0, c.clock); err != nil {
		return nil, err
	}
	a := &arrival{cfg: c, p: p, exec: exec, m: m, t0: t0, idle: make(chan *arrivalVU, p.maxVUs()), stop: make(chan struct{})}
	a.hardCtx, a.hardCancel = context.WithCancelCause(ctx)
	defer a.hardCancel(nil)
	a.sink = c.startSink(m)
	m.setTarget(p.PreAllocatedVUs)
	for range p.PreAllocatedVUs {
		a.spawn(t0, time.Time{})
	}
	err = a.control(ctx)
	a.sink.close()
	m.finish(c.clock.Now())
	return m, err
}

type arrival struct {
	cfg        config
	p          ArrivalProfile
	exec       Exec
	m          *Metrics
	sink       *sink
	t0         time.Time
	hardCtx    context.Context
	hardCancel context.CancelCauseFunc
	idle       chan *arrivalVU // VUs waiting for an iteration (capacity maxVUs: never blocks)
	stop       chan struct{}   // closed at the end of scheduling: VUs return
	wg         sync.WaitGroup
	vus        int // allocated, owned by the controller
	issued     atomic.Int64
}

// arrivalVU is one VU of an arrival-rate run: a goroutine waiting on its
// own channel for the scheduled start of its next iteration.
type arrivalVU struct {
	id   int
	next chan time.Time // capacity 1
}

// spawn makes a VU; first, when not zero, is its first iteration, else it
// starts idle.
func (a *arrival) spawn(now, first time.Time) {
	a.vus++
	a.m.vuDelta(now, +1)
	v := &arrivalVU{id: a.vus, next: make(chan time.Time, 1)}
	if first.IsZero() {
		a.idle <- v
	} else {
		v.next <- first
	}
	a.wg.Add(1)
	go a.vu(v)
}

func (a *arrival) vu(v *arrivalVU) {
	defer a.wg.Done()
	defer func() { a.m.vuDelta(a.cfg.clock.Now(), -1) }()
	for { // one pass per iteration; ends at the stop
		select {
		case at := <-v.next:
			a.iterate(v, at)
		case <-a.stop:
			select { // an iteration handed over just before the stop still runs
			case at := <-v.next:
				a.iterate(v, at)
			default:
			}
			return
		}
	}
}

func (a *arrival) iterate(v *arrivalVU, scheduled time.Time) {
	id := v.id
	n := a.issued.Add(1) - 1
	a.m.iterationStarted(scheduled)
	// Nothing cancels one iteration alone here (no ramp-down), so the run's
	// context serves every iteration.
	ictx := a.hardCtx
	res := a.exec(ictx, id, n)
	end := a.cfg.clock.Now()
	var cause error
	if ictx.Err() != nil {
		cause = context.Cause(ictx)
	}
	res = complete(res, id, n, scheduled, end, cause)
	a.m.record(res)
	a.idle <- v // free again before its result is streamed (capacity maxVUs)
	a.sink.send(res)
}

// control schedules iterations until the profile ends, MaxIterations are
// scheduled, stop or ctx; then performs the graceful stop.
func (a *arrival) control(ctx context.Context) error {
	sched := newSchedule(a.p)
	clock := a.cfg.clock
	maxVUs := a.p.maxVUs()
	total := a.p.TotalDuration()
	var runErr error
	reason := "profile ended"
	stopAt := a.t0.Add(total)
	var n int64
loop:
	for n < a.p.MaxIterations { // bounded by MaxIterations and the profile's end
		off, ok := sched.at(n)
		if !ok {
			break
		}
		due := a.t0.Add(off)
		if d := due.Sub(clock.Now()); d > 0 {
			t := clock.NewTimer(d)
			select {
			case <-t.C():
			case <-ctx.Done():
				t.Stop()
				reason, stopAt = "context done", clock.Now()
				runErr = fmt.Errorf("load: run stopped at %s of %s: %w", stopAt.Sub(a.t0), total, context.Cause(ctx))
				break loop
			case <-a.cfg.stop:
				t.Stop()
				reason, stopAt = "stopped", clock.Now()
				break loop
			}
		} else if ctx.Err() != nil {
			reason, stopAt = "context done", clock.Now()
			runErr = fmt.Errorf("load: run stopped at %s of %s: %w", stopAt.Sub(a.t0), total, context.Cause(ctx))
			break
		}
		n++
		select {
		case v := <-a.idle:
			v.next <- due
			continue
		default:
		}
		if a.vus < maxVUs {
			a.spawn(clock.Now(), due)
			a.m.setTarget(a.vus)
			continue
		}
		a.m.dropIteration(due)
	}
	if n >= a.p.MaxIterations {
		reason = "MaxIterations reached"
		stopAt = clock.Now()
	}
	close(a.stop)
	a.m.setTarget(0)
	a.cfg.log.Info("load: stopping", "reason", reason, "offset", stopAt.Sub(a.t0),
		"in_flight", a.m.Snapshot().InFlight, "graceful_stop", a.p.GracefulStop)
	allDone := make(chan struct{})
	go func() { a.wg.Wait(); close(allDone) }()
	deadline := stopAt.Add(a.p.GracefulStop)
	if d := deadline.Sub(clock.Now()); d > 0 {
		t := clock.NewTimer(d)
		select {
		case <-allDone:
			t.Stop()
			return runErr
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			if runErr == nil {
				runErr = fmt.Errorf("load: graceful stop cut short: %w", context.Cause(ctx))
			}
		}
	}
	a.hardCancel(ErrGracefulStop)
	<-allDone
	return runErr
}
