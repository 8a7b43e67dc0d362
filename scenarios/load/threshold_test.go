package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func metricsOf(lat []time.Duration, classes []Class, dropped int) *Metrics {
	m := NewMetrics()
	for i, l := range lat {
		m.Record(Result{Start: fakeEpoch, Latency: l, Class: classes[i%len(classes)]})
	}
	for range dropped {
		m.dropIteration(fakeEpoch)
	}
	return m
}

func TestThresholds(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*10*time.Microsecond) // exact in the histogram: p95 = 950µs, max 1ms
	}
	// 1 in 10 is a 429.
	classes := []Class{ClassOK, ClassOK, ClassOK, ClassOK, ClassOK, ClassOK, ClassOK, ClassOK, ClassOK, Class429}
	m := metricsOf(lat, classes, 3)
	cases := []struct {
		expr   string
		passed bool
		shown  string // "" when the expression must not parse
	}{
		{"p95<250ms", true, "p95=950µs"},
		{"p95<0.9", false, "p95=950µs"},
		{"p(95) < 1s", false, ""}, // k6's p(95) spelling is not ours
		{"p99<=990us", true, "p99=990µs"},
		{"max<1ms", false, "max=1ms"},
		{"rate_429<0.05", false, "rate_429=0.1000"},
		{"rate_429<=0.1", true, "rate_429=0.1000"},
		{"rate_errors<0.2", true, "rate_errors=0.1000"},
		{"count_ok>=90", true, "count_ok=90"},
		{"dropped_iterations==0", false, "dropped_iterations=3"},
		{"iterations>99", true, "iterations=100"},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			th, err := ParseThreshold(tc.expr)
			if tc.shown == "" {
				if err == nil {
					t.Fatalf("ParseThreshold(%q) accepted", tc.expr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := th.Eval(m)
			if r.Passed != tc.passed || r.Observed != tc.shown {
				t.Errorf("Eval = %v %q, want %v %q", r.Passed, r.Observed, tc.passed, tc.shown)
			}
		})
	}
}

func TestParseThresholdOptions(t *testing.T) {
	cases := []struct {
		in    string
		abort bool
		delay time.Duration
		ok    bool
	}{
		{"p95<250ms", false, 0, true},
		{"p95<250ms,abortOnFail", true, 0, true},
		{"rate_5xx<0.01,abortOnFail,delayAbortEval=10s", true, 10 * time.Second, true},
		{"rate_teapot<0.01", false, 0, false},
		{"p95", false, 0, false},
		{"p95<fast", false, 0, false},
		{"p95<1s,abortNow", false, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			th, err := ParseThreshold(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok %v", err, tc.ok)
			}
			if tc.ok && (th.AbortOnFail != tc.abort || th.DelayAbortEval != tc.delay) {
				t.Errorf("got %+v", th)
			}
		})
	}
}

func TestHTTPCallClasses(t *testing.T) {
	cases := []struct {
		status int
		want   Class
	}{{200, ClassOK}, {204, ClassOK}, {302, ClassBadResponse}, {404, Class4xx}, {429, Class429}, {503, Class5xx}}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPut || r.Header.Get("X-Test") != "1" {
					w.WriteHeader(400)
					return
				}
				if tc.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte("body"))
			}))
			defer srv.Close()
			for _, fast := range []bool{false, true} {
				var wire Wire
				h := http.Header{"X-Test": {"1"}}
				exec := HTTPCall(NewHTTPClient(1, 5*time.Second, &wire), http.MethodPut, srv.URL, []byte(`{"a":1}`), h)
				if fast {
					var err error
					if exec, err = HTTPCallFast(http.MethodPut, srv.URL, []byte(`{"a":1}`), h, FastOptions{VUs: 1, Timeout: 5 * time.Second, Wire: &wire}); err != nil {
						t.Fatal(err)
					}
				}
				for i := range 2 { // the second call reuses the connection
					r := exec(context.Background(), 1, int64(i))
					if r.Class != tc.want || r.Status != tc.status {
						t.Fatalf("fast %v call %d: got %s %d (%s), want %s", fast, i, r.Class, r.Status, r.Err, tc.want)
					}
					if tc.want == Class429 && r.RetryAfter != 2*time.Second {
						t.Errorf("fast %v: RetryAfter %v", fast, r.RetryAfter)
					}
				}
				if wire.Sent() == 0 || wire.Received() == 0 {
					t.Errorf("fast %v: wire sent %d received %d", fast, wire.Sent(), wire.Received())
				}
			}
		})
	}
}
