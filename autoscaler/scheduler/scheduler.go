package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

// Defaults and bounds of a scheduler.
const (
	// DefaultMaxQueue bounds the queue: calls waiting for a querier beyond
	// it are refused with 429 (Loki's per-tenant bound on outstanding
	// requests plays the same part).
	DefaultMaxQueue = 256
	// DefaultSampleEvery is how often the in-flight count is observed into
	// the summary (Loki's and Cortex's schedulers: every 250 ms).
	DefaultSampleEvery = 250 * time.Millisecond
	// DefaultWindow is the span the summary's quantiles cover (Loki's and
	// Cortex's schedulers: the last 60 s).
	DefaultWindow = time.Minute
	// DefaultPollTimeout bounds one worker's long poll; it then gets 204 and polls again.
	DefaultPollTimeout = 15 * time.Second
	// DefaultHeartbeat is the period of a session's heartbeat lines.
	DefaultHeartbeat = 2 * time.Second
	// DefaultMaxCallTime bounds a call from enqueue to answer; past it the caller gets 504.
	DefaultMaxCallTime = 2 * time.Minute
	// MaxAttempts is how many queriers a call is handed to: a call whose
	// querier goes away while running it is re-queued once (at the front);
	// if the second querier goes away too, the caller gets 503 with a
	// JSON-RPC error naming both. A call is never dropped silently.
	MaxAttempts = 2
	// MaxBodyBytes bounds a POST /mcp body (1 MiB); a larger one gets 413.
	MaxBodyBytes = 1 << 20
	// MaxAnswerBytes bounds a POST /querier/answer body.
	MaxAnswerBytes = 8 << 20
)

// quantiles are the quantiles the in-flight summary serves.
var quantiles = []float64{0.5, 0.75, 0.99}

var querierNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Config configures a Scheduler. The zero value is usable.
type Config struct {
	// MaxQueue bounds the calls waiting for a querier; <= 0 means DefaultMaxQueue.
	MaxQueue int
	// SampleEvery is the period Run observes the in-flight count at; <= 0
	// means DefaultSampleEvery.
	SampleEvery time.Duration
	// Window is the span of the summary's quantiles; <= 0 means DefaultWindow.
	Window time.Duration
	// PollTimeout bounds a worker's long poll; <= 0 means DefaultPollTimeout.
	PollTimeout time.Duration
	// Heartbeat is a session's heartbeat period; <= 0 means DefaultHeartbeat.
	Heartbeat time.Duration
	// MaxCallTime bounds a call from enqueue to answer; <= 0 means DefaultMaxCallTime.
	MaxCallTime time.Duration
	// Now is the clock of the in-flight samples; nil means time.Now.
	Now func() time.Time
	// Logger receives the scheduler's log lines; nil means slog.Default().
	Logger *slog.Logger
}

// Stats is a snapshot of the scheduler's state.
type Stats struct {
	Queued    int // calls waiting in the queue
	Running   int // calls handed to a querier and not yet answered
	Queriers  int // open querier sessions
	Leaving   int // open sessions whose querier drains: its polls get 410, it takes no more calls
	Requeued  int // calls re-queued after their querier went away (ever)
	Failed    int // calls answered with an error after their second querier went away (ever)
	Refused   int // calls refused with 429, queue full (ever)
	Abandoned int // calls whose caller left before the answer (ever)
}

// Inflight is Queued + Running: the post's "inflight requests".
func (s Stats) Inflight() int { return s.Queued + s.Running }

type call struct {
	id      string
	seq     uint64
	header  http.Header
	body    json.RawMessage
	rpcID   json.RawMessage
	attempt int
	session *session
	tried   []string // queriers it was handed to
	done    chan Answer
}

type session struct {
	id      string
	querier string
	calls   map[string]*call
	leaving bool          // the querier drains: its polls get 410, no more calls
	closed  chan struct{} // closed when the scheduler ends the session
}

// Scheduler holds the queue and the querier sessions. Create it with New.
type Scheduler struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	queue    *Queue[*call]
	running  map[string]*call
	sessions map[string]*session
	changed  chan struct{} // closed and replaced on every change of the state
	seq      uint64
	stats    Stats
	draining bool
	closed   bool
	window   Window

	health  serve.Health
	reg     *prometheus.Registry
	perQ    *prometheus.CounterVec
	handler http.Handler
}

// New returns a scheduler configured by cfg (defaults filled in).
func New(cfg Config) *Scheduler {
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.SampleEvery <= 0 {
		cfg.SampleEvery = DefaultSampleEvery
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.MaxCallTime <= 0 {
		cfg.MaxCallTime = DefaultMaxCallTime
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Scheduler{
		cfg:      cfg,
		log:      cfg.Logger,
		queue:    NewQueue[*call](cfg.MaxQueue),
		running:  map[string]*call{},
		sessions: map[string]*session{},
		changed:  make(chan struct{}),
		window:   Window{Span: cfg.Window},
	}
	s.initMetrics()
	mux := serve.ProbeMux(&s.health, nil, promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/mcp", s.serveMCP)
	mux.HandleFunc("GET "+PathConnect, s.serveConnect)
	mux.HandleFunc("POST "+PathNext, s.serveNext)
	mux.HandleFunc("POST "+PathAnswer, s.serveAnswer)
	mux.HandleFunc("POST "+PathLeave, s.serveLeave)
	s.handler = serve.RejectNonCanonical(mux, http.NotFound)
	return s
}

// Handler serves the scheduler's HTTP surface (see the package doc).
func (s *Scheduler) Handler() http.Handler { return s.handler }

// Health is the readiness flag serve.Run turns to draining on SIGTERM.
func (s *Scheduler) Health() *serve.Health { return &s.health }

// Limit is the queue's bound.
func (s *Scheduler) Limit() int { return s.cfg.MaxQueue }

// Stats returns a snapshot of the state.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Queued, st.Running, st.Queriers = s.queue.Len(), len(s.running), len(s.sessions)
	for _, ss := range s.sessions {
		if ss.leaving {
			st.Leaving++
		}
	}
	return st
}

// Changed returns a channel closed at the next change of the state (a call
// enqueued, handed out, answered, re-queued; a session opened or closed).
// Tests wait on it instead of sleeping.
func (s *Scheduler) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// changedLocked wakes everyone waiting on the state.
func (s *Scheduler) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Sample observes the in-flight count (queued + running) into the summary
// at Config.Now. Run calls it every Config.SampleEvery.
func (s *Scheduler) Sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window.Observe(s.cfg.Now(), float64(s.queue.Len()+len(s.running)))
}

// Run samples the in-flight count every Config.SampleEvery until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.SampleEvery)
	defer t.Stop()
	s.Sample()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Sample()
		}
	}
}

// Drain turns /readyz to 503 and refuses new calls (503, Retry-After: 1),
// lets the queued and running calls be answered until ctx ends, then ends
// every querier session (their calls still running are answered 503) so
// that the HTTP server can shut down. It returns ctx's error when calls were
// still in flight at the end.
func (s *Scheduler) Drain(ctx context.Context) error {
	s.health.SetDraining()
	s.mu.Lock()
	s.draining = true
	s.changedLocked()
	s.mu.Unlock()
	var err error
	for {
		s.mu.Lock()
		n, ch := s.queue.Len()+len(s.running), s.changed
		s.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-ch:
			continue
		case <-ctx.Done():
			err = fmt.Errorf("drain: %d calls still in flight: %w", n, ctx.Err())
		}
		break
	}
	s.Close()
	return err
}

// Close ends every querier session and refuses new ones; calls still
// queued or running are answered 503.
func (s *Scheduler) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed, s.draining = true, true
	for {
		c, ok := s.queue.Pop()
		if !ok {
			break
		}
		c.done <- errorAnswer(http.StatusServiceUnavailable, c.rpcID, CodeServerError, "scheduler shutting down", true)
	}
	for _, ss := range s.sessions {
		s.endSessionLocked(ss, false)
	}
	s.changedLocked()
}

// serveMCP enqueues one call and waits for its answer.
func (s *Scheduler) serveMCP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeAnswer(w, errorAnswer(http.StatusMethodNotAllowed, nil, CodeServerError, "method not allowed: POST /mcp only", false))
		return
	}
	body, status, msg := serve.ReadRPCBody(w, r, MaxBodyBytes)
	if status != 0 {
		writeAnswer(w, errorAnswer(status, nil, CodeServerError, msg, false))
		return
	}
	if !json.Valid(body) {
		writeAnswer(w, errorAnswer(http.StatusBadRequest, nil, CodeParseError, "parse error: request body is not JSON", false))
		return
	}
	c := &call{header: pick(r.Header, forwardRequestHeaders), body: body, rpcID: serve.RequestID(body), done: make(chan Answer, 1)}

	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		writeAnswer(w, errorAnswer(http.StatusServiceUnavailable, c.rpcID, CodeServerError, "scheduler draining", true))
		return
	}
	s.seq++
	c.seq, c.id = s.seq, "c"+strconv.FormatUint(s.seq, 10)
	if err := s.queue.Push(c); err != nil {
		s.stats.Refused++
		s.mu.Unlock()
		writeAnswer(w, errorAnswer(http.StatusTooManyRequests, c.rpcID, CodeServerError,
			fmt.Sprintf("scheduler queue full (%d calls waiting for a querier)", s.queue.Limit()), true))
		return
	}
	s.changedLocked()
	s.mu.Unlock()

	t := time.NewTimer(s.cfg.MaxCallTime)
	defer t.Stop()
	select {
	case a := <-c.done:
		writeAnswer(w, a)
	case <-r.Context().Done():
		s.abandon(c)
	case <-t.C:
		s.abandon(c)
		select {
		case a := <-c.done: // answered meanwhile
			writeAnswer(w, a)
		default:
			writeAnswer(w, errorAnswer(http.StatusGatewayTimeout, c.rpcID, CodeServerError,
				fmt.Sprintf("no answer within %s", s.cfg.MaxCallTime), false))
		}
	}
}

// abandon takes a call whose caller left (or timed out) out of the queue
// or out of its session: its answer, if one comes, is dropped.
func (s *Scheduler) abandon(c *call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	removed := s.queue.Remove(c)
	if _, ok := s.running[c.id]; ok {
		delete(s.running, c.id)
		delete(c.session.calls, c.id)
		removed = true
	}
	if removed {
		s.stats.Abandoned++
		s.changedLocked()
	}
}

// serveConnect holds a querier's session open until the querier leaves or
// the scheduler closes; then the session's calls are re-queued once.
func (s *Scheduler) serveConnect(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("querier")
	if !querierNameRE.MatchString(name) {
		http.Error(w, fmt.Sprintf("querier %q: want 1 to 63 letters, digits, '.', '_' or '-'", name), http.StatusBadRequest)
		return
	}
	rc := http.NewResponseController(w)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "scheduler shutting down", http.StatusServiceUnavailable)
		return
	}
	s.seq++
	ss := &session{id: "s" + strconv.FormatUint(s.seq, 10), querier: name, calls: map[string]*call{}, closed: make(chan struct{})}
	s.sessions[ss.id] = ss
	s.changedLocked()
	s.mu.Unlock()
	s.log.Info("querier connected", "querier", name, "session", ss.id)
	defer func() {
		s.mu.Lock()
		s.endSessionLocked(ss, true)
		s.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	hello, _ := json.Marshal(Hello{Session: ss.id, HeartbeatMS: s.cfg.Heartbeat.Milliseconds()})
	write := func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.Heartbeat * 3))
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if write(append(hello, '\n')) != nil {
		return
	}
	t := time.NewTicker(s.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ss.closed:
			return
		case <-t.C:
			if write([]byte("{}\n")) != nil {
				return
			}
		}
	}
}

// endSessionLocked removes a session; each call it holds goes back to the
// front of the queue (in its original order) if it has an attempt left,
// else it is answered 503. requeue false answers them all 503 (closing).
func (s *Scheduler) endSessionLocked(ss *session, requeue bool) {
	if _, ok := s.sessions[ss.id]; !ok {
		return
	}
	delete(s.sessions, ss.id)
	select {
	case <-ss.closed:
	default:
		close(ss.closed)
	}
	held := make([]*call, 0, len(ss.calls))
	for _, c := range ss.calls {
		held = append(held, c)
	}
	slices.SortFunc(held, func(a, b *call) int { return int(b.seq) - int(a.seq) }) // newest first: PushFront keeps FIFO
	for _, c := range held {
		delete(s.running, c.id)
		c.session = nil
		if requeue && c.attempt < MaxAttempts && !s.closed {
			s.queue.PushFront(c)
			s.stats.Requeued++
			s.log.Info("querier went away mid-call, call re-queued", "querier", ss.querier, "session", ss.id, "call", c.id, "attempt", c.attempt)
			continue
		}
		s.stats.Failed++
		msg := fmt.Sprintf("querier %s went away while running the call (queriers tried: %v)", ss.querier, c.tried)
		if !requeue || s.closed {
			msg = "scheduler shutting down while querier " + ss.querier + " ran the call"
		}
		s.log.Info("call failed", "querier", ss.querier, "session", ss.id, "call", c.id, "attempt", c.attempt, "reason", msg)
		c.done <- errorAnswer(http.StatusServiceUnavailable, c.rpcID, CodeServerError, msg, true)
	}
	ss.calls = nil
	s.changedLocked()
	s.log.Info("querier disconnected", "querier", ss.querier, "session", ss.id, "calls_back", len(held))
}

// serveNext hands the front call to a worker of a session, waiting up to
// Config.PollTimeout for one.
func (s *Scheduler) serveNext(w http.ResponseWriter, r *http.Request) {
	sid := r.URL.Query().Get("session")
	t := time.NewTimer(s.cfg.PollTimeout)
	defer t.Stop()
	for {
		s.mu.Lock()
		ss, ok := s.sessions[sid]
		if !ok || ss.leaving {
			s.mu.Unlock()
			http.Error(w, "session "+strconv.Quote(sid)+" is gone: connect again", http.StatusGone)
			return
		}
		if c, ok := s.queue.Pop(); ok {
			c.attempt++
			c.session = ss
			c.tried = append(c.tried, ss.querier)
			ss.calls[c.id] = c
			s.running[c.id] = c
			s.changedLocked()
			s.mu.Unlock()
			b, _ := json.Marshal(Assignment{Call: c.id, Attempt: c.attempt, Header: c.header, Body: c.body})
			w.Header().Set("Content-Type", "application/json")
			if _, err := w.Write(b); err != nil {
				s.giveBack(ss, c)
			}
			return
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ss.closed:
			http.Error(w, "session "+strconv.Quote(sid)+" is gone: connect again", http.StatusGone)
			return
		case <-r.Context().Done():
			return
		case <-t.C:
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
}

// serveLeave marks a session as leaving (its querier drains): its polls
// end with 410 and it gets no more calls; the calls it runs are still
// answered through it.
func (s *Scheduler) serveLeave(w http.ResponseWriter, r *http.Request) {
	sid := r.URL.Query().Get("session")
	s.mu.Lock()
	ss, ok := s.sessions[sid]
	if ok {
		ss.leaving = true
		s.changedLocked()
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, "session "+strconv.Quote(sid)+" is gone", http.StatusGone)
		return
	}
	s.log.Info("querier leaving", "querier", ss.querier, "session", sid)
	w.WriteHeader(http.StatusNoContent)
}

// giveBack puts a call whose hand-over failed back at the front, the
// attempt not counted.
func (s *Scheduler) giveBack(ss *session, c *call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.session != ss {
		return
	}
	delete(s.running, c.id)
	delete(ss.calls, c.id)
	c.session, c.attempt, c.tried = nil, c.attempt-1, c.tried[:len(c.tried)-1]
	s.queue.PushFront(c)
	s.changedLocked()
}

// serveAnswer delivers a worker's answer to the caller waiting for it.
func (s *Scheduler) serveAnswer(w http.ResponseWriter, r *http.Request) {
	sid, cid := r.URL.Query().Get("session"), r.URL.Query().Get("call")
	var a Answer
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxAnswerBytes)).Decode(&a); err != nil {
		http.Error(w, "answer: "+err.Error(), http.StatusBadRequest)
		return
	}
	if a.Status < 100 || a.Status > 599 {
		http.Error(w, fmt.Sprintf("answer status %d: want 100..599", a.Status), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	c, ok := s.running[cid]
	if !ok || c.session == nil || c.session.id != sid {
		s.mu.Unlock()
		http.Error(w, "call "+strconv.Quote(cid)+" is not held by session "+strconv.Quote(sid), http.StatusNotFound)
		return
	}
	querier := c.session.querier
	delete(s.running, cid)
	delete(c.session.calls, cid)
	c.session = nil
	c.done <- a
	s.changedLocked()
	s.mu.Unlock()
	s.perQ.WithLabelValues(querier).Inc()
	w.WriteHeader(http.StatusNoContent)
}
