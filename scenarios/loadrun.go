package scenarios

import (
	"context"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
)

// loadRun is one load phase of a scenario: VUs of MCP tools/call through the
// edge against the scenario's zone, or (s nil) a target scenario's load
// against the target's load URL (EngineLoad). It is the TargetLoad of a
// target scenario too: one load handle for both engines.
type loadRun struct {
	s        *Scope // nil for a target scenario's load
	m        *load.Metrics
	stopCh   chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	vus      int // constant VUs, an arrival-rate load's max VUs (0 for a staged profile)
	mu       sync.Mutex
	err      error
	ended    time.Time // when Stop was called or the load ran its course
	// sharded loads (loadshards.go): the VUs planned, and every shard's fate
	shards *shardedLoad
}

// metrics is the load's Metrics: the engine's while it runs here; for a
// sharded load, empty until the shards' results are merged.
func (l *loadRun) metrics() *load.Metrics {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m
}

// startLoad runs profile p against the scope's zone through the edge. Calls
// are `tools/call work {"ms": workMS}`.
func startLoad(ctx context.Context, e *Env, s *Scope, p load.Profile, workMS int) *loadRun {
	if e.Shards > 1 && e.Sharder != nil {
		return startShardedLoad(ctx, e, s, p, workMS)
	}
	return startLoadAt(ctx, e.HTTP, s, p, s.MCPURL(), workMS)
}

// startLoadAt runs profile p in this process against url (an MCP endpoint:
// the edge's route, or one worker's own /mcp).
func startLoadAt(ctx context.Context, hc *http.Client, s *Scope, p load.Profile, url string, workMS int) *loadRun {
	vus := 0
	if p.Executor == load.ExecutorConstantVUs {
		vus = p.VUs
	}
	return startEngine(ctx, hc, s, url, workMS, vus, func(ctx context.Context, exec load.Exec, opts ...load.Option) error {
		_, err := load.Run(ctx, p, exec, opts...)
		return err
	})
}

// startArrivalAt runs open-model profile p (k6's arrival-rate executors) in
// this process against url; the load's VUs, as the contract facts read
// them, are the most it may hold in flight (p.MaxVUs).
func startArrivalAt(ctx context.Context, e *Env, s *Scope, p load.ArrivalProfile, url string, workMS int) *loadRun {
	return startEngine(ctx, e.HTTP, s, url, workMS, max(p.MaxVUs, p.PreAllocatedVUs), func(ctx context.Context, exec load.Exec, opts ...load.Option) error {
		_, err := load.RunArrival(ctx, p, exec, opts...)
		return err
	})
}

// EngineLoad runs lp in this process with the load engine: `tools/call work
// {"ms": workMS}` to {baseURL}/mcp.
func EngineLoad(ctx context.Context, hc *http.Client, baseURL string, lp load.Profile, workMS int) TargetLoad {
	return startLoadAt(ctx, hc, nil, lp, strings.TrimRight(baseURL, "/")+"/mcp", workMS)
}

// startEngine starts run (one of the load engine's executors) on a
// goroutine with `tools/call work {"ms": workMS}` against url, recording
// into the loadRun's Metrics and stopping at its Stop.
func startEngine(ctx context.Context, hc *http.Client, s *Scope, url string, workMS, vus int,
	run func(context.Context, load.Exec, ...load.Option) error) *loadRun {
	exec := load.MCPToolCall(hc, url, "work", map[string]any{"ms": workMS}, nil)
	l := &loadRun{s: s, m: load.NewMetrics(), stopCh: make(chan struct{}), done: make(chan struct{}), vus: vus}
	go func() {
		defer close(l.done)
		err := run(ctx, exec, load.WithMetrics(l.m), load.WithStop(l.stopCh))
		l.mu.Lock()
		l.err = err
		if l.ended.IsZero() {
			l.ended = time.Now()
		}
		l.mu.Unlock()
	}()
	return l
}

// Stop ends the load now: no new call starts, calls in flight get the
// profile's gracefulStop to finish.
func (l *loadRun) Stop() {
	l.stopOnce.Do(func() {
		l.mu.Lock()
		if l.ended.IsZero() {
			l.ended = time.Now()
		}
		l.mu.Unlock()
		close(l.stopCh)
	})
}

// Start is when the load's first VU started (WorldLoad): a sharded load's
// agreed start, else the engine's.
func (l *loadRun) Start() time.Time {
	if l.shards != nil {
		return l.shards.start
	}
	return l.metrics().Start()
}

// window is the load as the contract facts see it (contract.go).
func (l *loadRun) window() LoadWindow {
	m := l.metrics()
	l.mu.Lock()
	w := LoadWindow{Start: m.Start(), End: l.ended, VUs: l.vus}
	l.mu.Unlock()
	for _, sec := range m.Seconds() {
		for len(w.OK) < sec.Offset {
			w.OK = append(w.OK, 0)
		}
		w.OK = append(w.OK, sec.Classes[load.ClassOK])
	}
	return w
}

// Wait waits until the load has ended.
func (l *loadRun) Wait() { <-l.done }

// Done reports whether the load has ended.
func (l *loadRun) Done() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// InFlight is the calls started and not yet answered now.
func (l *loadRun) InFlight() int64 { return l.metrics().Snapshot().InFlight }

// VUs is the VUs alive now.
func (l *loadRun) VUs() int { return l.metrics().Snapshot().VUs }

// Err is the load's error (nil when it ran its course or was stopped).
func (l *loadRun) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func callsOf(t map[load.Class]int64) reports.Calls {
	return reports.Calls{
		OK: t[load.ClassOK], TooMany: t[load.Class429], Other4xx: t[load.Class4xx], Server5xx: t[load.Class5xx],
		JSONRPCError: t[load.ClassJSONRPCError], BadResponse: t[load.ClassBadResponse],
		Transport: t[load.ClassTransport], Interrupted: t[load.ClassInterrupted],
	}
}

// Calls counts the load's answers by class.
func (l *loadRun) Calls() reports.Calls { return callsOf(l.metrics().Totals()) }

// reasons lists what the load's calls of class c answered, the most
// frequent first (for a sharded load, once its shards' results are merged).
func (l *loadRun) reasons(c load.Class) []load.ErrorCount { return l.metrics().Errors(c) }

func (l *loadRun) snapshot() (int, reports.Calls) {
	sn := l.metrics().Snapshot()
	if sh := l.shards; sh != nil && !sn.Done && time.Now().After(sh.start) {
		return sh.vus, callsOf(sn.Totals) // the shards report at the end: their VUs as planned meanwhile
	}
	return sn.VUs, callsOf(sn.Totals)
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*10) / 10 }

// P95ms is the 95th percentile of the calls' latency, in milliseconds.
func (l *loadRun) P95ms() float64 { return ms(l.metrics().Latencies().P95) }

// seconds returns the load's per-second buckets re-based on the scenario's
// start, joined with the zone sample of that second.
func (l *loadRun) seconds() []reports.Second {
	return l.secondsJoined(l.s.Name, l.s.Start, l.s.Samples())
}

// Seconds returns the load's per-second buckets for scenario, T from start
// (a target scenario's: its timeline carries the target's readings).
func (l *loadRun) Seconds(scenario string, start time.Time) []reports.Second {
	return l.secondsJoined(scenario, start, nil)
}

// secondsJoined is the load's per-second buckets, T from start, each with
// the last good sample at or before its second.
func (l *loadRun) secondsJoined(scenario string, start time.Time, samples []observe.Sample) []reports.Second {
	m := l.metrics()
	offset := int(math.Floor(m.Start().Sub(start).Seconds()))
	var out []reports.Second
	var inFlight int64 // started minus answered, up to the end of each second
	for _, sec := range m.Seconds() {
		inFlight += sec.Started - sec.Completed
		r := reports.Second{Scenario: scenario, T: sec.Offset + offset, VUs: sec.VUs, Calls: callsOf(sec.Classes),
			P50ms: ms(sec.Latencies.P50), P95ms: ms(sec.Latencies.P95), P99ms: ms(sec.Latencies.P99), InFlight: inFlight}
		for _, smp := range samples {
			if smp.Err == "" && int(math.Floor(smp.At.Sub(start).Seconds())) <= r.T {
				r.Count, r.Max, r.Ready = smp.Count, smp.Max, smp.Ready
			}
		}
		out = append(out, r)
	}
	return out
}
