package edge_test

import (
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/edge"
)

// TestCanaryTakesCallsLikeAnyWorker: the canary is routed like any ready
// worker (least loaded, round robin on ties), and the edge counts the calls
// each track answered, so a run can report the canary's share.
func TestCanaryTakesCallsLikeAnyWorker(t *testing.T) {
	arrivals := make(chan arrival, 64)
	s := newFakeWorker(t, "s1", false, arrivals)
	c := newFakeWorker(t, "canary", false, arrivals)
	cep := c.endpoint(true)
	cep.Canary = true
	h := newEdge(t, edge.Config{}, zone(s.endpoint(true), cep))

	const n = 10
	for range n {
		if r := h.post(t, path, call); r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	}
	got := map[string]int{}
	for range n {
		got[(<-arrivals).worker]++
	}
	// One call at a time: every tie goes round robin, so half each.
	if got["s1"] != n/2 || got["canary"] != n/2 {
		t.Fatalf("calls per worker %v, want %d each", got, n/2)
	}
	mf := h.metrics(t)
	for track, want := range map[string]float64{edge.TrackStable: n / 2, edge.TrackCanary: n / 2} {
		m := series(mf, edge.MetricWorkerAnswersTotal, map[string]string{
			edge.LabelGroup: "g1", edge.LabelZone: "a", edge.LabelTrack: track, edge.LabelCode: "200"})
		if m == nil || m.GetCounter().GetValue() != want {
			t.Fatalf("%s{track=%q,code=200} = %v, want %v", edge.MetricWorkerAnswersTotal, track, m, want)
		}
	}
}
