package edge

import (
	"sync"

	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

// zoneKey names one group × zone.
type zoneKey struct{ group, zone string }

// backend is one ready worker as the edge sees it. Its fields are guarded by
// table.mu; a backend survives a refresh that still lists it (same ID and
// address), so its in-flight count carries over.
type backend struct {
	id, addr   string
	group      string // its zone, for the metrics; fixed at creation
	zone       string
	canary     bool // the zone's canary (fleet.Endpoint.Canary): routed like any worker
	inflight   int  // calls the edge has in flight to this worker
	dialFailed bool // a dial failed since the last refresh: skip it
}

// track is b's track label value (MetricWorkerAnswersTotal): TrackCanary
// for the zone's canary, TrackStable otherwise.
func (t *table) track(b *backend) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b.canary {
		return TrackCanary
	}
	return TrackStable
}

// zoneState is one zone's ready workers in discovery order and the
// round-robin cursor that breaks ties between equally loaded workers.
type zoneState struct {
	backends []*backend
	next     int
}

// table is the edge's routing state: the last good discovery list, the edge's
// own in-flight count per worker, and its in-flight count per zone.
type table struct {
	mu    sync.Mutex
	zones map[zoneKey]*zoneState
	byKey map[string]*backend
	load  map[zoneKey]int // requests inside the edge per zone (queued + running)
}

func newTable() *table {
	return &table{zones: map[zoneKey]*zoneState{}, byKey: map[string]*backend{}, load: map[zoneKey]int{}}
}

// replace installs a new discovery list: only endpoints with Ready are
// routable, a canary like any other (with unready, the edge-route-unready
// fault, every listed endpoint is). Workers still listed keep their
// in-flight count; every dial failure mark is cleared.
func (t *table) replace(zones []fleet.Zone, unready bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	byKey := make(map[string]*backend, len(t.byKey))
	next := make(map[zoneKey]*zoneState, len(zones))
	for _, z := range zones {
		k := zoneKey{z.Group, z.Zone}
		zs := next[k]
		if zs == nil {
			zs = &zoneState{}
			if old := t.zones[k]; old != nil {
				zs.next = old.next
			}
			next[k] = zs
		}
		for _, ep := range z.Endpoints {
			if (!ep.Ready && !unready) || ep.Addr == "" {
				continue
			}
			key := ep.ID + "@" + ep.Addr
			b := byKey[key]
			if b == nil {
				b = t.byKey[key]
			}
			if b == nil {
				b = &backend{id: ep.ID, addr: ep.Addr, group: z.Group, zone: z.Zone}
			}
			b.dialFailed = false
			b.canary = ep.Canary
			byKey[key] = b
			zs.backends = append(zs.backends, b)
		}
	}
	t.zones, t.byKey = next, byKey
}

// clearDialFailures makes every worker routable again (a refresh happened,
// even a failed one).
func (t *table) clearDialFailures() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range t.byKey {
		b.dialFailed = false
	}
}

// pick chooses the worker of zone k with the fewest edge in-flight calls,
// skipping workers marked dial-failed and not; ties go to the first from the
// zone's round-robin cursor, which then moves past the chosen worker. The
// chosen worker's in-flight count is incremented; the caller must release
// it. Nil when the zone has no routable worker.
func (t *table) pick(k zoneKey, not *backend) *backend {
	t.mu.Lock()
	defer t.mu.Unlock()
	zs := t.zones[k]
	if zs == nil || len(zs.backends) == 0 {
		return nil
	}
	n := len(zs.backends)
	best := -1
	for i := range n {
		j := (zs.next + i) % n
		b := zs.backends[j]
		if b.dialFailed || b == not {
			continue
		}
		if best < 0 || b.inflight < zs.backends[best].inflight {
			best = j
		}
	}
	if best < 0 {
		return nil
	}
	zs.next = (best + 1) % n
	b := zs.backends[best]
	b.inflight++
	return b
}

// release ends one in-flight call to b.
func (t *table) release(b *backend) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b.inflight--
}

// markDialFailed skips b until the next refresh.
func (t *table) markDialFailed(b *backend) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b.dialFailed = true
}

// enter counts a request into zone k and returns the zone's in-flight count
// including it.
func (t *table) enter(k zoneKey) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.load[k]++
	return t.load[k]
}

// leave counts a request out of zone k. It returns the zone's in-flight
// count including the leaving request (what the summary observes at a
// request's end) and the count after it left (the gauge).
func (t *table) leave(k zoneKey) (including, after int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	including = t.load[k]
	after = including - 1
	if after <= 0 {
		delete(t.load, k)
		after = 0
	} else {
		t.load[k] = after
	}
	return including, after
}
