package querier

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scaleproof/scaleproof/autoscaler/scheduler"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
	"github.com/scaleproof/scaleproof/autoscaler/worker"
)

// Defaults of a querier.
const (
	// DefaultWorkers is the number of workers pulling calls (the post's six).
	DefaultWorkers = scheduler.PostWorkersPerQuerier
	// DefaultReconnect is the wait before connecting again after a session
	// is lost or a connect fails.
	DefaultReconnect = 500 * time.Millisecond
	// MaxWorkers bounds Config.Workers.
	MaxWorkers = 1024
)

// Metric names a querier serves on GET /metrics.
const (
	MetricWorkers    = "scaleproof_querier_workers"      // gauge: workers pulling calls
	MetricBusy       = "scaleproof_querier_busy_workers" // gauge: workers running a call
	MetricCallsTotal = "scaleproof_querier_calls_total"  // counter: calls run and answered
	MetricConnected  = "scaleproof_querier_connected"    // gauge: 1 while a session is open
)

// Config configures a Querier.
type Config struct {
	// Scheduler is the scheduler's base URL, e.g. http://127.0.0.1:8080. Required.
	Scheduler string
	// ID names the querier in the scheduler's per-querier calls and in the
	// answers ("worked N ms on ID"); default worker.DefaultID().
	ID string
	// Workers is how many calls run at once; 0 means DefaultWorkers (1..MaxWorkers).
	Workers int
	// Work is how long a work call lasts when it names no "ms"; 0 means worker.DefaultWork.
	Work time.Duration
	// Wait holds a work call for d (see worker.Config.Wait); nil means a timer.
	// With CPUPerCall it is the sleep between the duty cycle's spins.
	Wait func(ctx context.Context, d time.Duration) error
	// CPUPerCall is a work call's CPU cost in millicores
	// (0..worker.MaxCPUPerCall): while a call runs it burns about that
	// much (worker.Burner's duty cycle), so the querier pod's CPU use
	// follows its busy workers. 0 (default): calls only sleep.
	CPUPerCall int
	// Client talks to the scheduler; nil means a client of its own. It must
	// not have a Timeout shorter than the scheduler's poll timeout.
	Client *http.Client
	// Reconnect is the wait between sessions; 0 means DefaultReconnect.
	Reconnect time.Duration
	// Logger receives the querier's log lines; nil means slog.Default().
	Logger *slog.Logger
}

// Querier pulls calls from a scheduler. Create it with New, start it with Run.
type Querier struct {
	cfg    Config
	base   *url.URL
	hc     *http.Client
	log    *slog.Logger
	work   *worker.Worker
	health serve.Health

	drainOnce sync.Once
	drainCh   chan struct{}
	cut       atomic.Pointer[context.Context] // the session's context: a work call ends with it
	busy      atomic.Int64
	connected atomic.Bool
	calls     prometheus.Counter
	reg       *prometheus.Registry
	handler   http.Handler
}

// New checks cfg and returns a querier.
func New(cfg Config) (*Querier, error) {
	u, err := url.Parse(cfg.Scheduler)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("querier: scheduler %q: want an http:// or https:// URL", cfg.Scheduler)
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Workers < 1 || cfg.Workers > MaxWorkers {
		return nil, fmt.Errorf("querier: workers %d: want 1..%d", cfg.Workers, MaxWorkers)
	}
	if cfg.CPUPerCall < 0 || cfg.CPUPerCall > worker.MaxCPUPerCall {
		return nil, fmt.Errorf("querier: cpu per call %d millicores: want 0..%d", cfg.CPUPerCall, worker.MaxCPUPerCall)
	}
	if cfg.ID == "" {
		cfg.ID = worker.DefaultID()
	}
	if cfg.Reconnect <= 0 {
		cfg.Reconnect = DefaultReconnect
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	q := &Querier{cfg: cfg, base: u, hc: cfg.Client, log: cfg.Logger.With("querier", cfg.ID), drainCh: make(chan struct{})}
	if q.hc == nil {
		q.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Workers + 2, IdleConnTimeout: 30 * time.Second}}
	}
	q.work = worker.New(worker.Config{ID: cfg.ID, MaxInflight: cfg.Workers, Work: cfg.Work, Wait: q.wait, Logger: cfg.Logger})
	q.initMetrics()
	q.handler = serve.RejectNonCanonical(serve.ProbeMux(&q.health, q.ready, promhttp.HandlerFor(q.reg, promhttp.HandlerOpts{})), http.NotFound)
	return q, nil
}

func (q *Querier) initMetrics() {
	q.reg = prometheus.NewRegistry()
	q.calls = prometheus.NewCounter(prometheus.CounterOpts{Name: MetricCallsTotal, Help: "Calls run and answered."})
	q.reg.MustRegister(q.calls,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: MetricWorkers, Help: "Workers pulling calls from the scheduler."},
			func() float64 { return float64(q.cfg.Workers) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: MetricBusy, Help: "Workers running a call."},
			func() float64 { return float64(q.Busy()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: MetricConnected, Help: "1 while a session with the scheduler is open."},
			func() float64 {
				if q.connected.Load() {
					return 1
				}
				return 0
			}),
	)
}

// wait holds a work call for d, cut short when the session is lost or Run's
// context ends (the MCP handler's own context does not carry the session's).
func (q *Querier) wait(ctx context.Context, d time.Duration) error {
	if p := q.cut.Load(); p != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(*p, cancel)
		defer stop()
	}
	if q.cfg.CPUPerCall > 0 {
		return worker.Burner{Millicores: q.cfg.CPUPerCall, Sleep: q.cfg.Wait}.Hold(ctx, d)
	}
	if q.cfg.Wait != nil {
		return q.cfg.Wait(ctx, d)
	}
	return worker.Sleep(ctx, d)
}

// Handler serves /readyz, /livez and /metrics.
func (q *Querier) Handler() http.Handler { return q.handler }

// Health is the readiness flag serve.Run turns to draining on SIGTERM.
func (q *Querier) Health() *serve.Health { return &q.health }

// ID is the querier's name.
func (q *Querier) ID() string { return q.cfg.ID }

// CPUPerCall is the millicores a running call burns (0: it only sleeps).
func (q *Querier) CPUPerCall() int { return q.cfg.CPUPerCall }

// Workers is the number of workers.
func (q *Querier) Workers() int { return q.cfg.Workers }

// Busy is the number of workers running a call now.
func (q *Querier) Busy() int { return int(q.busy.Load()) }

func (q *Querier) ready() error {
	if !q.connected.Load() {
		return errors.New("not connected to the scheduler")
	}
	return nil
}

// Drain stops pulling calls; the running ones finish and are answered, then
// the session ends and Run returns nil. Safe to call more than once.
func (q *Querier) Drain() {
	q.drainOnce.Do(func() {
		q.health.SetDraining()
		close(q.drainCh)
		q.log.Info("draining: no more calls pulled, running calls finish", "busy", q.Busy())
	})
}

func (q *Querier) draining() bool {
	select {
	case <-q.drainCh:
		return true
	default:
		return false
	}
}

// Run connects to the scheduler and pulls calls until Drain has finished
// (nil) or ctx ends (ctx's error: a hard stop, calls running are cut and
// the scheduler re-queues them). A lost session is opened again after
// Config.Reconnect.
func (q *Querier) Run(ctx context.Context) error {
	for {
		if q.draining() {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := q.session(ctx); err != nil {
			q.log.Info("session with the scheduler ended", "err", err.Error())
		}
		if q.draining() {
			return nil
		}
		t := time.NewTimer(q.cfg.Reconnect)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-q.drainCh:
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// session opens one session and runs the workers until it is lost, the
// querier drains (the workers finish their calls first) or ctx ends.
func (q *Querier) session(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q.cut.Store(&sctx)
	req, err := http.NewRequestWithContext(sctx, http.MethodGet,
		q.base.JoinPath(scheduler.PathConnect).String()+"?querier="+url.QueryEscape(q.cfg.ID), nil)
	if err != nil {
		return err
	}
	resp, err := q.hc.Do(req)
	if err != nil {
		q.hc.CloseIdleConnections()
		return fmt.Errorf("connect: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		// The next session dials anew: a kept-alive connection that got
		// an error answer may lead somewhere other than the scheduler (a
		// Service's ClusterIP dialled before kube-proxy routed it).
		q.hc.CloseIdleConnections()
		return fmt.Errorf("connect: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("connect: read hello: %w", err)
	}
	var hello scheduler.Hello
	if err := json.Unmarshal(line, &hello); err != nil || hello.Session == "" {
		return fmt.Errorf("connect: bad hello %q", strings.TrimSpace(string(line)))
	}
	q.connected.Store(true)
	defer q.connected.Store(false)
	log := q.log.With("session", hello.Session)
	log.Info("connected to the scheduler", "scheduler", q.base.String(), "workers", q.cfg.Workers)

	// The stream: a line at least every heartbeat, else the session is lost.
	lost := make(chan error, 1)
	go func() {
		hb := time.Duration(max(hello.HeartbeatMS, 100)) * time.Millisecond
		watchdog := time.AfterFunc(4*hb, cancel)
		defer watchdog.Stop()
		for {
			if _, err := br.ReadBytes('\n'); err != nil {
				lost <- fmt.Errorf("session stream: %w", err)
				cancel()
				return
			}
			watchdog.Reset(4 * hb)
		}
	}()

	// Pulling stops on drain or when the session is lost; a call already
	// pulled still runs and is answered in sctx, which only a lost session
	// or ctx cuts.
	pctx, stopPulling := context.WithCancel(sctx)
	defer stopPulling()
	go func() {
		select {
		case <-q.drainCh:
			// Leave rather than cut the polls: a call the scheduler hands
			// out meanwhile still reaches its worker and runs.
			if err := q.leave(sctx, hello.Session); err != nil {
				log.Info("leave failed, polls cut (the scheduler re-queues a call handed out meanwhile)", "err", err.Error())
				stopPulling()
			}
		case <-pctx.Done():
		}
	}()
	var wg sync.WaitGroup
	for range q.cfg.Workers {
		wg.Go(func() { q.pull(pctx, sctx, hello.Session, log) })
	}
	wg.Wait()
	cancel() // ends the stream: the scheduler sees the session end
	select {
	case err := <-lost:
		return err
	default:
		return ctx.Err()
	}
}

// pull is one worker: long-poll for a call, run it, answer, again.
func (q *Querier) pull(pctx, sctx context.Context, session string, log *slog.Logger) {
	for pctx.Err() == nil {
		a, gone, err := q.next(pctx, session)
		if gone {
			return
		}
		if err != nil {
			if pctx.Err() != nil {
				return
			}
			log.Info("poll failed", "err", err.Error())
			if worker.Sleep(pctx, q.cfg.Reconnect) != nil {
				return
			}
			continue
		}
		if a == nil {
			continue // 204: nothing within the poll timeout
		}
		q.busy.Add(1)
		ans := q.run(sctx, a)
		err = q.answer(sctx, session, a.Call, ans)
		q.busy.Add(-1)
		if err != nil {
			log.Info("answer not delivered (the scheduler re-queues or answers the call)", "call", a.Call, "err", err.Error())
			continue
		}
		q.calls.Inc()
	}
}

// leave tells the scheduler this session takes no more calls.
func (q *Querier) leave(ctx context.Context, session string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		q.base.JoinPath(scheduler.PathLeave).String()+"?session="+url.QueryEscape(session), nil)
	if err != nil {
		return err
	}
	resp, err := q.hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("leave: HTTP %d", resp.StatusCode)
	}
	return nil
}

// next long-polls the scheduler: an assignment, nil for none yet, or gone
// when the session is over.
func (q *Querier) next(ctx context.Context, session string) (*scheduler.Assignment, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		q.base.JoinPath(scheduler.PathNext).String()+"?session="+url.QueryEscape(session), nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := q.hc.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNoContent:
		return nil, false, nil
	case http.StatusGone:
		return nil, true, nil
	default:
		return nil, false, fmt.Errorf("poll: HTTP %d", resp.StatusCode)
	}
	var a scheduler.Assignment
	if err := json.NewDecoder(io.LimitReader(resp.Body, scheduler.MaxBodyBytes*2)).Decode(&a); err != nil {
		return nil, false, fmt.Errorf("poll: decode assignment: %w", err)
	}
	return &a, false, nil
}

// run serves one call with the work tool's MCP handler.
func (q *Querier) run(ctx context.Context, a *scheduler.Assignment) scheduler.Answer {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", bytes.NewReader(a.Body))
	for k, v := range a.Header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	q.work.Handler().ServeHTTP(rec, req)
	return scheduler.Answer{Status: rec.Code, Header: scheduler.AnswerHeaders(rec.Header()), Body: rec.Body.Bytes()}
}

// answer posts one call's answer to the scheduler.
func (q *Querier) answer(ctx context.Context, session, call string, a scheduler.Answer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		q.base.JoinPath(scheduler.PathAnswer).String()+"?session="+url.QueryEscape(session)+"&call="+url.QueryEscape(call),
		bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := q.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("answer: HTTP %d", resp.StatusCode)
	}
	return nil
}
