package scenarios

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// fakeClock advances only on Sleep: a scenario on it runs at CPU speed and
// its every reading is at a time the test knows.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
	return nil
}

// fakeLoad is a load on the fake clock: its VUs are the profile's target
// at the clock's time, each VU one call in flight.
type fakeLoad struct {
	clock   *fakeClock
	lp      load.Profile
	start   time.Time
	mu      sync.Mutex
	stopped time.Time
}

func (l *fakeLoad) vusAt(t time.Time) int {
	l.mu.Lock()
	stopped := l.stopped
	l.mu.Unlock()
	if !stopped.IsZero() && !t.Before(stopped) {
		return 0
	}
	return l.lp.VUsAt(t.Sub(l.start))
}

func (l *fakeLoad) InFlight() int64 { return int64(l.vusAt(l.clock.Now())) }
func (l *fakeLoad) VUs() int        { return l.vusAt(l.clock.Now()) }
func (l *fakeLoad) Done() bool {
	return l.VUs() == 0 && !l.clock.Now().Before(l.start.Add(l.lp.TotalDuration()))
}
func (l *fakeLoad) Stop() {
	l.mu.Lock()
	if l.stopped.IsZero() {
		l.stopped = l.clock.Now()
	}
	l.mu.Unlock()
}
func (l *fakeLoad) Wait()                                      {}
func (l *fakeLoad) Start() time.Time                           { return l.start }
func (l *fakeLoad) Calls() reports.Calls                       { return reports.Calls{OK: 1} }
func (l *fakeLoad) Seconds(string, time.Time) []reports.Second { return nil }
func (l *fakeLoad) P95ms() float64                             { return 0 }
func (l *fakeLoad) Err() error                                 { return nil }

// The ways a fakeHPA can be broken, one per fact it should make fail.
const (
	brokenNone          = ""
	brokenFrozen        = "never scales up"
	brokenOvershoot     = "goes one over max"
	brokenNoTrail       = "keeps no trail"
	brokenIgnoreMax     = "ignores a lowered max"
	brokenAdminRefused  = "refuses the admin"
	brokenViewerAllowed = "lets a viewer change the max"
	brokenCountKept     = "keeps a count set by hand"
	brokenNoActor       = "names no actor"
	brokenNoStabilize   = "scales down inside the stabilization window"
	brokenStuck         = "never scales down"
	brokenOutageScaleIn = "scales in while a worker is frozen"
)

// fakeConsoleKeep is how long the console-like fake keeps a count set by
// hand before it scales from it again (the console's down cooldown; longer
// than the quick profile's CountHold, which viewer-refused watches).
const fakeConsoleKeep = 30 * time.Second

// fakeHPA is a tiny HorizontalPodAutoscaler on the fake clock: every sync
// period it recommends ceil(VUs ÷ perReplica) clamped to [min, max] (the
// load's VUs standing in for its metric), scales up to it at once, and
// scales down only to the highest recommendation of the stabilization
// window; a count set by hand is put back at the next sync. With console
// set it behaves as the reference console does where the contracts
// differ: a lowered max applies in the request and a count set by hand is
// kept (no autoscaling for fakeConsoleKeep).
type fakeHPA struct {
	mu         sync.Mutex
	clock      *fakeClock
	console    bool
	broken     string
	sync       time.Duration
	window     time.Duration
	perReplica float64
	min, max   int
	count      int
	desired    int
	manual     bool
	manualAt   time.Time // when the count was set by hand
	lastSync   time.Time
	recs       []fakeRec
	trail      []target.Change
	load       *fakeLoad
	frozen     bool // a worker is frozen (fakeFaults): the correct fake holds its count
}

type fakeRec struct {
	at time.Time
	n  int
}

func newFakeHPA(c *fakeClock, broken string, console bool) *fakeHPA {
	return &fakeHPA{clock: c, broken: broken, console: console, sync: 15 * time.Second, window: 60 * time.Second,
		perReplica: 20, min: 1, max: 4, count: 1, desired: 1, lastSync: c.Now()}
}

func (h *fakeHPA) Kind() target.Kind { return target.HPA }
func (h *fakeHPA) Name() string      { return "hpa fake/worker" }

// hpaContracts are the contracts an HPA declares (as the fake honours them).
func hpaContracts(sync, window time.Duration) target.Contracts {
	c := target.Contracts{}
	yes := func(f target.Fact, text string, b time.Duration) {
		c[f] = target.Contract{Applies: true, Text: text, Bound: b, Source: "fake"}
	}
	yes(target.FactScalesUp, "scales up within two sync periods", 2*sync)
	yes(target.FactWithinBounds, "minReplicas <= replicas <= maxReplicas", 0)
	yes(target.FactLoweredMax, "a lowered maxReplicas applies within one sync period", sync)
	yes(target.FactViewerRefused, "RBAC: a viewer may not patch", 0)
	yes(target.FactAdminAllowed, "RBAC: an admin may patch", 0)
	yes(target.FactCountSet, "the HPA puts a count set by hand back within one sync period", sync)
	yes(target.FactTrail, "a SuccessfulRescale Event per rescale", sync)
	yes(target.FactTrailActor, "every entry names its source", 0)
	yes(target.FactNoEarlyScaleDown, "no scale-down inside the stabilization window", window)
	yes(target.FactBackToMin, "back to minReplicas within the window and a sync period", window+sync)
	c[target.FactOutageHolds] = target.Contract{NotApplicable: "the HPA does not look at whether pods answer"}
	return c
}

// consoleContracts differ where the console's rules do: a lowered max
// applies in the request, a count set by hand is kept.
func consoleContracts(sync, window time.Duration) target.Contracts {
	c := hpaContracts(sync, window)
	c[target.FactLoweredMax] = target.Contract{Applies: true, Text: "a lowered max applies in the request"}
	c[target.FactCountSet] = target.Contract{Applies: true, Text: "a count set by hand is kept"}
	return c
}

func (h *fakeHPA) Contracts() target.Contracts {
	if h.console {
		return consoleContracts(h.sync, h.window)
	}
	return hpaContracts(h.sync, h.window)
}

func (h *fakeHPA) change(at time.Time, to int, reason, actor string) {
	if to == h.count {
		return
	}
	if h.broken != brokenNoTrail || actor != "horizontal-pod-autoscaler" {
		if h.broken == brokenNoActor && actor == "horizontal-pod-autoscaler" {
			actor = ""
		}
		h.trail = append(h.trail, target.Change{At: at, From: h.count, To: to, Reason: reason, Actor: actor, Source: "event"})
	}
	h.count = to
}

// advance runs every sync due by now.
func (h *fakeHPA) advance() {
	now := h.clock.Now()
	for i := 0; i < 10_000 && !h.lastSync.Add(h.sync).After(now); i++ {
		h.lastSync = h.lastSync.Add(h.sync)
		h.syncAt(h.lastSync)
	}
}

func (h *fakeHPA) syncAt(t time.Time) {
	if h.manual && (h.console && t.Before(h.manualAt.Add(fakeConsoleKeep)) || h.broken == brokenCountKept) {
		return
	}
	h.manual = false
	vus := 0
	if h.load != nil {
		vus = h.load.vusAt(t)
	}
	top := h.max
	if h.broken == brokenOvershoot {
		top = h.max + 1
	}
	n := int(math.Ceil(float64(vus) / h.perReplica))
	if h.broken == brokenOvershoot && vus > 0 {
		n++
	}
	raw := max(h.min, min(n, top))
	if h.broken == brokenFrozen {
		raw = min(raw, h.count)
	}
	h.recs = append(h.recs, fakeRec{t, raw})
	for len(h.recs) > 0 && h.recs[0].at.Before(t.Add(-h.window)) {
		h.recs = h.recs[1:]
	}
	desired := raw
	if raw < h.count && h.broken != brokenNoStabilize {
		stab := raw
		for _, r := range h.recs {
			stab = max(stab, r.n)
		}
		desired = min(h.count, stab)
	}
	if (h.broken == brokenStuck || h.frozen && h.broken != brokenOutageScaleIn) && desired < h.count {
		desired = h.count
	}
	if h.count > h.max && h.broken != brokenIgnoreMax { // a lowered max
		desired = min(desired, h.max)
	} else if h.broken == brokenIgnoreMax && h.count > h.max {
		desired = max(desired, h.count)
	}
	h.desired = desired
	h.change(t, desired, fmt.Sprintf("recommended %d", raw), "horizontal-pod-autoscaler")
}

func (h *fakeHPA) State(context.Context) (target.State, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.advance()
	return target.State{At: h.clock.Now(), Count: h.count, Ready: h.count, Desired: h.desired, Min: h.min, Max: h.max,
		Metric: float64(h.vus()), HasMetric: true}, nil
}

func (h *fakeHPA) vus() int {
	if h.load == nil {
		return 0
	}
	return h.load.vusAt(h.clock.Now())
}

func (h *fakeHPA) refused(role target.Role) (target.Outcome, bool) {
	switch {
	case role == target.Viewer && h.broken != brokenViewerAllowed:
		return target.Outcome{Status: http.StatusForbidden, Message: "forbidden"}, true
	case role == target.Admin && h.broken == brokenAdminRefused:
		return target.Outcome{Status: http.StatusForbidden, Message: "forbidden"}, true
	}
	return target.Outcome{}, false
}

func (h *fakeHPA) SetBounds(_ context.Context, role target.Role, lo, hi int) (target.Outcome, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.advance()
	if o, no := h.refused(role); no {
		return o, nil
	}
	h.min, h.max = lo, hi
	if h.console && h.count > hi {
		h.change(h.clock.Now(), hi, "max lowered", string(role))
	}
	return target.Outcome{Status: http.StatusOK}, nil
}

func (h *fakeHPA) SetCount(_ context.Context, role target.Role, n int) (target.Outcome, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.advance()
	if o, no := h.refused(role); no {
		return o, nil
	}
	h.change(h.clock.Now(), n, "set by hand", string(role))
	h.manual, h.manualAt = true, h.clock.Now()
	return target.Outcome{Status: http.StatusOK}, nil
}

func (h *fakeHPA) Trail(_ context.Context, since time.Time) ([]target.Change, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.advance()
	var out []target.Change
	for _, c := range h.trail {
		if !c.At.Before(since) {
			out = append(out, c)
		}
	}
	return out, nil
}

// fakeEnv is a target env on a fake clock, its loads feeding the fake's
// signal.
func fakeEnv(h *fakeHPA) *Env {
	p := TargetQuick()
	p.VUs, p.SpikeVUScale = 64, 1 // the fake's threshold is tuned to the published concurrency
	e := NewTargetEnv(h, nil, p, nil, slog.New(slog.DiscardHandler))
	e.Clock = h.clock
	e.StartLoad = func(_ context.Context, lp load.Profile) TargetLoad {
		l := &fakeLoad{clock: h.clock, lp: lp, start: h.clock.Now()}
		h.mu.Lock()
		h.load = l
		h.mu.Unlock()
		return l
	}
	return e
}

// fakeFaults are fault actions on the fake's replicas: Workers lists one a
// count, Freeze and Thaw set the fake's frozen flag (a correct fake then
// holds its count); the rest are not offered.
type fakeFaults struct{ h *fakeHPA }

func (f fakeFaults) Workers(context.Context, string, string) ([]platform.Worker, error) {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	f.h.advance()
	ws := make([]platform.Worker, f.h.count)
	for i := range ws {
		ws[i] = platform.Worker{ID: fmt.Sprintf("w%d", i+1), Ready: true}
	}
	return ws, nil
}

// Freeze takes a millisecond of the fake clock, as a signal sent does, so
// the readings before it are not at the freeze's instant.
func (f fakeFaults) Freeze(ctx context.Context, _, _, _ string) error {
	if err := f.h.clock.Sleep(ctx, time.Millisecond); err != nil {
		return err
	}
	return f.set(true)
}
func (f fakeFaults) Thaw(context.Context, string, string, string) error { return f.set(false) }

func (f fakeFaults) set(frozen bool) error {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	f.h.advance()
	f.h.frozen = frozen
	return nil
}

var errFakeNotOffered = errors.New("not offered by the fake")

func (fakeFaults) Kill(context.Context, string, string, string) error { return errFakeNotOffered }
func (fakeFaults) Restart(context.Context, platform.Part) error       { return errFakeNotOffered }
func (fakeFaults) FailReadiness(context.Context, string, string, string) (platform.Readiness, error) {
	return platform.Readiness{}, errFakeNotOffered
}
func (fakeFaults) PassReadiness(context.Context, string, string, string) error {
	return errFakeNotOffered
}
