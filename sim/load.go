package sim

import (
	"math"
	"slices"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// loadRun is one load phase of a scenario: closed-loop VUs following a
// load.Profile against the scenario's zone through the simulated edge, as
// the load engine runs them (see the package doc).
type loadRun struct {
	s  *scope
	z  *zone
	p  load.Profile
	t0 time.Duration // virtual start

	vus      []*vu
	active   int
	alive    int // active or in a call
	busy     int
	stopping bool
	stopAt   time.Duration
	ended    bool
	waiters  []func()

	// recording
	calls   reports.Calls
	lat     []float32 // ms, every finished call but interrupted ones
	seconds []second  // by second from the scenario's start
	aliveAt []level   // alive VUs from each change on
}

type vu struct {
	id         int
	active     bool
	busy       bool
	gen        uint64        // bumped at each deactivation: stale wake-ups are ignored
	since      time.Duration // activation
	nextAt     time.Duration // end of the pause after the previous call
	drainUntil time.Duration // gracefulRampDown deadline of the current call, 0: none
}

type level struct {
	at time.Duration
	n  int
}

type second struct {
	calls              reports.Calls
	lat                []float32
	started, completed int64
}

// startLoad starts p now against the scope's zone.
func (s *scope) startLoad(p load.Profile) *loadRun {
	r := &loadRun{s: s, z: s.z, p: p, t0: s.sim.l.since()}
	r.vus = make([]*vu, p.PeakVUs())
	for i := range r.vus {
		r.vus[i] = &vu{id: i + 1}
	}
	s.loads = append(s.loads, r)
	r.follow()
	return r
}

// follow applies the profile's VU target now and schedules its next change
// or its end.
func (r *loadRun) follow() {
	if r.stopping {
		return
	}
	l := &r.s.sim.l
	off := l.since() - r.t0
	total := r.p.TotalDuration()
	if off >= total {
		r.stop()
		return
	}
	r.setTarget(r.p.VUsAt(off))
	l.at(r.t0+r.p.NextChange(off), r.follow)
}

func (r *loadRun) setTarget(target int) {
	now := r.s.sim.l.since()
	for ; r.active < target; r.active++ {
		v := r.vus[r.active]
		v.active, v.since, v.drainUntil = true, now, 0
		if !v.busy {
			r.setAlive(+1)
			r.schedule(v)
		}
	}
	for ; r.active > target; r.active-- { // highest VU number first
		r.deactivate(r.vus[r.active-1], now+r.p.GracefulRampDown)
	}
}

func (r *loadRun) deactivate(v *vu, drainUntil time.Duration) {
	if !v.active {
		return
	}
	v.active = false
	v.gen++
	if v.busy {
		v.drainUntil = drainUntil
		return
	}
	r.setAlive(-1)
}

func (r *loadRun) setAlive(d int) {
	r.alive += d
	now := r.s.sim.l.since()
	if n := len(r.aliveAt); n > 0 && r.aliveAt[n-1].at == now {
		r.aliveAt[n-1].n = r.alive
		return
	}
	r.aliveAt = append(r.aliveAt, level{now, r.alive})
}

// schedule wakes v for its next call at max(activation, end of its pause).
func (r *loadRun) schedule(v *vu) {
	gen := v.gen
	at := max(v.since, v.nextAt)
	r.s.sim.l.at(at, func() { r.iterate(v, gen, at) })
}

// iterate starts v's call intended at intended. Without a client round
// trip the call reaches the edge at once and ends in one event; with one
// (Model.ClientRTT) it reaches the edge half a draw later, frees its worker
// when its answer leaves the edge, and reaches the VU the other half later.
func (r *loadRun) iterate(v *vu, gen uint64, intended time.Duration) {
	if gen != v.gen || !v.active || r.stopping || v.busy {
		return
	}
	l, m, z := &r.s.sim.l, &r.z.m, r.z
	now := l.since()
	v.busy = true
	r.busy++
	r.bucket(intended).started++
	if m.ClientRTT.Mean() <= 0 {
		w, class := z.call()
		end := now + m.RTT
		if w != nil {
			end += m.Service.draw(z.rng)
		}
		l.at(end, func() { z.leave(w); r.finish(v, class, intended) })
		return
	}
	rtt := m.ClientRTT.draw(z.rng)
	there := rtt / 2
	l.at(now+there, func() {
		w, class := z.call()
		at := l.since()
		hold := m.RTT
		if w != nil {
			hold += m.Service.draw(z.rng)
		}
		l.at(at+hold, func() { z.leave(w) })
		l.at(at+hold+rtt-there, func() { r.finish(v, class, intended) })
	})
}

// finish ends v's call (its worker, if any, is already free).
func (r *loadRun) finish(v *vu, class load.Class, intended time.Duration) {
	l, m := &r.s.sim.l, &r.z.m
	now := l.since()
	if (r.stopping && now > r.stopAt+r.p.GracefulStop) || (v.drainUntil > 0 && now > v.drainUntil) {
		class = load.ClassInterrupted
	}
	r.record(class, intended, now)
	v.busy, v.drainUntil = false, 0
	r.busy--
	pause := r.p.ThinkTime
	if class == load.Class429 || class == load.Class5xx {
		pause += min(m.RetryAfter, m.RetryCap)
	}
	v.nextAt = now + pause
	switch {
	case v.active && !r.stopping:
		r.schedule(v)
	case !v.active:
		r.setAlive(-1)
	}
	if r.stopping && r.busy == 0 {
		r.end()
	}
}

// stop ends the load now: no call starts, calls in flight finish (those
// past gracefulStop count as interrupted).
func (r *loadRun) stop() {
	if r.stopping {
		return
	}
	r.stopping = true
	r.stopAt = r.s.sim.l.since()
	for _, v := range r.vus {
		if v.active {
			v.active = false
			v.gen++
			if !v.busy {
				r.setAlive(-1)
			}
		}
	}
	r.active = 0
	if r.busy == 0 {
		r.end()
	}
}

func (r *loadRun) end() {
	if r.ended {
		return
	}
	r.ended = true
	for _, w := range r.waiters {
		w()
	}
	r.waiters = nil
}

// onEnd calls fn once the load has ended (at once if it has).
func (r *loadRun) onEnd(fn func()) {
	if r.ended {
		fn()
		return
	}
	r.waiters = append(r.waiters, fn)
}

func (r *loadRun) bucket(t time.Duration) *second {
	i := int(math.Floor((t - r.s.start).Seconds()))
	i = max(i, 0)
	for len(r.seconds) <= i {
		r.seconds = append(r.seconds, second{})
	}
	return &r.seconds[i]
}

func (r *loadRun) record(class load.Class, intended, end time.Duration) {
	b := r.bucket(end)
	b.completed++
	add := func(c *reports.Calls) {
		switch class {
		case load.ClassOK:
			c.OK++
		case load.Class429:
			c.TooMany++
		case load.Class5xx:
			c.Server5xx++
		default:
			c.Interrupted++
		}
	}
	add(&r.calls)
	add(&b.calls)
	if class != load.ClassInterrupted {
		ms := float32((end - intended).Seconds() * 1000)
		r.lat = append(r.lat, ms)
		b.lat = append(b.lat, ms)
	}
}

// quantile is the nearest-rank q-quantile of xs (sorted in place), 0 when empty.
func quantile(xs []float32, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	if !slices.IsSorted(xs) {
		slices.Sort(xs)
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return round1(float64(xs[min(max(i, 0), len(xs)-1)]))
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// secondRecords are the load's per-second records, from its first second
// to its last, joined with the zone's samples.
func (r *loadRun) secondRecords(samples []target.Sample) []reports.Second {
	first := int(math.Floor((r.t0 - r.s.start).Seconds()))
	var out []reports.Second
	var inFlight int64
	li, alive := 0, 0
	si := 0
	var last target.Sample
	for i := first; i < len(r.seconds); i++ {
		b := &r.seconds[i]
		inFlight += b.started - b.completed
		// VUs: the most alive in the second.
		lo, hi := r.s.start+time.Duration(i)*time.Second, r.s.start+time.Duration(i+1)*time.Second
		most := alive
		for li < len(r.aliveAt) && r.aliveAt[li].at < hi {
			alive = r.aliveAt[li].n
			if r.aliveAt[li].at >= lo {
				most = max(most, alive)
			} else {
				most = alive
			}
			li++
		}
		for si < len(samples) && int(math.Floor(samples[si].At.Sub(Epoch.Add(r.s.start)).Seconds())) <= i {
			last = samples[si]
			si++
		}
		out = append(out, reports.Second{Scenario: r.s.name, T: i, VUs: most, Count: last.Count, Max: last.Max, Ready: last.Ready,
			Calls: b.calls, P50ms: quantile(b.lat, 0.5), P95ms: quantile(b.lat, 0.95), P99ms: quantile(b.lat, 0.99), InFlight: inFlight})
	}
	return out
}
