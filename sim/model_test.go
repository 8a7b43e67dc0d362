package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
)

func testZone(m Model) *zone {
	l := &loop{}
	return &zone{name: "z", m: m, l: l, byID: map[string]*worker{}, rng: rand.New(rand.NewPCG(1, 1))}
}

func baseModel() Model {
	return Model{Limit: 2, Service: Dist{Base: 200 * time.Millisecond}, ReadyDelay: Dist{Base: 5 * time.Second},
		RetryAfter: time.Second, RetryCap: time.Second}
}

// TestEdge: the edge routes to the routable worker with the fewest in
// flight, ties round-robin; a worker at its limit answers 429; no routable
// worker is a 503 (5xx).
func TestEdge(t *testing.T) {
	z := testZone(baseModel())
	if w, c := z.call(); w != nil || c != load.Class5xx {
		t.Fatalf("no worker: %v %s, want 5xx", w, c)
	}
	z.edgeIn = 0
	z.scale(2, nil)
	if w, c := z.call(); c != load.Class5xx {
		t.Fatalf("booting workers: %v %s, want 5xx", w, c)
	}
	z.edgeIn = 0
	z.l.now.Store(int64(5 * time.Second))
	var got []string
	for range 4 {
		w, c := z.call()
		if c != load.ClassOK {
			t.Fatalf("call %d: %s, want ok", len(got), c)
		}
		got = append(got, w.id)
	}
	// fewest in flight, ties round-robin: z-1, z-2, z-1, z-2
	if want := []string{"z-1", "z-2", "z-1", "z-2"}; !slices.Equal(got, want) {
		t.Fatalf("routed %v, want %v", got, want)
	}
	if w, c := z.call(); w != nil || c != load.Class429 {
		t.Fatalf("both at limit 2: %v %s, want 429", w, c)
	}
	z.leave(z.byID["z-2"])
	if w, c := z.call(); c != load.ClassOK || w.id != "z-2" {
		t.Fatalf("after z-2 finished one: %v %s, want ok on z-2", w, c)
	}
	if s, _ := z.sample("z-2"); s.CallsTotal != 1 || s.InFlight != 2 || !s.Ready {
		t.Fatalf("z-2 scrape %+v, want 1 call done, 2 in flight, ready", s)
	}
}

// TestNodes: with a node model a worker without a free slot is unlisted
// for the node delay, then listed not ready for the ready delay.
func TestNodes(t *testing.T) {
	m := baseModel()
	m.PodsPerNode, m.NodeDelay, m.NodeIdle = 1, 90*time.Second, 10*time.Minute
	z := testZone(m)
	z.scale(1, nil)
	for _, tc := range []struct {
		at            time.Duration
		listed, ready int
	}{{0, 0, 0}, {89 * time.Second, 0, 0}, {90 * time.Second, 1, 0}, {95 * time.Second, 1, 1}} {
		z.l.now.Store(int64(tc.at))
		eps := z.endpoints()
		if len(eps) != tc.listed || z.ready() != tc.ready {
			t.Errorf("at %s: %d listed, %d ready; want %d, %d", tc.at, len(eps), z.ready(), tc.listed, tc.ready)
		}
	}
	// Scale in frees the node's slot; a new worker within NodeIdle takes it.
	z.scale(0, nil)
	z.l.now.Store(int64(100 * time.Second))
	z.scale(1, nil)
	if eps := z.endpoints(); len(eps) != 1 {
		t.Fatalf("a free slot: %d listed at once, want 1", len(eps))
	}
}

// TestSignal: the summary's 0.75 quantile over its window, scraped, read
// with max_over_time; no observation reads NaN, no scrape no series.
func TestSignal(t *testing.T) {
	s := newSignal(time.Minute, 2*time.Minute)
	if v := s.query(0); v != nil {
		t.Fatalf("no scrape: %v, want no series", v)
	}
	s.scrape(0)
	if v := s.query(0); len(v) != 1 || !math.IsNaN(v[0]) {
		t.Fatalf("no observation: %v, want NaN", v)
	}
	for i := range 8 { // 1..8: p75 is 6
		s.observe(time.Second, i+1)
	}
	s.scrape(5 * time.Second)
	if v := s.query(5 * time.Second); v[0] != 6 {
		t.Fatalf("p75 of 1..8 = %v, want 6", v)
	}
	// After the summary's window the quantile is NaN again, but the query
	// still reads the 6 scraped within its 2 min window.
	s.scrape(90 * time.Second)
	if got := s.p75(90 * time.Second); !math.IsNaN(got) {
		t.Fatalf("p75 after the window: %v, want NaN", got)
	}
	if v := s.query(90 * time.Second); v[0] != 6 {
		t.Fatalf("max_over_time at 90 s: %v, want 6", v)
	}
	s.scrape(200 * time.Second)
	if v := s.query(200 * time.Second); !math.IsNaN(v[0]) {
		t.Fatalf("max_over_time at 200 s: %v, want NaN (the 6 is out of the window)", v)
	}
}

// ready counts the listed ready workers.
func (z *zone) ready() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	n, now := 0, z.now()
	for _, w := range z.workers {
		if now >= w.readyAt {
			n++
		}
	}
	return n
}
