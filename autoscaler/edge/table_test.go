package edge

import (
	"slices"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

func TestPick(t *testing.T) {
	tests := []struct {
		name     string
		ready    []bool // per worker w0..wn
		inflight []int
		failed   []bool
		cursor   int
		not      int // index to exclude, -1 none
		want     int // chosen index, -1 none
	}{
		{name: "fewest in flight", ready: []bool{true, true, true}, inflight: []int{2, 0, 1}, not: -1, want: 1},
		{name: "tie goes to the cursor", ready: []bool{true, true, true}, inflight: []int{1, 1, 1}, cursor: 2, not: -1, want: 2},
		{name: "tie wraps from the cursor", ready: []bool{true, true, true}, inflight: []int{0, 1, 1}, cursor: 1, not: -1, want: 0},
		{name: "not ready is never chosen", ready: []bool{false, true}, inflight: []int{0, 5}, not: -1, want: 1},
		{name: "dial failed is skipped", ready: []bool{true, true}, inflight: []int{0, 3}, failed: []bool{true, false}, not: -1, want: 1},
		{name: "excluded is skipped", ready: []bool{true, true}, inflight: []int{0, 3}, not: 0, want: 1},
		{name: "nothing routable", ready: []bool{true}, failed: []bool{true}, inflight: []int{0}, not: -1, want: -1},
		{name: "no workers", not: -1, want: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			z := fleet.Zone{Group: "g", Zone: "z"}
			for i, r := range tc.ready {
				z.Endpoints = append(z.Endpoints, fleet.Endpoint{ID: string(rune('a' + i)), Addr: "127.0.0.1:1", Ready: r})
			}
			tb := newTable()
			tb.replace([]fleet.Zone{z}, false)
			k := zoneKey{"g", "z"}
			zs := tb.zones[k]
			// backends holds only ready endpoints; map the test's indices onto them.
			byIndex := map[int]*backend{}
			j := 0
			for i, r := range tc.ready {
				if r {
					byIndex[i] = zs.backends[j]
					j++
				}
			}
			for i, b := range byIndex {
				b.inflight = tc.inflight[i]
				if tc.failed != nil {
					b.dialFailed = tc.failed[i]
				}
			}
			zs.next = tc.cursor
			got := tb.pick(k, byIndex[tc.not])
			if tc.want < 0 {
				if got != nil {
					t.Fatalf("picked %s, want none", got.id)
				}
				return
			}
			if got != byIndex[tc.want] {
				t.Fatalf("picked %v, want %s", got, byIndex[tc.want].id)
			}
			if got.inflight != tc.inflight[tc.want]+1 {
				t.Errorf("in flight %d after pick, want %d", got.inflight, tc.inflight[tc.want]+1)
			}
		})
	}
}

func TestReplaceKeepsCounts(t *testing.T) {
	tb := newTable()
	a := fleet.Endpoint{ID: "a", Addr: "127.0.0.1:1", Ready: true}
	b := fleet.Endpoint{ID: "b", Addr: "127.0.0.1:2", Ready: true}
	tb.replace([]fleet.Zone{{Group: "g", Zone: "z", Endpoints: []fleet.Endpoint{a, b}}}, false)
	k := zoneKey{"g", "z"}
	first := tb.pick(k, nil)
	tb.markDialFailed(first)
	tb.replace([]fleet.Zone{{Group: "g", Zone: "z", Endpoints: []fleet.Endpoint{b, a}}}, false)
	if n, ok := tb.inflight(first.id, first.addr); !ok || n != 1 {
		t.Errorf("in flight of %s after refresh: %d %v, want 1 true", first.id, n, ok)
	}
	if first.dialFailed {
		t.Error("dial failure mark survived a refresh")
	}
	tb.release(first)
	tb.replace(nil, false)
	if _, ok := tb.inflight(first.id, first.addr); ok {
		t.Error("worker still listed after it left discovery")
	}
	if tb.pick(k, nil) != nil {
		t.Error("picked from a zone that left discovery")
	}
}

func TestZoneLoad(t *testing.T) {
	tb := newTable()
	k := zoneKey{"g", "z"}
	if n := tb.enter(k); n != 1 {
		t.Fatalf("enter: %d", n)
	}
	if n := tb.enter(k); n != 2 {
		t.Fatalf("enter: %d", n)
	}
	if inc, after := tb.leave(k); inc != 2 || after != 1 {
		t.Fatalf("leave: %d %d", inc, after)
	}
	if inc, after := tb.leave(k); inc != 1 || after != 0 {
		t.Fatalf("leave: %d %d", inc, after)
	}
	if len(tb.load) != 0 {
		t.Errorf("load map keeps idle zones: %v", tb.load)
	}
}

// TestReplaceRoutesOnlyReady: a new list makes only its ready endpoints
// routable; with unready (the edge-route-unready fault) every endpoint with
// an address is.
func TestReplaceRoutesOnlyReady(t *testing.T) {
	eps := []fleet.Endpoint{
		{ID: "ready", Addr: "127.0.0.1:1", Ready: true},
		{ID: "booting", Addr: "127.0.0.1:2"},
		{ID: "no-addr", Ready: true},
	}
	for _, tc := range []struct {
		unready bool
		want    []string
	}{
		{false, []string{"ready"}},
		{true, []string{"ready", "booting"}},
	} {
		tb := newTable()
		tb.replace([]fleet.Zone{{Group: "g", Zone: "z", Endpoints: eps}}, tc.unready)
		var got []string
		for _, b := range tb.zones[zoneKey{"g", "z"}].backends {
			got = append(got, b.id)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("unready %v: routable %v, want %v", tc.unready, got, tc.want)
		}
	}
}

// inflight returns the edge's in-flight count to the worker id@addr, and
// whether the current list holds it (for tests and logs).
func (t *table) inflight(id, addr string) (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.byKey[id+"@"+addr]
	if !ok {
		return 0, false
	}
	return b.inflight, true
}
