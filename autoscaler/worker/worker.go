package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

// Defaults and bounds of a worker.
const (
	// EnvMaxInflight names the environment variable holding the in-flight
	// limit (Ramen 0.7.5's autoscaling notes: RAMEN_MAX_INFLIGHT, default 32).
	EnvMaxInflight = "RAMEN_MAX_INFLIGHT"
	// DefaultMaxInflight is the in-flight limit when none is configured.
	DefaultMaxInflight = 32
	// DefaultWork is how long a work call lasts when it names no "ms".
	DefaultWork = 200 * time.Millisecond
	// MaxWork caps one work call; a larger "ms" is cut down to it.
	MaxWork = 60 * time.Second
	// MaxBodyBytes bounds a POST /mcp body (1 MiB); a larger one gets 413.
	MaxBodyBytes = 1 << 20
	// ToolName is the name of the MCP tool a worker serves.
	ToolName = "work"
	// RetryAfterSeconds is the Retry-After of a 429 at the in-flight limit.
	RetryAfterSeconds = 1
	// DefaultVersion is the version of a stable worker (Config.Version).
	DefaultVersion = "stable"
)

// Config configures a Worker. The zero value is usable: every field has a default.
type Config struct {
	// ID names the worker in results, errors and logs; default hostname-pid.
	ID string
	// Version names the build or configuration this worker runs, served as
	// the version label of MetricInfo: DefaultVersion for the stable
	// workers, e.g. "canary" for a zone's canary. "" means DefaultVersion.
	Version string
	// MaxInflight is the in-flight limit: admitted POST /mcp at once.
	// <= 0 means DefaultMaxInflight.
	MaxInflight int
	// Work is how long a work call lasts when it names no "ms"; 0 means
	// DefaultWork. Capped at MaxWork.
	Work time.Duration
	// BootDelay keeps /readyz at 503 until this long after New (a worker
	// that takes time to become ready, like a pod's startup).
	BootDelay time.Duration
	// Now is the clock for the boot delay; nil means time.Now.
	Now func() time.Time
	// Wait holds a work call for d. It must return early with ctx.Err() when
	// ctx ends. Nil means a timer. Tests replace it to hold calls on a channel.
	// With CPUPerCall it is the sleep between the duty cycle's spins.
	Wait func(ctx context.Context, d time.Duration) error
	// CPUPerCall is a work call's CPU cost in millicores (0..MaxCPUPerCall,
	// clamped): while a call is held it spins for CPUPerCall/1000 of each
	// BurnSlice and sleeps the rest (Burner), so the pod's CPU use follows
	// its in-flight calls, the HPA's CPU resource metric. 0 (default): the
	// call only sleeps.
	CPUPerCall int
	// Logger receives the worker's log lines; nil means slog.Default().
	Logger *slog.Logger
	// AdmitOverLimit is the planted bug faults.WorkerAdmitsOverLimit (the
	// self-test only): the admission check lets one call past MaxInflight,
	// as an off-by-one (in flight > limit instead of >=) would.
	AdmitOverLimit bool
}

// Worker is one worker process's HTTP surface. Create it with New.
type Worker struct {
	id      string
	version string
	limit   int
	work    time.Duration
	cpu     int // millicores a held call burns
	readyAt time.Time
	now     func() time.Time
	wait    func(ctx context.Context, d time.Duration) error
	log     *slog.Logger

	sem chan struct{} // one token per admitted POST /mcp
	// highWater is the most admitted POST /mcp held at once since New.
	highWater atomic.Int64
	health    serve.Health
	// failReady: FailReadiness is on (/readyz 503 while /mcp serves).
	failReady atomic.Bool

	reg     *prometheus.Registry
	calls   prometheus.Counter
	refused prometheus.Counter

	handler http.Handler
}

// New returns a worker configured by cfg (defaults filled in).
func New(cfg Config) *Worker {
	w := &Worker{
		id:      cfg.ID,
		version: cfg.Version,
		limit:   cfg.MaxInflight,
		work:    cfg.Work,
		now:     cfg.Now,
		wait:    cfg.Wait,
		log:     cfg.Logger,
	}
	if w.id == "" {
		w.id = DefaultID()
	}
	if w.version == "" {
		w.version = DefaultVersion
	}
	if w.limit <= 0 {
		w.limit = DefaultMaxInflight
	}
	if w.work <= 0 {
		w.work = DefaultWork
	}
	w.work = min(w.work, MaxWork)
	if w.now == nil {
		w.now = time.Now
	}
	if w.wait == nil {
		w.wait = Sleep
	}
	w.cpu = min(max(cfg.CPUPerCall, 0), MaxCPUPerCall)
	if w.cpu > 0 {
		w.wait = Burner{Millicores: w.cpu, Now: w.now, Sleep: w.wait}.Hold
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	w.log = w.log.With("worker", w.id)
	w.readyAt = w.now().Add(cfg.BootDelay)
	admits := w.limit
	if cfg.AdmitOverLimit {
		admits++ // the planted bug
	}
	w.sem = make(chan struct{}, admits)
	w.initMetrics()

	srv := mcp.NewServer(&mcp.Implementation{Name: "scaleproof-ref-worker", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolName,
		Description: "Holds the call for ms milliseconds (default set by the worker, at most 60000) and says which worker did it.",
	}, w.workTool)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: MaxBodyBytes})

	mux := serve.ProbeMux(&w.health, w.bootReady, promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{}))
	mux.Handle("/mcp", w.admit(mcpHandler))
	w.handler = serve.RejectNonCanonical(mux, http.NotFound)
	return w
}

// DefaultID is the worker name used when none is given: hostname-pid.
func DefaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// Handler serves /mcp, /metrics, /readyz and /livez.
func (w *Worker) Handler() http.Handler { return w.handler }

// ID is the worker's name.
func (w *Worker) ID() string { return w.id }

// Version returns the worker's version (Config.Version).
func (w *Worker) Version() string { return w.version }

// CPUPerCall is the millicores a held work call burns (0: it only sleeps).
func (w *Worker) CPUPerCall() int { return w.cpu }

// Limit is the in-flight limit.
func (w *Worker) Limit() int { return w.limit }

// InFlight is the number of admitted POST /mcp not yet finished.
func (w *Worker) InFlight() int { return len(w.sem) }

// HighWater is the most admitted POST /mcp the worker has held at once since
// it started (MetricInflightHighWater): at most Limit in a correct worker.
func (w *Worker) HighWater() int { return int(w.highWater.Load()) }

// noteInFlight raises the high-water mark to the in-flight count now.
func (w *Worker) noteInFlight() {
	n := int64(len(w.sem))
	for {
		hw := w.highWater.Load()
		if n <= hw || w.highWater.CompareAndSwap(hw, n) {
			return
		}
	}
}

// Health is the readiness flag serve.Run turns to draining on SIGTERM.
func (w *Worker) Health() *serve.Health { return &w.health }

// FailReadiness turns /readyz to 503 (and scaleproof_worker_ready to 0)
// while the worker keeps serving /mcp as before, as a worker whose
// readiness check fails under load (an overloaded or wedged dependency):
// the fault action "a worker whose readiness fails while it still answers
// calls" of the harness's local platform, which sends the worker process
// SignalFailReadiness (HandleReadinessSignals). PassReadiness undoes it; draining (SIGTERM) is
// separate and not undone.
func (w *Worker) FailReadiness() { w.failReady.Store(true) }

// PassReadiness ends FailReadiness: /readyz answers as it would without it.
func (w *Worker) PassReadiness() { w.failReady.Store(false) }

// Ready reports nil when /readyz answers 200, else why not.
func (w *Worker) Ready() error {
	if w.health.Draining() {
		return errors.New("draining")
	}
	return w.bootReady()
}

// bootReady is /readyz's check beside draining: the boot delay and FailReadiness.
func (w *Worker) bootReady() error {
	if w.failReady.Load() {
		return errors.New("readiness failed on purpose (a fault action of the harness)")
	}
	if left := w.readyAt.Sub(w.now()); left > 0 {
		return fmt.Errorf("booting, ready in %s", left.Round(time.Millisecond))
	}
	return nil
}

// admit enforces the body size and the in-flight limit on POST before next
// (the MCP handler) sees the request. Other methods go straight to next,
// which answers 405.
func (w *Worker) admit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(rw, r)
			return
		}
		body, status, msg := serve.ReadRPCBody(rw, r, MaxBodyBytes)
		if status != 0 {
			serve.WriteRPCError(rw, status, nil, CodeServerError, msg)
			return
		}
		if !json.Valid(body) {
			serve.WriteRPCError(rw, http.StatusBadRequest, nil, CodeParseError, "parse error: request body is not JSON")
			return
		}
		id := serve.RequestID(body)
		select {
		case w.sem <- struct{}{}:
			w.noteInFlight()
		default:
			w.refused.Inc()
			rw.Header().Set("Retry-After", fmt.Sprint(RetryAfterSeconds))
			serve.WriteRPCError(rw, http.StatusTooManyRequests, id, CodeServerError,
				fmt.Sprintf("worker %s at its in-flight limit (%d)", w.id, w.limit))
			return
		}
		defer func() {
			<-w.sem
			w.calls.Inc()
		}()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(rw, r)
	})
}

// Sleep waits d, or until ctx ends: then it returns ctx.Err() (else nil).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
