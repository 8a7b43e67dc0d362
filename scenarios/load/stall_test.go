package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// stallServer answers at once except for stall out of every period (real
// time, from its start, stall beginning at half the period): a request
// that arrives then is held until the stall ends, as a frozen process
// releases its queue.
func stallServer(t *testing.T, period, stall time.Duration) *httptest.Server {
	t.Helper()
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		since := time.Since(start)
		phase := since % period
		if phase >= period/2 && phase < period/2+stall {
			hold := time.NewTimer(period/2 + stall - phase) // the stall itself, not a synchronisation
			defer hold.Stop()
			select {
			case <-hold.C:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestStallShowsInOpenModelOnly: a target that stalls 1 s every 10 s
// (time-scaled 10×: 100 ms every 1 s of real time), 30 s of load at about
// 40 calls/s either way. The open model (constant-arrival-rate 40/s)
// measures from each scheduled start, so the ~10 % of iterations due
// during a stall carry it and p99 shows it. The closed model (1 VU, 20 ms
// think time) has one call stuck per stall and goes on: its p99 stays
// calm, though its max shows the stall happened. Latencies are nominal
// (the engine's scaled clock).
func TestStallShowsInOpenModelOnly(t *testing.T) {
	const scale = 10
	srv := stallServer(t, 10*time.Second/scale, time.Second/scale)
	run := func(t *testing.T, open bool) *Metrics {
		clk := newScaledClock(scale)
		exec := HTTPCall(NewHTTPClient(64, 10*time.Second, nil), http.MethodGet, srv.URL, nil, nil)
		var m *Metrics
		var err error
		if open {
			p := ConstantArrivalRate(40, time.Second, 30*time.Second, 5, 200)
			p.GracefulStop = 5 * time.Second
			m, err = RunArrival(context.Background(), p, exec, WithClock(clk))
		} else {
			p := ConstantVUs(1, 30*time.Second)
			p.ThinkTime = 20 * time.Millisecond
			p.GracefulStop = 5 * time.Second
			p.MaxIterations = 5000
			m, err = Run(context.Background(), p, exec, WithClock(clk))
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Count(ClassOK) < 300 || m.Completed() != m.Count(ClassOK) {
			t.Fatalf("totals %v: want ≥ 300 calls, all ok", m.Totals())
		}
		return m
	}
	open, closed := run(t, true), run(t, false)
	ol, cl := open.Latencies(), closed.Latencies()
	t.Logf("open model   (constant-arrival-rate 40/s): %d calls, p50 %v p95 %v p99 %v max %v, dropped %d",
		ol.Count, ol.P50, ol.P95, ol.P99, ol.Max, open.DroppedIterations())
	t.Logf("closed-loop  (1 VU, 20 ms think time):     %d calls, p50 %v p95 %v p99 %v max %v",
		cl.Count, cl.P50, cl.P95, cl.P99, cl.Max)
	if ol.P99 < 500*time.Millisecond {
		t.Errorf("open model p99 %v: the 1 s stalls do not show", ol.P99)
	}
	if cl.Max < 500*time.Millisecond {
		t.Errorf("closed-loop max %v: the closed model never met a stall, the test proves nothing", cl.Max)
	}
	if cl.P99 >= ol.P99/2 {
		t.Errorf("closed-loop p99 %v not well below the open model's %v: the test no longer shows coordinated omission", cl.P99, ol.P99)
	}
	if open.DroppedIterations() != 0 {
		t.Errorf("dropped %d: maxVUs too low for the stall", open.DroppedIterations())
	}
}
