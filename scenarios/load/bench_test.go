package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkEngineMCP measures closed-loop tools/call throughput against an
// in-process server that answers at once: one op is one call.
func BenchmarkEngineMCP(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID int64 `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"ok"}]}}`, req.ID)
	}))
	defer srv.Close()
	srv.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = 256
	for _, vus := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("vus=%d", vus), func(b *testing.B) {
			p := ConstantVUs(vus, time.Hour)
			p.MaxIterations = int64(b.N)
			exec := MCPToolCall(srv.Client(), srv.URL, "echo", map[string]any{"text": "hi"}, nil)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			m, err := Run(context.Background(), p, exec)
			elapsed := time.Since(start)
			b.StopTimer()
			if err != nil || m.Count(ClassOK) != int64(b.N) {
				b.Fatalf("err %v totals %v, want %d ok", err, m.Totals(), b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			b.ReportMetric(float64(m.Latencies().P95.Microseconds()), "p95-µs")
		})
	}
}

// BenchmarkEngineNoop measures the engine's own cost per iteration.
func BenchmarkEngineNoop(b *testing.B) {
	p := ConstantVUs(8, time.Hour)
	p.MaxIterations = int64(b.N)
	exec := func(context.Context, int, int64) Result { return Result{Class: ClassOK} }
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	m, err := Run(context.Background(), p, exec)
	elapsed := time.Since(start)
	if err != nil || m.Completed() != int64(b.N) {
		b.Fatalf("err %v completed %d", err, m.Completed())
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "iterations/s")
}

// BenchmarkEngineMCPFast is BenchmarkEngineMCP with MCPToolCallFast.
func BenchmarkEngineMCPFast(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID int64 `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"ok"}]}}`, req.ID)
	}))
	defer srv.Close()
	const vus = 8
	p := ConstantVUs(vus, time.Hour)
	p.MaxIterations = int64(b.N)
	exec, err := MCPToolCallFast(srv.URL, "echo", map[string]any{"text": "hi"}, nil, FastOptions{VUs: vus, Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	m, err := Run(context.Background(), p, exec)
	b.StopTimer()
	if err != nil || m.Count(ClassOK) != int64(b.N) {
		b.Fatalf("err %v totals %v, want %d ok", err, m.Totals(), b.N)
	}
}
