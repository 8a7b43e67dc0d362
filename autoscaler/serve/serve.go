// Package serve runs the reference system's HTTP servers (console, worker,
// edge) the same way: listen (port 0 allowed), announce the bound address on
// stdout, serve with slow-client timeouts, and on SIGTERM/SIGINT turn /readyz
// to 503, drain in-flight requests up to a drain timeout, and return.
//
// Announce line (one line on stdout, read by the local platform):
//
//	scaleproof-ref listening http://127.0.0.1:34567
//
// Must not import other packages of this module.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// AnnouncePrefix starts the line a server prints on stdout once it listens.
const AnnouncePrefix = "scaleproof-ref listening "

// Options configure Run.
type Options struct {
	Addr    string        // listen address, e.g. "127.0.0.1:0"
	Drain   time.Duration // how long in-flight requests may finish after SIGTERM
	Logger  *slog.Logger
	Stdout  io.Writer // where the announce line goes; os.Stdout when nil
	OnDrain func()    // called once when draining starts (after readyz turns 503)
	// DrainDelay keeps the listener open and serving this long after
	// SIGTERM, /readyz already 503, before the drain closes it: the time a
	// load balancer (the edge's discovery, kube-proxy) takes to stop sending
	// new calls here. Calls that arrive meanwhile are served, not refused.
	DrainDelay time.Duration
	// WriteTimeout bounds a whole response; 0 means 5 minutes. Servers with
	// long calls (the worker's work tool) must keep it above their longest call.
	WriteTimeout time.Duration
}

// Health is a readiness flag served as /readyz and /livez.
type Health struct{ draining atomic.Bool }

// Draining reports whether the server is draining.
func (h *Health) Draining() bool { return h.draining.Load() }

// SetDraining turns /readyz to 503.
func (h *Health) SetDraining() { h.draining.Store(true) }

// Readyz answers 200 "ok" or 503 "draining" (and 503 when extra returns an error).
func (h *Health) Readyz(extra func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.draining.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		if extra != nil {
			if err := extra(); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = io.WriteString(w, "ok\n")
	}
}

// Livez answers 200 while the process runs.
func Livez(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }

// ProbeMux is a new mux with the routes every server has: GET /metrics
// (metrics), GET /readyz (h.Readyz(ready)) and GET /livez (Livez).
func ProbeMux(h *Health, ready func() error, metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.Handle("GET /readyz", h.Readyz(ready))
	mux.HandleFunc("GET /livez", Livez)
	return mux
}

// RejectNonCanonical answers with notFound a request whose path is not in
// canonical form (an empty, "." or ".." segment), where http.ServeMux would
// answer 307 with an HTML body pointing at the cleaned path: the reference
// servers answer JSON, and a client that follows the redirect would send
// its PUT or POST to another path than the one it named.
func RejectNonCanonical(h http.Handler, notFound http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			if p := r.URL.EscapedPath(); p != cleanPath(p) {
				notFound(w, r)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// cleanPath is the canonical form http.ServeMux redirects to: rooted,
// path.Clean'ed, a trailing slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			return p
		}
		np += "/"
	}
	return np
}

// Listen opens a TCP listener on addr.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}

// NewServer returns an http.Server with the slow-client timeouts every
// reference server uses (slow-client timeouts on every server).
func NewServer(h http.Handler, writeTimeout time.Duration) *http.Server {
	if writeTimeout <= 0 {
		writeTimeout = 5 * time.Minute
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// Run serves h on ln until ctx ends or SIGTERM/SIGINT arrives, then drains.
// It prints the announce line first. It returns nil after a clean drain.
func Run(ctx context.Context, ln net.Listener, h http.Handler, health *Health, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	out := o.Stdout
	if out == nil {
		out = os.Stdout
	}
	srv := NewServer(h, o.WriteTimeout)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ResumeSafe(ln)) }()
	fmt.Fprintf(out, "%shttp://%s\n", AnnouncePrefix, ln.Addr())

	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigc)

	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	case s := <-sigc:
		log.Info("signal received, draining", "signal", s.String(), "drain", o.Drain.String())
	}
	if health != nil {
		health.SetDraining()
	}
	if o.OnDrain != nil {
		o.OnDrain()
	}
	if o.DrainDelay > 0 {
		t := time.NewTimer(o.DrainDelay)
		select {
		case <-t.C:
		case err := <-errc:
			t.Stop()
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return fmt.Errorf("serve: %w", err)
		}
	}
	drain := o.Drain
	if drain <= 0 {
		drain = time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("drain did not finish within %s: %w", drain, err)
	}
	log.Info("drained, exiting")
	return nil
}

// WaitOK polls url (every 100 ms, each try bounded by 2 s) until it answers
// 200, the whole wait is past timeout, ctx ends, or exited is closed (the
// process behind url died; nil never closes). The error names the URL, the
// number of tries and the last answer (that of the last try the wait's end
// did not cut short, when there was one).
func WaitOK(ctx context.Context, url string, timeout time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var last error
	for tries := 1; ; tries++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", url, err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-exited:
			return fmt.Errorf("waited for %s to answer 200: the process exited (%d tries, last %v)", url, tries, last)
		case <-ctx.Done():
			return fmt.Errorf("waited %s for %s to answer 200: %d tries, last %v", timeout, url, tries, last)
		case <-t.C:
		}
	}
}
