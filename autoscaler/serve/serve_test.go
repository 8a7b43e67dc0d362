package serve_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNewServerTimeouts: every reference server gets slow-client timeouts
// (issue 6). The process-level test (scenarios/platform/local
// TestSlowClientsAreCutOff) shows a slow client cut off after 5 s.
func TestNewServerTimeouts(t *testing.T) {
	for _, wt := range []time.Duration{0, time.Hour} {
		s := serve.NewServer(http.NotFoundHandler(), wt)
		if s.ReadHeaderTimeout <= 0 || s.ReadHeaderTimeout > 10*time.Second {
			t.Errorf("ReadHeaderTimeout %s", s.ReadHeaderTimeout)
		}
		if s.ReadTimeout <= 0 || s.IdleTimeout <= 0 || s.WriteTimeout <= 0 || s.MaxHeaderBytes <= 0 {
			t.Errorf("timeouts %s/%s/%s, max header bytes %d", s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
		}
		if wt > 0 && s.WriteTimeout != wt {
			t.Errorf("WriteTimeout %s, want %s", s.WriteTimeout, wt)
		}
	}
}

// TestRejectNonCanonical: a path with an empty, "." or ".." segment gets
// the server's own not-found answer, never a redirect; canonical paths, a
// trailing slash included, go through.
func TestRejectNonCanonical(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "through") })
	h := serve.RejectNonCanonical(mux, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "rejected", 404) })
	for _, tc := range []struct {
		target string
		want   int
	}{
		{"/", 200}, {"/a/b", 200}, {"/a/b/", 200}, {"/a%2F..%2Fb", 200}, {"/a/b?x=/../", 200},
		{"//a", 404}, {"/a//b", 404}, {"/a/./b", 404}, {"/a/../b", 404}, {"/..", 404}, {"/a/.", 404}, {"/a/..", 404},
		{"*", 404},
	} {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + tc.target + " HTTP/1.1\r\nHost: x\r\n\r\n")))
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("GET %s: %d %q, want %d", tc.target, rec.Code, rec.Body, tc.want)
		}
	}
}

// TestRunDrains: on ctx end Run turns readiness to draining, calls OnDrain
// once, lets the request in flight finish, and returns nil.
func TestRunDrains(t *testing.T) {
	ln, err := serve.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var health serve.Health
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	mux.Handle("/readyz", health.Readyz(nil))
	var drains atomic.Int32
	var out strings.Builder
	var outMu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, ln, mux, &health, serve.Options{Drain: 10 * time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: writerFunc(func(p []byte) (int, error) {
				outMu.Lock()
				defer outMu.Unlock()
				return out.Write(p)
			}), OnDrain: func() { drains.Add(1) }})
	}()
	base := "http://" + ln.Addr().String()
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(base + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz before the drain: %v %v", resp, err)
	}
	resp.Body.Close()
	got := make(chan string, 1)
	go func() {
		resp, err := hc.Get(base + "/slow")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(b)
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("waited 10s for the slow request to reach the handler")
	}
	cancel()
	waitFor(t, "readiness to turn to draining", func() bool { return health.Draining() })
	select {
	case err := <-done:
		t.Fatalf("Run returned %v with a request in flight", err)
	default:
	}
	close(release)
	if s := <-got; s != "done" {
		t.Errorf("in-flight request: %q, want it to finish", s)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waited 10s for Run to return after the drain")
	}
	if n := drains.Load(); n != 1 {
		t.Errorf("OnDrain called %d times", n)
	}
	outMu.Lock()
	defer outMu.Unlock()
	if !strings.HasPrefix(out.String(), serve.AnnouncePrefix+base) {
		t.Errorf("announce line %q", out.String())
	}
}

// TestRunDrainTimeout: a request that outlasts the drain is cut and Run
// says so.
func TestRunDrainTimeout(t *testing.T) {
	ln, err := serve.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, ln, h, nil, serve.Options{Drain: 100 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard})
	}()
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	reqDone := make(chan struct{})
	go func() {
		defer close(reqDone)
		if resp, err := hc.Get("http://" + ln.Addr().String() + "/"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "drain did not finish") {
			t.Errorf("Run: %v, want a drain timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waited 10s for Run to give up the drain")
	}
	<-reqDone
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// waitFor polls cond (a flag with no event to wait on) for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRunDrainDelay: during the drain delay the server still accepts new
// connections and serves them (readiness already draining); Run returns
// only after the delay.
func TestRunDrainDelay(t *testing.T) {
	ln, err := serve.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var health serve.Health
	mux := http.NewServeMux()
	mux.HandleFunc("/work", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "served") })
	mux.Handle("/readyz", health.Readyz(nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, ln, mux, &health, serve.Options{Drain: 5 * time.Second, DrainDelay: time.Hour,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard})
	}()
	base := "http://" + ln.Addr().String()
	cancel()
	waitFor(t, "readiness to turn to draining", func() bool { return health.Draining() })
	// A new connection (no keep-alive) is still accepted and served.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get(base + "/work")
	if err != nil {
		t.Fatalf("a call during the drain delay: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "served" {
		t.Errorf("a call during the drain delay: %q", b)
	}
	resp, err = hc.Get(base + "/readyz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz during the drain delay: %v %v, want 503", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v within its hour of drain delay", err)
	default:
	}
	// End it: a closed listener ends the delay (the serve error path).
	ln.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its listener closed")
	}
}

// TestWaitOK: the wait ends at the first 200, at the process's exit or at
// its bound, and its error names the tries and the last answer a try got
// (not the wait's own end cutting the last try short).
func TestWaitOK(t *testing.T) {
	exited := make(chan struct{})
	close(exited)
	for _, c := range []struct {
		name    string
		answers []int // status per try; 0: hang until the test ends; the last repeats
		timeout time.Duration
		exited  <-chan struct{}
		errHas  []string // "" when the wait must succeed
	}{
		{"200 after two 503", []int{503, 503, 200}, 10 * time.Second, nil, nil},
		// The two bounds that must pass still need a first 503 within
		// them (the error quotes it): 1.5 s, so a loaded machine cannot
		// cut that answer off. The rows run in parallel.
		{"503 until the bound", []int{503}, 1500 * time.Millisecond, nil, []string{"waited 1.5s", "tries, last HTTP 503"}},
		{"the last try cut short keeps the answer before it", []int{503, 0}, 1500 * time.Millisecond, nil, []string{"tries, last HTTP 503"}},
		{"the process exited", []int{503}, 10 * time.Second, exited, []string{"the process exited (1 tries, last HTTP 503)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				code := c.answers[min(i, len(c.answers)-1)]
				if code == 0 {
					select {
					case <-release:
					case <-r.Context().Done():
					}
					return
				}
				w.WriteHeader(code)
			}))
			defer srv.Close()
			defer close(release)
			err := serve.WaitOK(context.Background(), srv.URL+"/readyz", c.timeout, c.exited)
			if len(c.errHas) == 0 {
				if err != nil {
					t.Fatalf("WaitOK: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("WaitOK: nil, want an error with %q", c.errHas)
			}
			for _, h := range c.errHas {
				if !strings.Contains(err.Error(), h) {
					t.Errorf("error %q, want %q in it", err, h)
				}
			}
		})
	}
}
