package edge

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

// Defaults and bounds of an edge.
const (
	// DefaultInterval is how often discovery is refreshed.
	DefaultInterval = 500 * time.Millisecond
	// DefaultUpstreamTimeout bounds one forwarded call, response body included.
	DefaultUpstreamTimeout = 120 * time.Second
	// MaxBodyBytes bounds a request body (1 MiB); a larger one gets 413.
	MaxBodyBytes = 1 << 20
	// RetryAfterSeconds is the Retry-After of the edge's own 503.
	RetryAfterSeconds = 1
	// CodeServerError is the JSON-RPC error code of every error the edge makes.
	CodeServerError = -32000
)

// Config configures an Edge.
type Config struct {
	// Discovery lists the zones and their workers. Required.
	Discovery Discovery
	// Interval between discovery refreshes in Run; 0 means DefaultInterval.
	Interval time.Duration
	// UpstreamTimeout bounds one forwarded call; 0 means DefaultUpstreamTimeout.
	UpstreamTimeout time.Duration
	// Transport carries forwarded calls; nil means NewTransport().
	Transport http.RoundTripper
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// InflightMaxAge is the window of MetricInflightRequests' quantiles;
	// 0 means InflightMaxAge (1 min). The quick profile divides it by 10.
	InflightMaxAge time.Duration
	// Faults are planted bugs (autoscaler/faults) for the self-test; nil in
	// every real run. The edge honours edge-resend (proxy.go) and
	// edge-route-unready (table.go).
	Faults faults.Set
}

// Edge routes MCP calls to workers. Create it with New, serve Handler, and
// run Run (discovery) for as long as it serves.
type Edge struct {
	disc     Discovery
	interval time.Duration
	timeout  time.Duration
	rt       http.RoundTripper
	log      *slog.Logger

	resend     bool // the edge-resend fault is on
	table      *table
	health     serve.Health
	discovered atomic.Bool // a discovery has succeeded once
	m          *metrics

	routeUnready bool // the edge-route-unready fault is on

	handler http.Handler
}

// New returns an edge configured by cfg. It errors when cfg.Discovery is nil.
func New(cfg Config) (*Edge, error) {
	if cfg.Discovery == nil {
		return nil, errors.New("edge: no discovery configured")
	}
	e := &Edge{
		disc:     cfg.Discovery,
		interval: cfg.Interval,
		timeout:  cfg.UpstreamTimeout,
		rt:       cfg.Transport,
		log:      cfg.Logger,
		table:    newTable(),
		m:        newMetrics(cfg.InflightMaxAge),
		resend:   cfg.Faults.On(faults.EdgeResend),

		routeUnready: cfg.Faults.On(faults.EdgeRouteUnready),
	}
	if e.interval <= 0 {
		e.interval = DefaultInterval
	}
	if e.timeout <= 0 {
		e.timeout = DefaultUpstreamTimeout
	}
	if e.rt == nil {
		e.rt = NewTransport()
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	mux := serve.ProbeMux(&e.health, e.discoveredOnce, promhttp.HandlerFor(e.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/g/{group}/z/{zone}/mcp", e.serveMCP)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeRPCError(w, http.StatusNotFound, nil, "no route for "+r.URL.Path+
			" (calls go to POST /g/{group}/z/{zone}/mcp)")
	})
	e.handler = serve.RejectNonCanonical(mux, func(w http.ResponseWriter, r *http.Request) {
		writeRPCError(w, http.StatusNotFound, nil, "no route for "+r.URL.Path+
			" (not a canonical path; calls go to POST /g/{group}/z/{zone}/mcp)")
	})
	return e, nil
}

// NewTransport returns the transport the edge shares across workers: keeps
// up to 256 idle connections per worker (closed after 30 s idle), dials within 5 s, no proxy, no
// compression (bodies pass unchanged), HTTP/1.1.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second, // below the workers' 90 s idle timeout, so the edge rarely reuses a connection the worker is closing
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
}

// Handler serves the routes listed in the package doc.
func (e *Edge) Handler() http.Handler { return e.handler }

// Health is the readiness flag serve.Run turns to draining on SIGTERM.
func (e *Edge) Health() *serve.Health { return &e.health }

func (e *Edge) discoveredOnce() error {
	if !e.discovered.Load() {
		return errors.New("no discovery has succeeded yet")
	}
	return nil
}
