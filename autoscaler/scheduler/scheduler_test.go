package scheduler

import (
	"bufio"
	"bytes"
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
)

// waitState waits (on Changed, never sleeping) until cond holds, at most 10 s.
func waitState(t *testing.T, s *Scheduler, what string, cond func(Stats) bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		ch := s.Changed()
		st := s.Stats()
		if cond(st) {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("waited 10 s for %s; state %+v", what, st)
		}
	}
}

type reply struct {
	status int
	header http.Header
	body   string
}

// callMCP posts the load engine's tools/call for the work tool.
func callMCP(base string, id int, ms int) reply {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"work","arguments":{"ms":%d}}}`, id, ms)
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// startServer serves s until the test ends; the sessions end first, so
// that the server's Close does not wait for their streams.
func startServer(t *testing.T, s *Scheduler) *httptest.Server {
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close() })
	return srv
}

// fakeQuerier speaks the querier protocol by hand.
type fakeQuerier struct {
	t       *testing.T
	base    string
	session string
	cancel  context.CancelFunc
}

func connectFake(t *testing.T, base, name string) *fakeQuerier {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+PathConnect+"?querier="+name, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	var h Hello
	if err != nil || json.Unmarshal(line, &h) != nil || h.Session == "" {
		cancel()
		t.Fatalf("hello %q: %v", line, err)
	}
	f := &fakeQuerier{t: t, base: base, session: h.Session, cancel: func() { cancel(); resp.Body.Close() }}
	t.Cleanup(f.cancel)
	return f
}

func (f *fakeQuerier) next() Assignment {
	f.t.Helper()
	for range 5 { // a 204 after PollTimeout polls again
		resp, err := http.Post(f.base+PathNext+"?session="+f.session, "", nil)
		if err != nil {
			f.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNoContent {
			continue
		}
		var a Assignment
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &a) != nil {
			f.t.Fatalf("next: HTTP %d %s", resp.StatusCode, b)
		}
		return a
	}
	f.t.Fatal("next: no call in 5 polls")
	return Assignment{}
}

func (f *fakeQuerier) answer(call string, status int, body string) int {
	b, _ := json.Marshal(Answer{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)})
	resp, err := http.Post(f.base+PathAnswer+"?session="+f.session+"&call="+call, "application/json", bytes.NewReader(b))
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func okBody(id int, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%q}]}}`, id, text)
}

// TestQueueFIFOAndFull: calls are handed out in the order they came; past
// the bound a call gets 429 with Retry-After and a JSON-RPC error, and the
// answers reach the right callers.
func TestQueueFIFOAndFull(t *testing.T) {
	s := New(Config{MaxQueue: 3})
	srv := startServer(t, s)

	replies := make([]chan reply, 3)
	for i := range 3 {
		replies[i] = make(chan reply, 1)
		go func() { replies[i] <- callMCP(srv.URL, i+1, 10) }()
		waitState(t, s, fmt.Sprintf("%d queued", i+1), func(st Stats) bool { return st.Queued == i+1 })
	}
	full := callMCP(srv.URL, 99, 10)
	if full.status != http.StatusTooManyRequests || full.header.Get("Retry-After") != "1" ||
		!strings.Contains(full.body, `"id":99`) || !strings.Contains(full.body, "queue full") {
		t.Fatalf("4th call with the queue full: %d %q %s", full.status, full.header.Get("Retry-After"), full.body)
	}
	if st := s.Stats(); st.Refused != 1 || st.Queued != 3 {
		t.Fatalf("stats %+v, want 1 refused, 3 queued", st)
	}

	q := connectFake(t, srv.URL, "q1")
	for i := range 3 {
		a := q.next()
		var req struct {
			ID int `json:"id"`
		}
		_ = json.Unmarshal(a.Body, &req)
		if req.ID != i+1 || a.Attempt != 1 || a.Header.Get("Accept") == "" {
			t.Fatalf("call %d handed out: id %d attempt %d header %v, want FIFO id %d attempt 1 with the caller's Accept", i, req.ID, a.Attempt, a.Header, i+1)
		}
		if code := q.answer(a.Call, 200, okBody(req.ID, "done")); code != http.StatusNoContent {
			t.Fatalf("answer: HTTP %d", code)
		}
	}
	for i := range 3 {
		r := <-replies[i]
		if r.status != 200 || !strings.Contains(r.body, fmt.Sprintf(`"id":%d`, i+1)) {
			t.Fatalf("caller %d got %d %s", i+1, r.status, r.body)
		}
	}
	mf := gather(t, s, MetricQuerierCallsTotal)
	if got := mf.GetMetric()[0].GetCounter().GetValue(); got != 3 || mf.GetMetric()[0].GetLabel()[0].GetValue() != "q1" {
		t.Fatalf("per-querier calls: %v", mf)
	}
}

// TestQuerierGoneMidCall: a call whose querier's session ends while it runs
// goes back to the front of the queue once; if the second querier goes away
// too, the caller gets 503 with a JSON-RPC error naming both. Never lost.
func TestQuerierGoneMidCall(t *testing.T) {
	for _, tc := range []struct {
		name       string
		secondDies bool
		wantStatus int
		wantBody   string
	}{
		{"re-queued and answered by the next querier", false, 200, "by q2"},
		{"second querier gone too: 503", true, 503, "queriers tried: [q1 q2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{})
			srv := startServer(t, s)
			got := make(chan reply, 1)
			go func() { got <- callMCP(srv.URL, 7, 10) }()
			waitState(t, s, "the call queued", func(st Stats) bool { return st.Queued == 1 })
			// A later call, behind the first: after the re-queue the first goes first again.
			later := make(chan reply, 1)
			go func() { later <- callMCP(srv.URL, 8, 10) }()
			waitState(t, s, "two queued", func(st Stats) bool { return st.Queued == 2 })

			q1 := connectFake(t, srv.URL, "q1")
			a := q1.next()
			q1.cancel() // killed mid-call
			waitState(t, s, "q1's call re-queued", func(st Stats) bool { return st.Requeued == 1 && st.Queriers == 0 && st.Queued == 2 })
			if code := q1.answer(a.Call, 200, okBody(7, "late")); code != http.StatusNotFound {
				t.Fatalf("a late answer from the gone session: HTTP %d, want 404", code)
			}

			q2 := connectFake(t, srv.URL, "q2")
			b := q2.next()
			if b.Call != a.Call || b.Attempt != 2 {
				t.Fatalf("q2 got %s attempt %d, want the re-queued %s at attempt 2 (front of the queue)", b.Call, b.Attempt, a.Call)
			}
			if tc.secondDies {
				q2.cancel()
			} else if code := q2.answer(b.Call, 200, okBody(7, "by q2")); code != http.StatusNoContent {
				t.Fatalf("answer: HTTP %d", code)
			}
			r := <-got
			if r.status != tc.wantStatus || !strings.Contains(r.body, tc.wantBody) || !strings.Contains(r.body, `"id":7`) {
				t.Fatalf("caller got %d %s, want %d with %q", r.status, r.body, tc.wantStatus, tc.wantBody)
			}
			if tc.secondDies {
				if st := s.Stats(); st.Failed != 1 || r.header.Get("Retry-After") != "1" {
					t.Fatalf("stats %+v, Retry-After %q: want 1 failed call, Retry-After 1", st, r.header.Get("Retry-After"))
				}
				q3 := connectFake(t, srv.URL, "q3")
				c := q3.next()
				q3.answer(c.Call, 200, okBody(8, "by q3"))
			} else {
				c := q2.next()
				q2.answer(c.Call, 200, okBody(8, "later by q2"))
			}
			if r := <-later; r.status != 200 {
				t.Fatalf("the later call: %d %s", r.status, r.body)
			}
		})
	}
}

// TestInflightSummary: the summary's quantiles on a known in-flight history
// (an injected clock, Sample driven by hand), beside the gauges.
func TestInflightSummary(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tick := func() { mu.Lock(); now = now.Add(250 * time.Millisecond); mu.Unlock() }
	s := New(Config{Now: clock, Window: 2 * time.Second})
	srv := startServer(t, s)

	// In-flight 0 for 4 samples, then 1, 2, 3, 4 (calls queued one by one, no querier).
	for range 4 {
		s.Sample()
		tick()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range 4 {
		wg.Go(func() { callMCP(srv.URL, i, 1) })
		waitState(t, s, "queued", func(st Stats) bool { return st.Queued == i+1 })
		s.Sample()
		tick()
	}
	// Window 2 s at now (8 samples taken 250 ms apart, the first at -2 s is out): 0 0 0 1 2 3 4.
	mf := gather(t, s, MetricInflightRequests)
	sum := mf.GetMetric()[0].GetSummary()
	want := map[float64]float64{0.5: 1, 0.75: 3, 0.99: 4}
	if len(sum.GetQuantile()) != 3 {
		t.Fatalf("quantiles %v, want 0.5, 0.75, 0.99", sum.GetQuantile())
	}
	for _, q := range sum.GetQuantile() {
		if want[q.GetQuantile()] != q.GetValue() {
			t.Errorf("quantile %v = %v, want %v", q.GetQuantile(), q.GetValue(), want[q.GetQuantile()])
		}
	}
	if sum.GetSampleCount() != 8 || sum.GetSampleSum() != 10 {
		t.Errorf("count %d sum %v, want 8 and 10", sum.GetSampleCount(), sum.GetSampleSum())
	}
	if g := gather(t, s, MetricInflight).GetMetric()[0].GetGauge().GetValue(); g != 4 {
		t.Errorf("%s = %v, want 4", MetricInflight, g)
	}
	if g := gather(t, s, MetricQueueLength).GetMetric()[0].GetGauge().GetValue(); g != 4 {
		t.Errorf("%s = %v, want 4", MetricQueueLength, g)
	}
	s.Close() // answers the queued calls 503
}

func gather(t *testing.T, s *Scheduler, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no %s on /metrics", name)
	return nil
}

// TestBadInput: 4xx with a clear message, never 5xx.
func TestBadInput(t *testing.T) {
	s := New(Config{})
	srv := startServer(t, s)
	post := func(path, body string) (int, string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name string
		do   func() (int, string)
		code int
		want string
	}{
		{"GET /mcp", func() (int, string) { return get("/mcp") }, 405, "POST /mcp only"},
		{"not JSON", func() (int, string) { return post("/mcp", "{nope") }, 400, "parse error"},
		{"over 1 MiB", func() (int, string) { return post("/mcp", `"`+strings.Repeat("x", MaxBodyBytes)+`"`) }, 413, "over"},
		{"bad querier name", func() (int, string) { return get(PathConnect + "?querier=a%20b") }, 400, "want 1 to 63"},
		{"no querier name", func() (int, string) { return get(PathConnect) }, 400, "want 1 to 63"},
		{"poll, unknown session", func() (int, string) { return post(PathNext+"?session=s9", "") }, 410, "connect again"},
		{"answer not JSON", func() (int, string) { return post(PathAnswer+"?session=s9&call=c1", "x") }, 400, "answer"},
		{"answer bad status", func() (int, string) { return post(PathAnswer+"?session=s9&call=c1", `{"status":42}`) }, 400, "100..599"},
		{"answer unknown call", func() (int, string) { return post(PathAnswer+"?session=s9&call=c1", `{"status":200}`) }, 404, "not held"},
		{"non-canonical path", func() (int, string) { return post("/x/../mcp", "{}") }, 404, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := tc.do()
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Fatalf("HTTP %d %q, want %d with %q", code, body, tc.code, tc.want)
			}
		})
	}
}

// TestSchedulerDrain: draining refuses new calls with 503, lets the queued
// one be answered, then ends the sessions and returns nil.
func TestSchedulerDrain(t *testing.T) {
	s := New(Config{})
	srv := startServer(t, s)
	got := make(chan reply, 1)
	go func() { got <- callMCP(srv.URL, 1, 10) }()
	waitState(t, s, "queued", func(st Stats) bool { return st.Queued == 1 })
	drained := make(chan error, 1)
	go func() { drained <- s.Drain(context.Background()) }()
	if code, _ := getStatus(srv.URL + "/readyz"); code != 503 {
		// Drain sets readiness first, but it runs in a goroutine: wait for its state change.
		waitState(t, s, "draining", func(Stats) bool { c, _ := getStatus(srv.URL + "/readyz"); return c == 503 })
	}
	if r := callMCP(srv.URL, 2, 10); r.status != 503 || r.header.Get("Retry-After") != "1" {
		t.Fatalf("a call while draining: %d %s", r.status, r.body)
	}
	q := connectFake(t, srv.URL, "q1")
	a := q.next()
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v with a call running", err)
	default:
	}
	q.answer(a.Call, 200, okBody(1, "ok"))
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.status != 200 {
		t.Fatalf("the queued call: %d %s", r.status, r.body)
	}
	if st := s.Stats(); st.Queriers != 0 {
		t.Fatalf("sessions after Drain: %d", st.Queriers)
	}
}

func getStatus(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
