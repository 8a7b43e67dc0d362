package querier_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/scheduler"
	"github.com/scaleproof/scaleproof/scenarios/load"
)

// TestLoopbackLoad: the scheduler and two queriers (6 workers each) on
// loopback under the project's own load engine, 16 VUs for 3 s of
// `work {"ms": 20}` sent to the scheduler's /mcp as `scaleproof load` sends
// them: every call ok (no 429, no 5xx), both queriers served, the
// scheduler's per-querier calls add up to the engine's ok calls, the
// in-flight never above the VUs and back to 0 at the end, and the
// summary's quantiles within [0, VUs] with the 0.99 above the workers'
// 12 (16 VUs on 12 workers keep calls queued).
func TestLoopbackLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3 s load")
	}
	const vus = 16
	s, base := startScheduler(t, scheduler.Config{Window: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx) // samples the in-flight every 250 ms
	qs := []*running{startQuerier(t, base, "qa", 6, nil), startQuerier(t, base, "qb", 6, nil)}
	waitState(t, s, "both queriers connected", func(st scheduler.Stats) bool { return st.Queriers == 2 })

	// The largest in-flight seen, read at every change of the scheduler's state.
	var mu sync.Mutex
	peak := 0
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			ch := s.Changed()
			n := s.Stats().Inflight()
			mu.Lock()
			peak = max(peak, n)
			mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}()

	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: vus}}
	exec := load.MCPToolCall(hc, base+"/mcp", "work", map[string]any{"ms": 20}, nil)
	p := load.ConstantVUs(vus, 3*time.Second)
	p.MaxIterations = 20000
	m, err := load.Run(ctx, p, exec)
	if err != nil {
		t.Fatal(err)
	}
	totals := m.Totals()
	ok := totals[load.ClassOK]
	for c, n := range totals {
		if c != load.ClassOK && n > 0 {
			t.Errorf("%d calls of class %s, want none", n, c)
		}
	}
	if ok < 2*vus {
		t.Fatalf("%d ok calls in 3 s with %d VUs, want at least 2 a VU", ok, vus)
	}
	waitState(t, s, "nothing in flight after the load", func(st scheduler.Stats) bool { return st.Inflight() == 0 })
	cancel()
	<-watchDone

	st := s.Stats()
	if st.Refused != 0 || st.Failed != 0 || st.Requeued != 0 {
		t.Errorf("stats %+v: want no refusal, failure or re-queue", st)
	}
	if peak > vus || peak < 12 {
		t.Errorf("peak in-flight %d, want between the 12 workers and the %d VUs", peak, vus)
	}
	body := scrape(t, base)
	var served float64
	for _, id := range []string{"qa", "qb"} {
		n := metricValue(t, body, scheduler.MetricQuerierCallsTotal+`{querier="`+id+`"}`)
		if n == 0 {
			t.Errorf("querier %s served no call", id)
		}
		served += n
	}
	if int64(served) != ok {
		t.Errorf("the scheduler's per-querier calls add up to %v, the engine counted %d ok", served, ok)
	}
	if g := metricValue(t, body, scheduler.MetricInflight); g != 0 {
		t.Errorf("%s = %v after the load, want 0", scheduler.MetricInflight, g)
	}
	q99 := metricValue(t, body, scheduler.MetricInflightRequests+`{quantile="0.99"}`)
	q50 := metricValue(t, body, scheduler.MetricInflightRequests+`{quantile="0.5"}`)
	if q99 > vus || q99 < 12 || q50 < 0 || q50 > q99 {
		t.Errorf("in-flight summary: 0.5 = %v, 0.99 = %v; want 0 <= 0.5 <= 0.99, 0.99 in [12, %d]", q50, q99, vus)
	}
	t.Logf("%d ok calls (latency %+v), peak in-flight %d, summary 0.5=%v 0.99=%v; busy now %d and %d",
		ok, m.Latencies(), peak, q50, q99, qs[0].q.Busy(), qs[1].q.Busy())
}
