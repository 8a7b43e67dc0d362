package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/store"
	"github.com/scaleproof/scaleproof/scenarios"
)

// FleetConfig is a fleet run: many zones under a slowly changing load for a
// long stretch of virtual time, to measure what the controller and the
// policy cost at scale. Each call is not an event here: a zone's load is a
// fluid (its VUs spread over its routable workers up to their limits, the
// rest refused and retrying), integrated between the scheduler's passes.
type FleetConfig struct {
	Zones    int           // group × zones, e.g. 10,000
	Duration time.Duration // virtual time, e.g. 1 h
	Max      int           // each zone's max_count
	// PeakVUs bounds each zone's load: zone i's VUs follow
	// round(A_i × (1 + sin(2π t / Period + φ_i)) / 2), A_i uniform in
	// [0, PeakVUs], φ_i uniform: from idle zones to zones at their max.
	PeakVUs int
	Period  time.Duration
	Seed    uint64
	Base    Config // profile (scheduler interval), step policy, model
}

// NewFleetConfig is 10,000 zones (max 8, up to 4 workers' worth of VUs)
// for an hour on the published profile's scheduler and the local model.
func NewFleetConfig() FleetConfig {
	base := NewConfig(publishedProfile())
	return FleetConfig{Zones: 10_000, Duration: time.Hour, Max: 8, PeakVUs: 4 * base.Model.Limit,
		Period: time.Hour, Seed: 1, Base: base}
}

// FleetReport is what a fleet run measured.
type FleetReport struct {
	Zones, Passes    int
	VirtualS         float64
	Wall             time.Duration
	PassMeanMS       float64 // wall time of one pass (every zone's round)
	PassMaxMS        float64
	Up, Down, Hold   int
	Errors           int
	ReplicaS         float64 // replica-seconds over every zone
	CallsOK, Refused float64 // the fluid's calls
	HeapMaxMiB       float64 // the largest heap in use after a pass
	HeapFirstMiB     float64 // after the first pass
	HeapLastMiB      float64 // after the last pass
}

// RunFleet runs a fleet in virtual time through the controller's scheduler
// passes.
func RunFleet(ctx context.Context, fc FleetConfig) (*FleetReport, error) {
	var bad []string // each value out of range, by name
	for _, c := range []struct {
		ok  bool
		say string
	}{{fc.Zones >= 1, fmt.Sprintf("zones %d: want >= 1", fc.Zones)}, {fc.Duration > 0, fmt.Sprintf("duration %s: want > 0", fc.Duration)},
		{fc.Max >= 1, fmt.Sprintf("max %d: want >= 1", fc.Max)}, {fc.PeakVUs >= 0, fmt.Sprintf("peak VUs %d: want >= 0", fc.PeakVUs)},
		{fc.Period > 0, fmt.Sprintf("period %s: want > 0", fc.Period)}} {
		if !c.ok {
			bad = append(bad, c.say)
		}
	}
	if len(bad) > 0 {
		return nil, errors.New("sim: fleet: " + strings.Join(bad, "; "))
	}
	cfg := fc.Base
	if err := errors.Join(cfg.Step.Validate(), cfg.Model.Validate()); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "scaleproof-fleet-")
	if err != nil {
		return nil, fmt.Errorf("sim: state dir: %w", err)
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "state.db"), store.Options{NoSync: true})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	defer st.Close()
	s := &Sim{cfg: cfg, st: st, ctx: ctx, pf: &platform{zones: map[string]*zone{}, byName: map[string]*zone{}}}
	rng := rand.New(rand.NewPCG(fc.Seed, 0))
	zones := make([]store.Zone, 0, fc.Zones)
	zs := make([]*zone, 0, fc.Zones) // in order: sums do not depend on map order
	for i := range fc.Zones {
		z := s.newZone(fmt.Sprintf("z%d", i))
		z.group = "fleet"
		s.pf.mu.Lock()
		delete(s.pf.zones, zkey(cfg.Group, z.name))
		s.pf.zones[zkey("fleet", z.name)] = z
		s.pf.mu.Unlock()
		z.fluid = &fluid{amp: rng.Float64() * float64(fc.PeakVUs), phase: rng.Float64() * 2 * math.Pi, period: fc.Period}
		z.scale(1, nil)
		zs = append(zs, z)
		zones = append(zones, store.Zone{Group: "fleet", Zone: z.name, Count: 1, MaxCount: fc.Max, Created: Epoch})
	}
	if _, err := st.Commit(zones, nil); err != nil {
		return nil, fmt.Errorf("sim: fleet: %w", err)
	}
	zones = nil
	s.c, err = controller.New(controller.Options{
		Store: st, Target: s.pf, Discovery: s.pf, Scraper: s.pf,
		Policy: controller.StepPolicy(cfg.Step), StartupGrace: cfg.Step.StartupGrace,
		Clock: &s.l, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	rep := &FleetReport{Zones: fc.Zones}
	wall := time.Now()
	iv := cfg.Profile.SchedulerInterval
	var ms runtime.MemStats
	for t := iv; t <= fc.Duration; t += iv {
		if ctx.Err() != nil {
			return rep, fmt.Errorf("sim: fleet stopped at %s: %w", t, context.Cause(ctx))
		}
		s.l.now.Store(int64(t))
		p0 := time.Now()
		pr := s.c.Pass(ctx)
		took := time.Since(p0)
		rep.Passes++
		rep.PassMeanMS += float64(took.Microseconds()) / 1000
		rep.PassMaxMS = math.Max(rep.PassMaxMS, float64(took.Microseconds())/1000)
		rep.Up, rep.Down, rep.Hold, rep.Errors = rep.Up+pr.Up, rep.Down+pr.Down, rep.Hold+pr.Hold, rep.Errors+pr.Errors
		for _, z := range zs {
			rep.ReplicaS += float64(len(z.workers)) * iv.Seconds()
		}
		if rep.Passes == 1 || rep.Passes%10 == 0 || t+iv > fc.Duration {
			runtime.ReadMemStats(&ms)
			heap := float64(ms.HeapInuse) / (1 << 20)
			if rep.Passes == 1 {
				rep.HeapFirstMiB = heap
			}
			rep.HeapMaxMiB, rep.HeapLastMiB = math.Max(rep.HeapMaxMiB, heap), heap
		}
	}
	for _, z := range zs {
		rep.CallsOK += z.fluid.ok
		rep.Refused += z.fluid.refused
	}
	rep.Wall = time.Since(wall)
	rep.VirtualS = s.l.since().Seconds()
	if rep.Passes > 0 {
		rep.PassMeanMS /= float64(rep.Passes)
	}
	return rep, nil
}

// fluid is a zone's load in a fleet run.
type fluid struct {
	amp, phase  float64
	period      time.Duration
	last        time.Duration
	ok, refused float64
}

func (f *fluid) vus(t time.Duration) float64 {
	return math.Round(f.amp * (1 + math.Sin(2*math.Pi*t.Seconds()/f.period.Seconds()+f.phase)) / 2)
}

// advance integrates the zone's load from the last advance to now: the
// VUs of the last advance spread over the routable workers up to their
// limits, each call holding a worker for the mean service time; the rest
// refused, each VU retrying after its pause. Call with z.mu held.
func (z *zone) advance(now time.Duration) {
	f := z.fluid
	dt := (now - f.last).Seconds()
	if dt <= 0 {
		return
	}
	n := f.vus(f.last)
	f.last = now
	var routable []*worker
	for _, w := range z.workers {
		w.inflight = 0
		if now >= w.routeAt {
			routable = append(routable, w)
		}
	}
	capacity := float64(len(routable) * z.m.Limit)
	in := math.Min(n, capacity)
	svc := z.m.Service.Mean().Seconds()
	for i, w := range routable {
		share := math.Floor(in / float64(len(routable)))
		if float64(i) < in-share*float64(len(routable)) {
			share++
		}
		w.inflight = int(share)
		w.acc += share * dt / svc
		w.calls = uint64(w.acc)
	}
	f.ok += in * dt / svc
	if over := n - in; over > 0 {
		f.refused += over * dt / (z.m.RTT.Seconds() + min(z.m.RetryAfter, z.m.RetryCap).Seconds() + 1e-3)
	}
}

func publishedProfile() scenarios.Profile { return scenarios.Published() }
