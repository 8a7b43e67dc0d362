package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

const exposition = `# HELP scaleproof_worker_inflight Calls in flight.
# TYPE scaleproof_worker_inflight gauge
scaleproof_worker_inflight 7
# HELP scaleproof_worker_inflight_limit In-flight limit.
# TYPE scaleproof_worker_inflight_limit gauge
scaleproof_worker_inflight_limit 32
# HELP scaleproof_worker_ready Ready.
# TYPE scaleproof_worker_ready gauge
scaleproof_worker_ready %d
# HELP scaleproof_worker_calls_total Calls served.
# TYPE scaleproof_worker_calls_total counter
scaleproof_worker_calls_total{tool="work"} 1000
scaleproof_worker_calls_total{tool="echo"} 234
# HELP go_goroutines Goroutines.
# TYPE go_goroutines gauge
go_goroutines 12
`

func TestParseWorkerMetrics(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want controller.WorkerMetrics
		err  string
	}{
		{name: "full ready", in: fmt.Sprintf(exposition, 1),
			want: controller.WorkerMetrics{InFlight: 7, Limit: 32, Ready: true, HasReady: true, CallsTotal: 1234}},
		{name: "full not ready", in: fmt.Sprintf(exposition, 0),
			want: controller.WorkerMetrics{InFlight: 7, Limit: 32, Ready: false, HasReady: true, CallsTotal: 1234}},
		{name: "untyped, no ready, no calls", in: "scaleproof_worker_inflight 3\nscaleproof_worker_inflight_limit 8\n",
			want: controller.WorkerMetrics{InFlight: 3, Limit: 8}},
		{name: "negative in flight clamps", in: "scaleproof_worker_inflight -3\nscaleproof_worker_inflight_limit 8\n",
			want: controller.WorkerMetrics{InFlight: 0, Limit: 8}},
		{name: "missing limit", in: "scaleproof_worker_inflight 3\n", err: "inflight_limit missing"},
		{name: "missing in flight", in: "scaleproof_worker_inflight_limit 3\n", err: "inflight missing"},
		{name: "garbage", in: "{{{ not metrics", err: "parse metrics"},
		{name: "empty", in: "", err: "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := controller.ParseWorkerMetrics(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestHTTPScraper(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		switch r.Host {
		default:
			fmt.Fprintf(w, exposition, 1)
		}
	})
	ok := httptest.NewServer(mux)
	defer ok.Close()
	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, exposition, 0) }))
	defer notReady.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) }))
	defer broken.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)

	addr := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Only the hanging endpoint's row checks the timeout's expiry; every
	// other row needs its scrape to answer (or be refused), so it gets 10 s
	// and a loaded machine cannot turn an answer into a timeout.
	answers := controller.NewHTTPScraper(10 * time.Second)
	short := controller.NewHTTPScraper(100 * time.Millisecond)
	for _, tc := range []struct {
		name          string
		ep            fleet.Endpoint
		reachable     bool
		ready         bool
		inFlight, lim int
		s             *controller.HTTPScraper
	}{
		{"ready", fleet.Endpoint{ID: "w1", Addr: addr(ok), Ready: true, Created: created}, true, true, 7, 32, answers},
		{"listed not ready", fleet.Endpoint{ID: "w2", Addr: addr(ok), Ready: false}, true, false, 7, 32, answers},
		{"gauge not ready", fleet.Endpoint{ID: "w3", Addr: addr(notReady), Ready: true}, true, false, 7, 32, answers},
		{"HTTP 500", fleet.Endpoint{ID: "w4", Addr: addr(broken), Ready: true}, false, false, 0, 0, answers},
		{"timeout", fleet.Endpoint{ID: "w5", Addr: addr(hang), Ready: true}, false, false, 0, 0, short},
		{"refused", fleet.Endpoint{ID: "w6", Addr: "127.0.0.1:1", Ready: true}, false, false, 0, 0, answers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := tc.s.Scrape(context.Background(), tc.ep)
			if (err == nil) != tc.reachable || w.Reachable != tc.reachable {
				t.Fatalf("reachable = %v, err = %v; want %v", w.Reachable, err, tc.reachable)
			}
			if w.ID != tc.ep.ID || !w.Created.Equal(tc.ep.Created) || w.Ready != tc.ready || w.InFlight != tc.inFlight || w.Limit != tc.lim {
				t.Fatalf("sample %+v", w)
			}
			if tc.reachable && w.CallsTotal != 1234 {
				t.Fatalf("calls = %d", w.CallsTotal)
			}
		})
	}
}
