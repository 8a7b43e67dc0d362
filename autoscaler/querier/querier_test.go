package querier_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/querier"
	"github.com/scaleproof/scaleproof/autoscaler/scheduler"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// waitState waits on the scheduler's Changed (never sleeping) until cond holds, at most 10 s.
func waitState(t *testing.T, s *scheduler.Scheduler, what string, cond func(scheduler.Stats) bool) {
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

func startScheduler(t *testing.T, cfg scheduler.Config) (*scheduler.Scheduler, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	s := scheduler.New(cfg)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close() })
	return s, srv.URL
}

type running struct {
	q    *querier.Querier
	stop context.CancelFunc
	done chan struct{} // closed when Run returned, with err
	err  error
}

// result waits for Run to return.
func (r *running) result(t *testing.T) error {
	t.Helper()
	receiveClosed(t, r.done, "Run to return")
	return r.err
}

func receiveClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10 s for %s", what)
	}
}

// startQuerier runs a querier until the test ends (a hard stop then).
func startQuerier(t *testing.T, base, id string, workers int, wait func(context.Context, time.Duration) error) *running {
	t.Helper()
	q, err := querier.New(querier.Config{Scheduler: base, ID: id, Workers: workers, Wait: wait, Logger: quiet, Reconnect: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{q: q, stop: cancel, done: make(chan struct{})}
	go func() { r.err = q.Run(ctx); close(r.done) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

type reply struct {
	status int
	body   string
}

func callMCP(base string, id, ms int) reply {
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
	return reply{resp.StatusCode, string(b)}
}

// gate is a Wait that holds each work call until released.
type gate struct {
	started chan time.Duration
	release chan struct{}
}

func newGate() *gate {
	return &gate{started: make(chan time.Duration, 64), release: make(chan struct{})}
}

func (g *gate) wait(ctx context.Context, d time.Duration) error {
	g.started <- d
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10 s for %s", what)
		panic("unreachable")
	}
}

// TestWorkersCapConcurrency: a querier runs at most its workers' number of
// calls at once; with N+1 calls and N workers one waits in the scheduler's
// queue until a worker is free.
func TestWorkersCapConcurrency(t *testing.T) {
	for _, workers := range []int{1, 6} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			s, base := startScheduler(t, scheduler.Config{})
			g := newGate()
			startQuerier(t, base, "qa", workers, g.wait)
			waitState(t, s, "the querier connected", func(st scheduler.Stats) bool { return st.Queriers == 1 })
			replies := make(chan reply, workers+1)
			for i := range workers + 1 {
				go func() { replies <- callMCP(base, i+1, 50) }()
			}
			for i := range workers {
				if d := receive(t, g.started, fmt.Sprintf("call %d to start", i+1)); d != 50*time.Millisecond {
					t.Fatalf("work call of %s, want the caller's 50 ms", d)
				}
			}
			waitState(t, s, "N running, 1 queued", func(st scheduler.Stats) bool { return st.Running == workers && st.Queued == 1 })
			select {
			case <-g.started:
				t.Fatalf("a call beyond the %d workers started", workers)
			default:
			}
			g.release <- struct{}{} // one worker frees up: the waiting call starts
			receive(t, g.started, "the waiting call to start")
			close(g.release)
			for range workers + 1 {
				r := receive(t, replies, "an answer")
				if r.status != 200 || !strings.Contains(r.body, "worked 50 ms on qa") {
					t.Fatalf("answer %d %s", r.status, r.body)
				}
			}
		})
	}
}

// TestQuerierKilledMidCall: a querier that dies while running a call does
// not lose it: the scheduler re-queues it once and the next querier
// answers it.
func TestQuerierKilledMidCall(t *testing.T) {
	s, base := startScheduler(t, scheduler.Config{})
	g := newGate()
	qa := startQuerier(t, base, "qa", 6, g.wait)
	waitState(t, s, "qa connected", func(st scheduler.Stats) bool { return st.Queriers == 1 })
	got := make(chan reply, 1)
	go func() { got <- callMCP(base, 1, 50) }()
	receive(t, g.started, "the call to start on qa")
	qa.stop() // killed mid-call
	if err := qa.result(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("qa.Run = %v, want context.Canceled", err)
	}
	waitState(t, s, "the call re-queued", func(st scheduler.Stats) bool { return st.Requeued == 1 && st.Queued == 1 && st.Queriers == 0 })
	startQuerier(t, base, "qb", 6, nil)
	r := receive(t, got, "the answer")
	if r.status != 200 || !strings.Contains(r.body, "worked 50 ms on qb") {
		t.Fatalf("caller got %d %s, want qb's answer", r.status, r.body)
	}
	if st := s.Stats(); st.Failed != 0 || st.Inflight() != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestQuerierDrain: Drain (what SIGTERM does) stops pulling, the running
// call finishes and is answered, /readyz turns 503, the session ends and
// Run returns nil; a call queued meanwhile stays queued for another querier.
func TestQuerierDrain(t *testing.T) {
	s, base := startScheduler(t, scheduler.Config{})
	g := newGate()
	qa := startQuerier(t, base, "qa", 6, g.wait)
	srv := httptest.NewServer(qa.q.Handler())
	defer srv.Close()
	waitState(t, s, "qa connected", func(st scheduler.Stats) bool { return st.Queriers == 1 })
	first := make(chan reply, 1)
	go func() { first <- callMCP(base, 1, 50) }()
	receive(t, g.started, "the first call to start")
	if code := status(t, srv.URL+"/readyz"); code != 200 { // it pulled a call: it has its session
		t.Fatalf("/readyz connected: %d", code)
	}

	qa.q.Drain()
	if code := status(t, srv.URL+"/readyz"); code != 503 {
		t.Fatalf("/readyz draining: %d", code)
	}
	// Drain's leave reaches the scheduler asynchronously; until it has, an
	// idle worker's poll may still be handed a call (by design: it runs).
	waitState(t, s, "qa's leave seen", func(st scheduler.Stats) bool { return st.Leaving == 1 })
	second := make(chan reply, 1)
	go func() { second <- callMCP(base, 2, 50) }()
	waitState(t, s, "the second call queued", func(st scheduler.Stats) bool { return st.Queued == 1 })
	select {
	case <-qa.done:
		t.Fatalf("Run returned %v with a call running", qa.err)
	default:
	}
	g.release <- struct{}{} // only the first call is released: had the second been pulled, Run would never return
	if r := receive(t, first, "the first answer"); r.status != 200 || !strings.Contains(r.body, "on qa") {
		t.Fatalf("the running call during drain: %d %s", r.status, r.body)
	}
	if err := qa.result(t); err != nil {
		t.Fatalf("Run = %v, want nil after a drain", err)
	}
	waitState(t, s, "the session ended, the second call still queued", func(st scheduler.Stats) bool {
		return st.Queriers == 0 && st.Queued == 1 && st.Running == 0 && st.Requeued == 0
	})
	startQuerier(t, base, "qb", 6, nil)
	if r := receive(t, second, "the second answer"); r.status != 200 || !strings.Contains(r.body, "on qb") {
		t.Fatalf("the queued call: %d %s", r.status, r.body)
	}
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestNewBadConfig: a bad scheduler URL or worker count is an error.
func TestNewBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  querier.Config
		want string
	}{
		{querier.Config{Scheduler: ""}, "want an http"},
		{querier.Config{Scheduler: "127.0.0.1:80"}, "want an http"},
		{querier.Config{Scheduler: "http://127.0.0.1:1", Workers: -1}, "workers -1"},
		{querier.Config{Scheduler: "http://127.0.0.1:1", Workers: querier.MaxWorkers + 1}, "want 1..1024"},
		{querier.Config{Scheduler: "http://127.0.0.1:1", CPUPerCall: -1}, "cpu per call -1"},
		{querier.Config{Scheduler: "http://127.0.0.1:1", CPUPerCall: 1001}, "want 0..1000"},
	} {
		if _, err := querier.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
}

// TestQuerierCPUPerCall: with a CPU cost a running call is held through
// the duty cycle: the querier's Wait sleeps only the part of each 10 ms
// slice not spun, never the call's whole duration, and the call still
// lasts what the caller asked.
func TestQuerierCPUPerCall(t *testing.T) {
	s, base := startScheduler(t, scheduler.Config{})
	g := newGate()
	q, err := querier.New(querier.Config{Scheduler: base, ID: "qa", Workers: 1, Wait: g.wait, CPUPerCall: 500, Logger: quiet, Reconnect: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if q.CPUPerCall() != 500 {
		t.Fatalf("CPUPerCall = %d", q.CPUPerCall())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = q.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitState(t, s, "the querier connected", func(st scheduler.Stats) bool { return st.Queriers == 1 })
	replies := make(chan reply, 1)
	go func() { replies <- callMCP(base, 1, 50) }()
	if d := receive(t, g.started, "the first sleep"); d <= 0 || d > 5*time.Millisecond {
		t.Fatalf("first sleep %s, want (0, 5 ms]: half of a 10 ms slice at 500 millicores", d)
	}
	close(g.release)
	r := receive(t, replies, "the answer")
	if r.status != 200 || !strings.Contains(r.body, "worked 50 ms on qa") {
		t.Fatalf("answer %d %s", r.status, r.body)
	}
}

type connKey struct{}

// TestQuerierRedialsAfterErrorAnswer: a connection that answered the
// connect with an error (here: the first TCP connection answers 404 to
// everything, as a ClusterIP dialled before kube-proxy routed it did on
// kind) is not kept for the next session; the querier dials anew and
// reaches the scheduler. Without the redial it would retry on the same
// kept-alive connection and never connect.
func TestQuerierRedialsAfterErrorAnswer(t *testing.T) {
	s := scheduler.New(scheduler.Config{Logger: quiet})
	var mu sync.Mutex
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(connKey{}).(int) == 1 {
			http.NotFound(w, r)
			return
		}
		s.Handler().ServeHTTP(w, r)
	}))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		mu.Lock()
		defer mu.Unlock()
		conns++
		return context.WithValue(ctx, connKey{}, conns)
	}
	srv.Start()
	t.Cleanup(func() { s.Close(); srv.Close() })

	startQuerier(t, srv.URL, "qa", 2, nil)
	waitState(t, s, "the querier's session after a 404 on its first connection", func(st scheduler.Stats) bool { return st.Queriers == 1 })
	mu.Lock()
	defer mu.Unlock()
	if conns < 2 {
		t.Errorf("%d connections made, want a new one after the 404", conns)
	}
}
