package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/scaleproof/scaleproof/autoscaler/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// holder holds work calls until released: entered gets each call's duration
// as it starts, release lets one call finish.
type holder struct {
	entered chan time.Duration
	release chan struct{}
}

func newHolder() *holder {
	return &holder{entered: make(chan time.Duration, 64), release: make(chan struct{})}
}

func (h *holder) wait(ctx context.Context, d time.Duration) error {
	h.entered <- d
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// instant is a Wait that returns at once.
func instant(context.Context, time.Duration) error { return nil }

func start(t *testing.T, cfg worker.Config) (*worker.Worker, *httptest.Server) {
	t.Helper()
	if cfg.ID == "" {
		cfg.ID = "w1"
	}
	w := worker.New(cfg)
	ts := httptest.NewServer(w.Handler())
	t.Cleanup(ts.Close)
	return w, ts
}

func callBody(id string, args string) string {
	params := `{"name":"work"}`
	if args != "" {
		params = `{"name":"work","arguments":` + args + `}`
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func post(t *testing.T, c *http.Client, url, body string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return response{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("read body: %v", err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

type rpcResult struct {
	ID     json.RawMessage `json:"id"`
	Result struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decode(t *testing.T, b []byte) rpcResult {
	t.Helper()
	var r rpcResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return r
}

func scrape(t *testing.T, c *http.Client, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse metrics: %v", err)
	}
	return mf
}

func value(t *testing.T, mf map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f, ok := mf[name]
	if !ok || len(f.GetMetric()) != 1 {
		t.Fatalf("metric %s missing or not one series", name)
	}
	m := f.GetMetric()[0]
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	t.Fatalf("metric %s is neither gauge nor counter", name)
	return 0
}

func TestToolsCallWithoutInitialize(t *testing.T) {
	tests := []struct {
		name      string
		args      string
		wantText  string
		wantError bool
	}{
		{name: "explicit ms", args: `{"ms":5}`, wantText: "worked 5 ms on w1"},
		{name: "zero ms", args: `{"ms":0}`, wantText: "worked 0 ms on w1"},
		{name: "default ms", args: `{}`, wantText: "worked 7 ms on w1"},
		{name: "no arguments", args: "", wantText: "worked 7 ms on w1"},
		{name: "capped at 60000", args: `{"ms":999999}`, wantText: "worked 60000 ms on w1"},
		{name: "negative ms is a tool error", args: `{"ms":-1}`, wantError: true},
		{name: "wrong type is a tool error", args: `{"ms":"soon"}`, wantError: true},
	}
	_, ts := start(t, worker.Config{Work: 7 * time.Millisecond, Wait: instant})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, ts.Client(), ts.URL+"/mcp", callBody("1", tc.args))
			if r.status != http.StatusOK {
				t.Fatalf("status %d, body %s", r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			res := decode(t, r.body)
			if string(res.ID) != "1" {
				t.Errorf("id %s, want 1", res.ID)
			}
			if res.Result.IsError != tc.wantError {
				t.Fatalf("isError %v, want %v (body %s)", res.Result.IsError, tc.wantError, r.body)
			}
			if tc.wantError {
				return
			}
			if len(res.Result.Content) != 1 || res.Result.Content[0].Text != tc.wantText {
				t.Errorf("content %+v, want text %q", res.Result.Content, tc.wantText)
			}
		})
	}
}

func TestRealTimerHonoursDuration(t *testing.T) {
	_, ts := start(t, worker.Config{})
	r := post(t, ts.Client(), ts.URL+"/mcp", callBody("9", `{"ms":1}`))
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "worked 1 ms on w1") {
		t.Fatalf("status %d body %s", r.status, r.body)
	}
}

func TestInflightLimitRefusesWith429(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		wantID string
	}{
		{name: "number id", id: "42", wantID: "42"},
		{name: "string id", id: `"call-7"`, wantID: `"call-7"`},
		{name: "null id", id: "null", wantID: "null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const limit = 3
			h := newHolder()
			w, ts := start(t, worker.Config{MaxInflight: limit, Wait: h.wait})
			c := ts.Client()

			var wg sync.WaitGroup
			results := make(chan response, limit)
			for i := range limit {
				wg.Go(func() { results <- post(t, c, ts.URL+"/mcp", callBody(fmt.Sprint(i+1), `{"ms":1000}`)) })
			}
			for range limit {
				<-h.entered
			}
			if got := w.InFlight(); got != limit {
				t.Fatalf("InFlight %d, want %d", got, limit)
			}

			r := post(t, c, ts.URL+"/mcp", callBody(tc.id, `{"ms":1}`))
			if r.status != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429 (body %s)", r.status, r.body)
			}
			if got := r.header.Get("Retry-After"); got != "1" {
				t.Errorf("Retry-After %q, want 1", got)
			}
			if got := r.header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			res := decode(t, r.body)
			if string(res.ID) != tc.wantID {
				t.Errorf("id %s, want %s", res.ID, tc.wantID)
			}
			if res.Error == nil || res.Error.Code != -32000 || res.Error.Message != "worker w1 at its in-flight limit (3)" {
				t.Errorf("error %+v", res.Error)
			}

			mf := scrape(t, c, ts.URL)
			for name, want := range map[string]float64{
				worker.MetricInflight:          limit,
				worker.MetricInflightLimit:     limit,
				worker.MetricInflightHighWater: limit,
				worker.MetricCallsTotal:        0,
				worker.MetricRefusedTotal:      1,
				worker.MetricReady:             1,
			} {
				if got := value(t, mf, name); got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}

			for range limit {
				h.release <- struct{}{}
			}
			wg.Wait()
			close(results)
			for r := range results {
				if r.status != http.StatusOK {
					t.Errorf("held call: status %d body %s", r.status, r.body)
				}
			}
			mf = scrape(t, c, ts.URL)
			if got := value(t, mf, worker.MetricCallsTotal); got != limit {
				t.Errorf("calls_total %v, want %d", got, limit)
			}
			if got := value(t, mf, worker.MetricInflight); got != 0 {
				t.Errorf("inflight %v, want 0", got)
			}
			if got := value(t, mf, worker.MetricInflightHighWater); got != limit {
				t.Errorf("inflight high water %v after the calls finished, want it kept at %d", got, limit)
			}
		})
	}
}

// TestAdmitOverLimitIsTheOffByOne: the planted bug faults.WorkerAdmitsOverLimit
// holds exactly one call beyond the limit, and the high-water gauge shows it
// (the harness's back-pressure fact reads that gauge).
func TestAdmitOverLimitIsTheOffByOne(t *testing.T) {
	for _, c := range []struct {
		name  string
		over  bool
		holds int
	}{
		{"correct worker", false, 2},
		{"off by one", true, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			const limit = 2
			h := newHolder()
			w, ts := start(t, worker.Config{MaxInflight: limit, Wait: h.wait, AdmitOverLimit: c.over})
			cl := ts.Client()
			var wg sync.WaitGroup
			for i := range c.holds {
				wg.Go(func() { post(t, cl, ts.URL+"/mcp", callBody(fmt.Sprint(i+1), `{"ms":1000}`)) })
			}
			for range c.holds {
				<-h.entered
			}
			if r := post(t, cl, ts.URL+"/mcp", callBody("99", `{"ms":1}`)); r.status != http.StatusTooManyRequests {
				t.Errorf("call %d: status %d, want 429", c.holds+1, r.status)
			}
			mf := scrape(t, cl, ts.URL)
			if got := value(t, mf, worker.MetricInflightHighWater); got != float64(c.holds) || w.HighWater() != c.holds {
				t.Errorf("high water %v (HighWater %d), want %d", got, w.HighWater(), c.holds)
			}
			for range c.holds {
				h.release <- struct{}{}
			}
			wg.Wait()
		})
	}
}

func TestReadyz(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		bootDelay time.Duration
		elapsed   time.Duration
		drain     bool
		fail      bool // FailReadiness
		pass      bool // then PassReadiness
		want      int
	}{
		{name: "ready at once", want: http.StatusOK},
		{name: "booting", bootDelay: 5 * time.Second, elapsed: 4 * time.Second, want: http.StatusServiceUnavailable},
		{name: "booted", bootDelay: 5 * time.Second, elapsed: 5 * time.Second, want: http.StatusOK},
		{name: "draining", drain: true, want: http.StatusServiceUnavailable},
		{name: "booted then draining", bootDelay: time.Second, elapsed: time.Minute, drain: true, want: http.StatusServiceUnavailable},
		{name: "failing readiness", fail: true, want: http.StatusServiceUnavailable},
		{name: "failing readiness, then passing again", fail: true, pass: true, want: http.StatusOK},
		{name: "booting, passing again does not end the boot", bootDelay: 5 * time.Second, fail: true, pass: true, want: http.StatusServiceUnavailable},
		{name: "draining, passing again does not end the drain", drain: true, fail: true, pass: true, want: http.StatusServiceUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			now := t0
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			w, ts := start(t, worker.Config{BootDelay: tc.bootDelay, Now: clock})
			mu.Lock()
			now = now.Add(tc.elapsed)
			mu.Unlock()
			if tc.drain {
				w.SetDraining()
			}
			if tc.fail {
				w.FailReadiness()
			}
			if tc.pass {
				w.PassReadiness()
			}
			resp, err := ts.Client().Get(ts.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("readyz %d, want %d", resp.StatusCode, tc.want)
			}
			wantGauge := 0.0
			if tc.want == http.StatusOK {
				wantGauge = 1
			}
			if got := value(t, scrape(t, ts.Client(), ts.URL), worker.MetricReady); got != wantGauge {
				t.Errorf("ready gauge %v, want %v", got, wantGauge)
			}
			// Readiness is for the router: a worker serves the calls that reach it either way.
			if r := post(t, ts.Client(), ts.URL+"/mcp", callBody("1", `{"ms":0}`)); r.status != http.StatusOK {
				t.Errorf("POST /mcp %d, want 200 whatever the readiness: %s", r.status, r.body)
			}
			resp, err = ts.Client().Get(ts.URL + "/livez")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("livez %d", resp.StatusCode)
			}
		})
	}
}

// TestBadRequestsNever5xx: a body that is not a JSON-RPC request is a 4xx; a
// well-formed request with bad params is a JSON-RPC error; never a 5xx.
func TestBadRequestsNever5xx(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		want     int
		wantCode int // JSON-RPC error code in the body, 0: not checked
	}{
		{name: "not json", body: "{not json", want: http.StatusBadRequest, wantCode: -32700},
		{name: "empty", body: "", want: http.StatusBadRequest, wantCode: -32700},
		{name: "truncated", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call"`, want: http.StatusBadRequest, wantCode: -32700},
		{name: "a string", body: `"tools/call"`, want: http.StatusBadRequest},
		{name: "a number", body: `17`, want: http.StatusBadRequest},
		{name: "batch of junk", body: `[1,2]`, want: http.StatusBadRequest},
		{name: "params not an object", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":3}`, want: http.StatusOK, wantCode: -32602},
		{name: "unknown tool", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}`, want: http.StatusOK, wantCode: -32602},
		{name: "too large", body: `{"x":"` + strings.Repeat("a", worker.MaxBodyBytes) + `"}`, want: http.StatusRequestEntityTooLarge, wantCode: -32000},
	}
	w, ts := start(t, worker.Config{Wait: instant})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, ts.Client(), ts.URL+"/mcp", tc.body)
			if r.status != tc.want {
				t.Errorf("status %d, want %d (body %s)", r.status, tc.want, r.body)
			}
			if tc.wantCode != 0 {
				res := decode(t, r.body)
				if res.Error == nil || res.Error.Code != tc.wantCode {
					t.Errorf("error %+v, want code %d", res.Error, tc.wantCode)
				}
			}
		})
	}
	if got := w.InFlight(); got != 0 {
		t.Errorf("InFlight %d after bad requests", got)
	}
}

func TestNonPostIs405(t *testing.T) {
	_, ts := start(t, worker.Config{Wait: instant})
	resp, err := ts.Client().Get(ts.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp %d, want 405", resp.StatusCode)
	}
}

func TestDefaults(t *testing.T) {
	w := worker.New(worker.Config{})
	if w.Limit() != worker.DefaultMaxInflight {
		t.Errorf("Limit %d", w.Limit())
	}
	if w.ID() == "" {
		t.Error("empty default ID")
	}
	if w.Ready() != nil {
		t.Errorf("Ready: %v", w.Ready())
	}
}
