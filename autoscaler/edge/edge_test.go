package edge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
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

	"github.com/scaleproof/scaleproof/autoscaler/edge"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/autoscaler/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeDiscovery returns what the test set; calls gets a token per call when non-nil.
type fakeDiscovery struct {
	mu    sync.Mutex
	zones []fleet.Zone
	err   error
	calls chan struct{}
}

func (f *fakeDiscovery) Zones(context.Context) ([]fleet.Zone, error) {
	f.mu.Lock()
	zones, err := f.zones, f.err
	f.mu.Unlock()
	if f.calls != nil {
		select {
		case f.calls <- struct{}{}:
		default:
		}
	}
	return zones, err
}

func (f *fakeDiscovery) set(err error, zones ...fleet.Zone) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.zones, f.err = zones, err
}

// arrival is one request a fake worker received.
type arrival struct {
	worker string
	header http.Header
	body   string
}

// fakeWorker answers 200 with a JSON-RPC result naming itself. When hold is
// set, each call waits for a token on release (or the request's end).
type fakeWorker struct {
	id      string
	srv     *httptest.Server
	release chan struct{}
}

func newFakeWorker(t *testing.T, id string, hold bool, arrivals chan<- arrival) *fakeWorker {
	t.Helper()
	f := &fakeWorker{id: id, release: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		arrivals <- arrival{worker: id, header: r.Header.Clone(), body: string(b)}
		if hold {
			select {
			case <-f.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Internal", "not for clients")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"worked on `+id+`"}]}}`)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeWorker) endpoint(ready bool) fleet.Endpoint {
	return fleet.Endpoint{ID: f.id, Addr: f.srv.Listener.Addr().String(), Ready: ready}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// countingTransport counts round trips per host.
type countingTransport struct {
	base *http.Transport
	mu   sync.Mutex
	n    map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[r.URL.Host]++
	c.mu.Unlock()
	return c.base.RoundTrip(r)
}

func (c *countingTransport) count(host string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[host]
}

type harness struct {
	e    *edge.Edge
	srv  *httptest.Server
	disc *fakeDiscovery
	rt   *countingTransport
}

// newEdge starts an edge over disc; when zones is non-nil it is set and
// refreshed once.
func newEdge(t *testing.T, cfg edge.Config, zones ...fleet.Zone) *harness {
	t.Helper()
	disc := &fakeDiscovery{}
	rt := &countingTransport{base: edge.NewTransport(), n: map[string]int{}}
	t.Cleanup(rt.base.CloseIdleConnections)
	cfg.Discovery, cfg.Transport = disc, rt
	e, err := edge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	if zones != nil {
		disc.set(nil, zones...)
		if err := e.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return &harness{e: e, srv: srv, disc: disc, rt: rt}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (h *harness) post(t *testing.T, path, body string, hdr ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", path, err)
		return response{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (h *harness) get(t *testing.T, path string) int {
	t.Helper()
	resp, err := h.srv.Client().Get(h.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (h *harness) metrics(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := h.srv.Client().Get(h.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

// series finds the metric of family name whose labels include want.
func series(mf map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	for _, m := range mf[name].GetMetric() {
		match := 0
		for _, lp := range m.GetLabel() {
			if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
				match++
			}
		}
		if match == len(want) {
			return m
		}
	}
	return nil
}

const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"work","arguments":{"ms":1}}}`

type rpcError struct {
	ID    json.RawMessage `json:"id"`
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func checkRPCError(t *testing.T, r response, status int, id string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (body %s)", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var e rpcError
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	if string(e.ID) != id || e.Error.Code != edge.CodeServerError || e.Error.Message == "" {
		t.Errorf("JSON-RPC error %+v (id %s), want id %s code %d", e.Error, e.ID, id, edge.CodeServerError)
	}
}

func zone(eps ...fleet.Endpoint) fleet.Zone {
	return fleet.Zone{Group: "g1", Zone: "a", Endpoints: eps}
}

const path = "/g/g1/z/a/mcp"

func TestRoutesToLeastLoadedReadyWorker(t *testing.T) {
	arrivals := make(chan arrival, 16)
	a := newFakeWorker(t, "A", true, arrivals)
	b := newFakeWorker(t, "B", true, arrivals)
	c := newFakeWorker(t, "C", true, arrivals)
	notReady := newFakeWorker(t, "N", false, arrivals)
	h := newEdge(t, edge.Config{}, zone(a.endpoint(true), notReady.endpoint(false), b.endpoint(true), c.endpoint(true)))

	results := map[string]chan response{}
	send := func(name string) {
		ch := make(chan response, 1)
		results[name] = ch
		go func() { ch <- h.post(t, path, call) }()
	}
	// r1..r3 spread over A, B, C (all idle: round-robin) and stay held.
	for i, want := range []string{"A", "B", "C"} {
		send(want)
		if got := (<-arrivals).worker; got != want {
			t.Fatalf("call %d went to %s, want %s", i+1, got, want)
		}
	}
	gauge := series(h.metrics(t), edge.MetricInflight, map[string]string{"group": "g1", "zone": "a"})
	if gauge.GetGauge().GetValue() != 3 {
		t.Errorf("%s = %v, want 3", edge.MetricInflight, gauge.GetGauge().GetValue())
	}
	// B finishes; the next call goes to B (the only idle one), not to A
	// (where round-robin alone would go).
	b.release <- struct{}{}
	if r := <-results["B"]; r.status != http.StatusOK || !strings.Contains(r.body, "worked on B") {
		t.Fatalf("B: %d %s", r.status, r.body)
	}
	send("B2")
	if got := (<-arrivals).worker; got != "B" {
		t.Fatalf("call 4 went to %s, want B (least loaded)", got)
	}
	for _, w := range []*fakeWorker{a, b, c} {
		w.release <- struct{}{}
	}
	for _, name := range []string{"A", "C", "B2"} {
		r := <-results[name]
		if r.status != http.StatusOK {
			t.Errorf("%s: status %d body %s", name, r.status, r.body)
		}
		if r.header.Get("X-Internal") != "" {
			t.Errorf("%s: worker-internal header passed through", name)
		}
	}
	for _, w := range []*fakeWorker{a, b, c} {
		if n, ok := h.e.WorkerInFlight(w.id, w.srv.Listener.Addr().String()); !ok || n != 0 {
			t.Errorf("WorkerInFlight(%s) = %d %v, want 0 true", w.id, n, ok)
		}
	}

	mf := h.metrics(t)
	if m := series(mf, edge.MetricRequestsTotal, map[string]string{"group": "g1", "zone": "a", "code": "200"}); m.GetCounter().GetValue() != 4 {
		t.Errorf("%s{code=200} = %v, want 4", edge.MetricRequestsTotal, m.GetCounter().GetValue())
	}
	sum := series(mf, edge.MetricInflightRequests, map[string]string{"group": "g1", "zone": "a"}).GetSummary()
	if sum.GetSampleCount() != 8 {
		t.Errorf("summary count %d, want 8 (start and end of 4 calls)", sum.GetSampleCount())
	}
	qs := map[float64]bool{}
	for _, q := range sum.GetQuantile() {
		qs[q.GetQuantile()] = true
	}
	for _, q := range []float64{0.5, 0.75, 0.9, 0.99} {
		if !qs[q] {
			t.Errorf("summary lacks quantile %v", q)
		}
	}
	if sum.GetSampleSum() != 1+2+3+3+3+3+2+1 {
		t.Errorf("summary sum %v, want 18 (observed 1,2,3 | 3 | 3 | 3,2,1)", sum.GetSampleSum())
	}
}

func TestForwardsHeadersAndBody(t *testing.T) {
	arrivals := make(chan arrival, 1)
	a := newFakeWorker(t, "A", false, arrivals)
	h := newEdge(t, edge.Config{}, zone(a.endpoint(true)))
	r := h.post(t, path, call, "Authorization", "Bearer k", "Mcp-Session-Id", "s1", "Mcp-Protocol-Version", "2025-06-18", "X-Secret", "no")
	if r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	got := <-arrivals
	if got.body != call {
		t.Errorf("worker got body %q", got.body)
	}
	for k, v := range map[string]string{
		"Authorization": "Bearer k", "Mcp-Session-Id": "s1", "Mcp-Protocol-Version": "2025-06-18",
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "X-Secret": "",
	} {
		if got.header.Get(k) != v {
			t.Errorf("worker got %s %q, want %q", k, got.header.Get(k), v)
		}
	}
}

// holder holds a real worker's work calls until released.
type holder struct {
	entered chan struct{}
	release chan struct{}
}

func (h *holder) wait(ctx context.Context, _ time.Duration) error {
	h.entered <- struct{}{}
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestPassesWorker429Through(t *testing.T) {
	hold := &holder{entered: make(chan struct{}, 1), release: make(chan struct{})}
	w := worker.New(worker.Config{ID: "w1", MaxInflight: 1, Wait: hold.wait})
	ws := httptest.NewServer(w.Handler())
	t.Cleanup(ws.Close)
	h := newEdge(t, edge.Config{}, zone(fleet.Endpoint{ID: "w1", Addr: ws.Listener.Addr().String(), Ready: true}))

	first := make(chan response, 1)
	go func() { first <- h.post(t, path, call) }()
	<-hold.entered

	r := h.post(t, path, `{"jsonrpc":"2.0","id":"x-2","method":"tools/call","params":{"name":"work"}}`)
	want := `{"jsonrpc":"2.0","id":"x-2","error":{"code":-32000,"message":"worker w1 at its in-flight limit (1)"}}` + "\n"
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "1" ||
		r.header.Get("Content-Type") != "application/json" || r.body != want {
		t.Errorf("got %d Retry-After=%q Content-Type=%q body %q\nwant 429 1 application/json %q",
			r.status, r.header.Get("Retry-After"), r.header.Get("Content-Type"), r.body, want)
	}
	close(hold.release)
	if r := <-first; r.status != http.StatusOK || !strings.Contains(r.body, "worked 1 ms on w1") {
		t.Errorf("held call: %d %s", r.status, r.body)
	}
	if m := series(h.metrics(t), edge.MetricRequestsTotal, map[string]string{"code": "429"}); m.GetCounter().GetValue() != 1 {
		t.Errorf("requests_total{code=429} = %v, want 1", m.GetCounter().GetValue())
	}
}

func TestNoReadyWorkerIs503(t *testing.T) {
	arrivals := make(chan arrival, 1)
	a := newFakeWorker(t, "A", false, arrivals)
	tests := []struct {
		name  string
		zones []fleet.Zone
		path  string
	}{
		{name: "only unready workers", zones: []fleet.Zone{zone(a.endpoint(false))}, path: path},
		{name: "no workers", zones: []fleet.Zone{zone()}, path: path},
		{name: "zone unknown", zones: []fleet.Zone{zone(a.endpoint(true))}, path: "/g/g1/z/b/mcp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newEdge(t, edge.Config{}, tc.zones...)
			r := h.post(t, tc.path, call)
			checkRPCError(t, r, http.StatusServiceUnavailable, "7")
			if r.header.Get("Retry-After") != "1" {
				t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
			}
		})
	}
	if len(arrivals) != 0 {
		t.Error("an unready worker got a call")
	}
}

func TestDialFailureRetriedOnceOnAnotherWorker(t *testing.T) {
	arrivals := make(chan arrival, 4)
	live := newFakeWorker(t, "live", false, arrivals)
	dead := deadAddr(t)
	h := newEdge(t, edge.Config{}, zone(fleet.Endpoint{ID: "dead", Addr: dead, Ready: true}, live.endpoint(true)))

	// The dead worker is first in line; the call lands on the live one.
	if r := h.post(t, path, call); r.status != http.StatusOK || !strings.Contains(r.body, "worked on live") {
		t.Fatalf("status %d body %s", r.status, r.body)
	}
	if got := h.rt.count(dead); got != 1 {
		t.Errorf("dials to the dead worker: %d, want 1", got)
	}
	// Skipped until the next refresh: no second dial.
	if r := h.post(t, path, call); r.status != http.StatusOK {
		t.Fatalf("second call: %d %s", r.status, r.body)
	}
	if got := h.rt.count(dead); got != 1 {
		t.Errorf("dials to the dead worker before a refresh: %d, want 1", got)
	}
	// A refresh makes it routable again.
	if err := h.e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := h.post(t, path, call); r.status != http.StatusOK {
			t.Fatalf("after refresh: %d %s", r.status, r.body)
		}
	}
	if got := h.rt.count(dead); got != 2 {
		t.Errorf("dials to the dead worker after a refresh: %d, want 2", got)
	}
	if len(arrivals) != 4 {
		t.Errorf("live worker got %d calls, want 4", len(arrivals))
	}
}

func TestDialFailureOnEveryWorkerIs503(t *testing.T) {
	tests := []struct {
		name  string
		dead  int
		dials int
	}{
		{name: "one dead worker", dead: 1, dials: 1},
		{name: "two dead workers", dead: 2, dials: 2},
		{name: "three dead workers: retried once only", dead: 3, dials: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var eps []fleet.Endpoint
			for i := range tc.dead {
				eps = append(eps, fleet.Endpoint{ID: string(rune('a' + i)), Addr: deadAddr(t), Ready: true})
			}
			h := newEdge(t, edge.Config{}, zone(eps...))
			r := h.post(t, path, call)
			checkRPCError(t, r, http.StatusServiceUnavailable, "7")
			total := 0
			for _, ep := range eps {
				total += h.rt.count(ep.Addr)
			}
			if total != tc.dials {
				t.Errorf("dials %d, want %d", total, tc.dials)
			}
		})
	}
}

func TestBrokenConnectionAfterAcceptIsNotRetried(t *testing.T) {
	arrivals := make(chan arrival, 4)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		arrivals <- arrival{worker: "broken", body: string(b)}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}))
	t.Cleanup(broken.Close)
	live := newFakeWorker(t, "live", false, arrivals)
	h := newEdge(t, edge.Config{}, zone(fleet.Endpoint{ID: "broken", Addr: broken.Listener.Addr().String(), Ready: true}, live.endpoint(true)))

	r := h.post(t, path, call)
	checkRPCError(t, r, http.StatusBadGateway, "7")
	if len(arrivals) != 1 || (<-arrivals).worker != "broken" {
		t.Errorf("the call was sent again after it reached a worker")
	}
}

func TestUpstreamTimeoutIs504(t *testing.T) {
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // the server notices the edge hanging up only after the body
		<-r.Context().Done()
	}))
	t.Cleanup(stuck.Close)
	h := newEdge(t, edge.Config{UpstreamTimeout: 50 * time.Millisecond},
		zone(fleet.Endpoint{ID: "stuck", Addr: stuck.Listener.Addr().String(), Ready: true}))
	checkRPCError(t, h.post(t, path, call), http.StatusGatewayTimeout, "7")
}

func TestUnknownPathAndMethod(t *testing.T) {
	h := newEdge(t, edge.Config{}, zone())
	tests := []struct {
		name   string
		method string
		path   string
		want   int
	}{
		{name: "root", method: http.MethodPost, path: "/", want: http.StatusNotFound},
		{name: "bare mcp", method: http.MethodPost, path: "/mcp", want: http.StatusNotFound},
		{name: "no mcp suffix", method: http.MethodPost, path: "/g/g1/z/a", want: http.StatusNotFound},
		{name: "extra segment", method: http.MethodPost, path: "/g/g1/z/a/mcp/x", want: http.StatusNotFound},
		{name: "bad group name", method: http.MethodPost, path: "/g/a%20b/z/a/mcp", want: http.StatusNotFound},
		{name: "GET a call path", method: http.MethodGet, path: path, want: http.StatusMethodNotAllowed},
		{name: "DELETE a call path", method: http.MethodDelete, path: path, want: http.StatusMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, h.srv.URL+tc.path, strings.NewReader(call))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := h.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			checkRPCError(t, response{status: resp.StatusCode, header: resp.Header, body: string(b)}, tc.want, "null")
			if tc.want == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != "POST" {
				t.Errorf("Allow %q", resp.Header.Get("Allow"))
			}
		})
	}
}

func TestBodyTooLargeIs413(t *testing.T) {
	arrivals := make(chan arrival, 1)
	a := newFakeWorker(t, "A", false, arrivals)
	h := newEdge(t, edge.Config{}, zone(a.endpoint(true)))
	r := h.post(t, path, `{"x":"`+strings.Repeat("a", edge.MaxBodyBytes)+`"}`)
	checkRPCError(t, r, http.StatusRequestEntityTooLarge, "null")
	if len(arrivals) != 0 {
		t.Error("an oversize body was forwarded")
	}
}

func TestKeepsRoutingWhenDiscoveryFails(t *testing.T) {
	arrivals := make(chan arrival, 4)
	a := newFakeWorker(t, "A", false, arrivals)
	h := newEdge(t, edge.Config{}, zone(a.endpoint(true)))
	h.disc.set(errors.New("fleet server down"))
	if err := h.e.Refresh(context.Background()); err == nil {
		t.Fatal("Refresh: want the discovery error")
	}
	if r := h.post(t, path, call); r.status != http.StatusOK || !strings.Contains(r.body, "worked on A") {
		t.Fatalf("with discovery down: %d %s", r.status, r.body)
	}
	if got := h.get(t, "/readyz"); got != http.StatusOK {
		t.Errorf("readyz %d with discovery down after a success, want 200", got)
	}
	// An empty list that succeeds does replace the old one.
	h.disc.set(nil)
	if err := h.e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkRPCError(t, h.post(t, path, call), http.StatusServiceUnavailable, "7")
}

func TestReadyz(t *testing.T) {
	tests := []struct {
		name     string
		discover error // nil: one successful refresh
		skip     bool  // no refresh at all
		drain    bool
		want     int
	}{
		{name: "before any discovery", skip: true, want: http.StatusServiceUnavailable},
		{name: "first discovery failed", discover: errors.New("down"), want: http.StatusServiceUnavailable},
		{name: "discovered", want: http.StatusOK},
		{name: "draining", drain: true, want: http.StatusServiceUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newEdge(t, edge.Config{})
			if !tc.skip {
				h.disc.set(tc.discover, zone())
				_ = h.e.Refresh(context.Background())
			}
			if tc.drain {
				h.e.SetDraining()
			}
			if got := h.get(t, "/readyz"); got != tc.want {
				t.Errorf("readyz %d, want %d", got, tc.want)
			}
			if got := h.get(t, "/livez"); got != http.StatusOK {
				t.Errorf("livez %d", got)
			}
		})
	}
}

func TestRunRefreshesUntilCancelled(t *testing.T) {
	h := newEdge(t, edge.Config{Interval: time.Millisecond})
	h.disc.calls = make(chan struct{})
	h.disc.set(nil, zone())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.e.Run(ctx)
	}()
	<-h.disc.calls
	<-h.disc.calls // a second round: the loop ticks
	if err := h.e.Ready(); err != nil {
		t.Errorf("Ready after discovery: %v", err)
	}
	cancel()
	<-done
}

func TestNewNeedsDiscovery(t *testing.T) {
	if _, err := edge.New(edge.Config{}); err == nil {
		t.Error("New without discovery: want an error")
	}
}

// TestNotReadyWorkerGetsNoCall: a worker discovery lists not ready (booting,
// draining, failing its readiness probe) gets no call, also after it was
// ready; with the edge-route-unready fault it does (the planted bug the
// readiness-routing scenario catches).
func TestNotReadyWorkerGetsNoCall(t *testing.T) {
	tests := []struct {
		name   string
		faults faults.Set
		wantB  bool // the unready worker B gets calls
	}{
		{name: "clean", wantB: false},
		{name: "edge-route-unready", faults: faults.Set{faults.EdgeRouteUnready: true}, wantB: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arrivals := make(chan arrival, 64)
			a := newFakeWorker(t, "A", false, arrivals)
			b := newFakeWorker(t, "B", false, arrivals)
			h := newEdge(t, edge.Config{Faults: tc.faults}, zone(a.endpoint(true), b.endpoint(true)))
			for range 4 {
				if r := h.post(t, path, call); r.status != http.StatusOK {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
			}
			got := map[string]int{}
			for range 4 {
				got[(<-arrivals).worker]++
			}
			if got["B"] == 0 {
				t.Fatalf("ready B got no call of 4: %v", got)
			}
			// B's readiness fails: the next discovery lists it not ready.
			h.disc.set(nil, zone(a.endpoint(true), b.endpoint(false)))
			if err := h.e.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			got = map[string]int{}
			for range 8 {
				if r := h.post(t, path, call); r.status != http.StatusOK {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
				got[(<-arrivals).worker]++
			}
			if (got["B"] > 0) != tc.wantB {
				t.Errorf("not-ready B got %d of 8 calls (A %d); want calls: %v", got["B"], got["A"], tc.wantB)
			}
		})
	}
}
