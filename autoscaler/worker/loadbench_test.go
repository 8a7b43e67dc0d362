package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/worker"
	"github.com/scaleproof/scaleproof/scenarios/load"
)

// BenchmarkLoadEngineAgainstWorker measures the load engine's calls/s
// against the reference worker (official MCP SDK, stateless JSON) on
// loopback with `work {"ms": 0}`: the harness's own ceiling on this machine.
// A figure, not an assertion: go test -run '^$' -bench LoadEngine ./autoscaler/worker/
func BenchmarkLoadEngineAgainstWorker(b *testing.B) {
	for _, vus := range []int{8, 32} {
		b.Run(map[int]string{8: "8VUs", 32: "32VUs"}[vus], func(b *testing.B) {
			w := worker.New(worker.Config{ID: "bench", MaxInflight: 1024})
			srv := httptest.NewServer(w.Handler())
			defer srv.Close()
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			exec := load.MCPToolCall(hc, srv.URL+"/mcp", "work", map[string]any{"ms": 0}, nil)
			p := load.ConstantVUs(vus, time.Hour)
			p.MaxIterations = int64(b.N)
			p.GracefulStop = 10 * time.Second
			b.ResetTimer()
			m, err := load.Run(context.Background(), p, exec)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if ok := m.Count(load.ClassOK); ok != m.Completed() {
				b.Fatalf("%d of %d calls ok: %v", ok, m.Completed(), m.Totals())
			}
			b.ReportMetric(float64(m.Completed())/m.Duration().Seconds(), "calls/s")
			b.ReportMetric(float64(m.Latencies().P95.Microseconds()), "p95-µs")
		})
	}
}
