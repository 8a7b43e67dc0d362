package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/scenarios/load"
)

// Dist is a duration distribution: Base plus an exponential of mean Jitter
// (Jitter 0: always Base). Both >= 0.
type Dist struct {
	Base   time.Duration `json:"base"`
	Jitter time.Duration `json:"jitter"`
}

// Mean is Base + Jitter.
func (d Dist) Mean() time.Duration { return d.Base + d.Jitter }

func (d Dist) draw(r *rand.Rand) time.Duration {
	if d.Jitter <= 0 {
		return d.Base
	}
	return d.Base + time.Duration(r.ExpFloat64()*float64(d.Jitter))
}

func (d Dist) String() string {
	if d.Jitter <= 0 {
		return d.Base.String()
	}
	return d.Base.String() + "+exp(" + d.Jitter.String() + ")"
}

// Model is the simulated platform: workers, edge, nodes and the network.
type Model struct {
	// Limit is each worker's in-flight limit (RAMEN_MAX_INFLIGHT): a call
	// beyond it is answered 429 with Retry-After RetryAfter.
	Limit int `json:"limit"`
	// Service is how long one admitted call holds a worker.
	Service Dist `json:"service"`
	// RTT is the network round trip between the edge and a worker, added to
	// every call's latency (429s and 503s included). The sim counts it in
	// the admitted call's hold of its worker (1 ms locally, so it hardly
	// matters).
	RTT time.Duration `json:"rtt"`
	// ClientRTT is the time a call spends between the load generator and
	// the edge, there and back: network round trips, TLS and session
	// set-up when the load runs far from the cluster. Half of each draw
	// passes before the call reaches the edge, half after its answer leaves
	// it; it delays every call (ok, 429 and 503 alike) and holds no worker.
	// With it, N closed-loop VUs keep only about N × service ÷ (service +
	// ClientRTT) calls at the workers. 0 locally (the load runs beside the
	// edge).
	ClientRTT Dist `json:"client_rtt"`
	// Canary is how many pods serve beside the count, as a canary
	// deployment does: created with the zone's first worker (on nodes of
	// their own like any worker), listed, ready and scraped like the
	// workers, so the policy counts them as capacity, routed by the edge,
	// never scaled and never a victim. Ramen 0.7.5's notes: "A zone at
	// count 1 runs two pods (stable and canary)". 0 locally.
	Canary int `json:"canary"`
	// ReadyDelay runs from the moment a worker is listed (at once, or once
	// its node is up) until discovery lists it ready: process or pod start,
	// boot delay, readiness probe.
	ReadyDelay Dist `json:"ready_delay"`
	// EdgeLag: the edge routes to a worker that turned ready after a draw
	// uniform in [0, EdgeLag) (its discovery refresh, 500 ms locally).
	EdgeLag time.Duration `json:"edge_lag"`
	// PodsPerNode is how many workers a node takes; 0: no node model, every
	// worker is listed at once. With nodes, a new worker takes a free slot
	// or waits NodeDelay for a new node (the cluster autoscaler), unlisted
	// meanwhile (a Pending pod), and a slot left free for NodeIdle goes
	// away with its node.
	PodsPerNode int           `json:"pods_per_node"`
	NodeDelay   time.Duration `json:"node_delay"`
	NodeIdle    time.Duration `json:"node_idle"`
	// RetryAfter is the Retry-After of a worker's 429 and the edge's 503
	// (1 s); RetryCap is the load's cap on it (1 s, the load engine's
	// default).
	RetryAfter time.Duration `json:"retry_after"`
	RetryCap   time.Duration `json:"retry_cap"`
	// PassJitter delays each scheduler pass's clock reading by a draw
	// uniform in [0, PassJitter): on a platform a round reads the time after
	// discovery and scrapes, which take a little and vary. It matters when
	// a cooldown is a whole number of intervals: 120 s after a change the
	// round may read 119.99 s and hold one more interval.
	PassJitter time.Duration `json:"pass_jitter"`
}

// Validate reports every value out of range, joined.
func (m Model) Validate() error {
	var errs []error
	bad := func(f string, v any, want string) {
		errs = append(errs, fmt.Errorf("sim: model %s = %v, want %s", f, v, want))
	}
	if m.Limit < 1 {
		bad("limit", m.Limit, ">= 1")
	}
	for _, d := range []struct {
		n string
		v Dist
	}{{"service", m.Service}, {"ready_delay", m.ReadyDelay}} {
		if d.v.Base < 0 || d.v.Jitter < 0 {
			bad(d.n, d.v, "base and jitter >= 0")
		}
	}
	if m.Service.Mean() <= 0 {
		bad("service", m.Service, "a mean > 0")
	}
	for _, d := range []struct {
		n string
		v time.Duration
	}{{"rtt", m.RTT}, {"edge_lag", m.EdgeLag}, {"node_delay", m.NodeDelay}, {"node_idle", m.NodeIdle},
		{"retry_after", m.RetryAfter}, {"retry_cap", m.RetryCap}, {"pass_jitter", m.PassJitter}} {
		if d.v < 0 {
			bad(d.n, d.v, ">= 0")
		}
	}
	if m.PodsPerNode < 0 {
		bad("pods_per_node", m.PodsPerNode, ">= 0")
	}
	if m.ClientRTT.Base < 0 || m.ClientRTT.Jitter < 0 {
		bad("client_rtt", m.ClientRTT, "base and jitter >= 0")
	}
	if m.Canary < 0 {
		bad("canary", m.Canary, ">= 0")
	}
	return errors.Join(errs...)
}

// Settings renders the model as flat strings for a results file.
func (m Model) Settings() map[string]string {
	return map[string]string{
		"model_limit": strconv.Itoa(m.Limit), "model_service": m.Service.String(), "model_rtt": m.RTT.String(),
		"model_ready_delay": m.ReadyDelay.String(), "model_edge_lag": m.EdgeLag.String(),
		"model_pods_per_node": strconv.Itoa(m.PodsPerNode), "model_node_delay": m.NodeDelay.String(),
		"model_node_idle": m.NodeIdle.String(), "model_pass_jitter": m.PassJitter.String(),
		"model_client_rtt": m.ClientRTT.String(), "model_canary": strconv.Itoa(m.Canary),
		"model_retry_after": m.RetryAfter.String(), "model_retry_cap": m.RetryCap.String(),
	}
}

// worker is one simulated worker.
type worker struct {
	id       string
	created  time.Time     // the scale decision (pod creation)
	listedAt time.Duration // on a node: listed by discovery
	readyAt  time.Duration // ready in discovery
	routeAt  time.Duration // the edge routes to it
	canary   bool          // serves beside the count (Model.Canary)
	inflight int
	calls    uint64  // admitted calls finished (the worker's calls_total)
	acc      float64 // a fleet run's fluid calls (fleet.go)
}

// zone is one simulated zone: its workers, nodes and edge state. mu guards
// everything but the fields only the loop touches (noted).
type zone struct {
	mu      sync.Mutex
	group   string
	name    string
	m       Model
	l       *loop
	rng     *rand.Rand
	seq     int
	workers []*worker          // the scale target's replicas, oldest first, after the canaries
	canary  int                // canaries at the front of workers
	byID    map[string]*worker // listed or gone but still finishing calls
	free    []time.Duration    // free node slots, by when they were freed
	rr      int                // the edge's round-robin cursor (loop only)
	edgeIn  int                // calls inside the edge (loop only)
	signal  *signal            // the hpa signal, nil when not recorded (loop only)
	fluid   *fluid             // a fleet run's load (fleet.go), nil otherwise
}

func (z *zone) now() time.Duration { return z.l.since() }

// scale sets the zone's replicas, removing victims first, then the newest.
// The zone's first scale also creates its canaries (Model.Canary), which
// no scale counts or removes.
func (z *zone) scale(replicas int, victims []string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	now := z.now()
	if z.seq == 0 && z.m.Canary > 0 && replicas > 0 {
		for range z.m.Canary {
			z.add(now, true)
		}
	}
	remove := func(i int) {
		w := z.workers[i]
		z.workers = slices.Delete(z.workers, i, i+1)
		if w.inflight == 0 || z.fluid != nil { // a fluid's calls do not finish one by one
			delete(z.byID, w.id)
		}
		if z.m.PodsPerNode > 0 && now >= w.listedAt {
			z.free = append(z.free, now)
		}
	}
	for _, v := range victims {
		if len(z.workers)-z.canary <= replicas {
			break
		}
		if i := slices.IndexFunc(z.workers, func(w *worker) bool { return w.id == v && !w.canary }); i >= 0 {
			remove(i)
		}
	}
	for len(z.workers)-z.canary > replicas {
		remove(len(z.workers) - 1)
	}
	for len(z.workers)-z.canary < replicas {
		z.add(now, false)
	}
}

// add creates one worker (a canary when canary) on a free node slot or a
// new node. Call with mu held.
func (z *zone) add(now time.Duration, canary bool) {
	z.seq++
	w := &worker{id: fmt.Sprintf("%s-%d", z.name, z.seq), created: z.l.Now(), listedAt: now, canary: canary}
	if canary {
		z.canary++
	}
	if z.m.PodsPerNode > 0 && !z.takeSlot(now) {
		// A new node: PodsPerNode-1 more slots once it is up.
		w.listedAt = now + z.m.NodeDelay
		for range z.m.PodsPerNode - 1 {
			z.free = append(z.free, w.listedAt)
		}
	}
	w.readyAt = w.listedAt + z.m.ReadyDelay.draw(z.rng)
	w.routeAt = w.readyAt
	if z.m.EdgeLag > 0 {
		w.routeAt += time.Duration(z.rng.Int64N(int64(z.m.EdgeLag)))
	}
	z.workers = append(z.workers, w)
	z.byID[w.id] = w
}

// takeSlot takes a free node slot that has not timed out.
func (z *zone) takeSlot(now time.Duration) bool {
	z.free = slices.DeleteFunc(z.free, func(at time.Duration) bool { return z.m.NodeIdle > 0 && now-at >= z.m.NodeIdle })
	if len(z.free) == 0 {
		return false
	}
	z.free = z.free[1:]
	return true
}

// endpoints is discovery's list: listed workers with their readiness.
func (z *zone) endpoints() []fleet.Endpoint {
	z.mu.Lock()
	defer z.mu.Unlock()
	now := z.now()
	if z.fluid != nil {
		z.advance(now)
	}
	out := make([]fleet.Endpoint, 0, len(z.workers))
	for _, w := range z.workers {
		if now >= w.listedAt {
			out = append(out, fleet.Endpoint{ID: w.id, Addr: w.id, Ready: now >= w.readyAt, Created: w.created})
		}
	}
	return out
}

// routable reports whether the edge routes to some worker now.
func (z *zone) routable() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	now := z.now()
	return slices.ContainsFunc(z.workers, func(w *worker) bool { return now >= w.routeAt })
}

// served reports whether n workers are listed and every listed one is
// routed by the edge.
func (z *zone) served(n int) bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	now := z.now()
	return len(z.workers) >= n && !slices.ContainsFunc(z.workers, func(w *worker) bool { return now < w.routeAt })
}

// route picks the routable worker with the fewest calls in flight, ties
// round-robin; nil when none is routable.
func (z *zone) route() *worker {
	z.mu.Lock()
	defer z.mu.Unlock()
	now := z.now()
	n := len(z.workers)
	best := -1
	for k := range n {
		i := (z.rr + k) % n
		w := z.workers[i]
		if now >= w.routeAt && (best < 0 || w.inflight < z.workers[best].inflight) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	z.rr = best + 1
	return z.workers[best]
}

// finish ends an admitted call on w.
func (z *zone) finish(w *worker) {
	z.mu.Lock()
	defer z.mu.Unlock()
	w.inflight--
	w.calls++
	if w.inflight == 0 && !slices.Contains(z.workers, w) {
		delete(z.byID, w.id)
	}
}

// sample is a worker's scrape.
func (z *zone) sample(id string) (autoscaler.WorkerSample, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	w := z.byID[id]
	if w == nil {
		return autoscaler.WorkerSample{}, false
	}
	return autoscaler.WorkerSample{ID: id, Created: w.created, Reachable: true, Ready: z.now() >= w.readyAt,
		InFlight: w.inflight, Limit: z.m.Limit, CallsTotal: w.calls}, true
}

// platform is the simulated platform as the controller sees it: the scale
// target, discovery and scraper of every zone.
type platform struct {
	mu     sync.RWMutex
	zones  map[string]*zone // group + "/" + zone
	byName map[string]*zone // zone names are unique in a simulated run
}

var (
	_ controller.ScaleTarget = (*platform)(nil)
	_ controller.Discovery   = (*platform)(nil)
	_ controller.Scraper     = (*platform)(nil)
)

func zkey(group, zone string) string { return group + "/" + zone }

func (p *platform) zone(group, name string) *zone {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.zones[zkey(group, name)]
}

func (p *platform) add(z *zone) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.zones[zkey(z.group, z.name)] = z
	p.byName[z.name] = z
}

// Scale implements controller.ScaleTarget.
func (p *platform) Scale(_ context.Context, group, name string, replicas int, victims []string) error {
	z := p.zone(group, name)
	if z == nil {
		return fmt.Errorf("sim: no zone %s/%s", group, name)
	}
	z.scale(replicas, victims)
	return nil
}

// Endpoints implements controller.Discovery.
func (p *platform) Endpoints(_ context.Context, group, name string) ([]fleet.Endpoint, error) {
	z := p.zone(group, name)
	if z == nil {
		return nil, nil
	}
	return z.endpoints(), nil
}

// Scrape implements controller.Scraper. Endpoint IDs are "<zone>-<n>".
func (p *platform) Scrape(_ context.Context, ep fleet.Endpoint) (autoscaler.WorkerSample, error) {
	p.mu.RLock()
	z := p.owner(ep.ID)
	p.mu.RUnlock()
	if z != nil {
		if s, ok := z.sample(ep.ID); ok {
			return s, nil
		}
	}
	return autoscaler.WorkerSample{ID: ep.ID}, fmt.Errorf("sim: scrape %s: no such worker", ep.ID)
}

// owner finds the zone of a worker ID ("<zone>-<n>"). Call with p.mu held.
func (p *platform) owner(id string) *zone {
	for i := len(id) - 1; i > 0; i-- {
		if id[i] == '-' {
			return p.byName[id[:i]]
		}
	}
	return nil
}

// call is one call arriving at the edge: routed to the routable worker with
// the fewest in flight and admitted, refused with 429 at its limit, or 503
// when none is routable. It returns the admitting worker (nil otherwise) and
// the call's class. Loop only.
func (z *zone) call() (*worker, load.Class) {
	w := z.route()
	z.edgeIn++
	if z.signal != nil {
		z.signal.observe(z.now(), z.edgeIn)
	}
	switch {
	case w == nil:
		return nil, load.Class5xx
	case !z.admit(w):
		return nil, load.Class429
	}
	return w, load.ClassOK
}

func (z *zone) admit(w *worker) bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	if w.inflight >= z.m.Limit {
		return false
	}
	w.inflight++
	return true
}

// leave ends a call at the edge (w: the worker that admitted it, or nil).
func (z *zone) leave(w *worker) {
	if z.signal != nil {
		z.signal.observe(z.now(), z.edgeIn)
	}
	z.edgeIn--
	if w != nil {
		z.finish(w)
	}
}
