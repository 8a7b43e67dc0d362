package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gate is an Exec whose calls the test answers one by one.
type gate struct{ calls chan *call }

type call struct {
	vu    int
	iter  int64
	ctx   context.Context
	reply chan Result
}

func newGate() *gate { return &gate{calls: make(chan *call, 64)} }

func (g *gate) exec(ctx context.Context, vu int, iter int64) Result {
	c := &call{vu: vu, iter: iter, ctx: ctx, reply: make(chan Result, 1)}
	g.calls <- c
	select {
	case r := <-c.reply:
		return r
	case <-ctx.Done():
		return Result{Class: ClassTransport, Err: "canceled"} // the engine reclassifies
	}
}

func (g *gate) next(t *testing.T) *call {
	t.Helper()
	select {
	case c := <-g.calls:
		return c
	case <-time.After(10 * time.Second): // guard against a hang, not a synchronisation
		t.Fatal("no call")
		return nil
	}
}

// collector gathers the streamed results.
type collector struct {
	mu  sync.Mutex
	all []Result
	ch  chan Result
}

func newCollector() *collector { return &collector{ch: make(chan Result, 1024)} }

func (c *collector) add(r Result) {
	c.mu.Lock()
	c.all = append(c.all, r)
	c.mu.Unlock()
	c.ch <- r
}

func (c *collector) next(t *testing.T) Result {
	t.Helper()
	select {
	case r := <-c.ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no result")
		return Result{}
	}
}

func (c *collector) results() []Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]Result(nil), c.all...)
	sort.Slice(out, func(i, j int) bool { return out[i].Iteration < out[j].Iteration })
	return out
}

type outcome struct {
	m   *Metrics
	err error
}

func startRun(ctx context.Context, p Profile, exec Exec, opts ...Option) chan outcome {
	out := make(chan outcome, 1)
	go func() {
		m, err := Run(ctx, p, exec, opts...)
		out <- outcome{m, err}
	}()
	return out
}

func wait(t *testing.T, out chan outcome) outcome {
	t.Helper()
	select {
	case o := <-out:
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
		return outcome{}
	}
}

func sumClasses(m map[Class]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}

// checkConsistent verifies that every result was counted exactly once.
func checkConsistent(t *testing.T, m *Metrics) {
	t.Helper()
	if m.Started() != m.Completed() {
		t.Errorf("started %d != completed %d", m.Started(), m.Completed())
	}
	if n := sumClasses(m.Totals()); n != m.Completed() {
		t.Errorf("sum of class totals %d != completed %d", n, m.Completed())
	}
	var started, completed int64
	byClass := map[Class]int64{}
	for _, s := range m.Seconds() {
		started += s.Started
		completed += s.Completed
		for c, n := range s.Classes {
			byClass[c] += n
		}
	}
	if started != m.Started() || completed != m.Completed() {
		t.Errorf("per-second started/completed %d/%d, totals %d/%d", started, completed, m.Started(), m.Completed())
	}
	for c, n := range m.Totals() {
		if byClass[c] != n {
			t.Errorf("class %s: per-second %d, total %d", c, byClass[c], n)
		}
	}
	if got, want := m.Latencies().Count, m.Completed()-m.Count(ClassInterrupted); got != want {
		t.Errorf("histogram count %d, want %d (completed minus interrupted)", got, want)
	}
}

// A short real run against an MCP server: every call is classified exactly
// once and the totals add up to what the server answered.
func TestRunAgainstServer(t *testing.T) {
	kinds := []Class{ClassOK, Class429, Class5xx, ClassJSONRPCError, ClassJSONRPCError}
	var served [5]atomic.Int64
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := readRPC(t, r)
		k := (n.Add(1) - 1) % 5
		served[k].Add(1)
		switch k {
		case 0:
			writeJSON(w, okBody(req.ID))
		case 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.WriteHeader(http.StatusBadGateway)
		case 3:
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32000,"message":"x"}}`, req.ID))
		case 4:
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[],"isError":true}}`, req.ID))
		}
	}))
	defer srv.Close()
	srv.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = 16

	col := newCollector()
	col.ch = make(chan Result, 1<<20)
	p := ConstantVUs(8, 300*time.Millisecond)
	m, err := Run(context.Background(), p, MCPToolCall(srv.Client(), srv.URL, "echo", nil, nil),
		WithResults(col.add), WithRetryAfterCap(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() == 0 || n.Load() != m.Completed() {
		t.Fatalf("server answered %d calls, metrics completed %d", n.Load(), m.Completed())
	}
	want := map[Class]int64{}
	for i, k := range kinds {
		want[k] += served[i].Load()
	}
	for _, c := range AllClasses() {
		if got := m.Count(c); got != want[c] {
			t.Errorf("class %s: %d, server answered %d", c, got, want[c])
		}
	}
	checkConsistent(t, m)
	res := col.results()
	if int64(len(res))+m.DroppedResults() != m.Completed() {
		t.Errorf("streamed %d + dropped %d != completed %d", len(res), m.DroppedResults(), m.Completed())
	}
	for i, r := range res {
		if r.VU < 1 || r.VU > 8 || r.Start.IsZero() || r.Latency <= 0 || !r.Class.Valid() {
			t.Errorf("result %+v", r)
		}
		if m.DroppedResults() == 0 && r.Iteration != int64(i) {
			t.Errorf("iteration numbers not 0..n-1: %d at %d", r.Iteration, i)
		}
	}
	if m.PeakVUs() != 8 {
		t.Errorf("peak VUs %d, want 8", m.PeakVUs())
	}
	if s := m.Snapshot(); !s.Done || s.VUs != 0 || s.InFlight != 0 {
		t.Errorf("final snapshot %+v", s)
	}
}

// gracefulStop: at the end of the profile an iteration in progress may
// finish within GracefulStop, else it is interrupted.
func TestGracefulStop(t *testing.T) {
	for _, finish := range []bool{true, false} {
		t.Run(fmt.Sprintf("finishes=%v", finish), func(t *testing.T) {
			clk, g, col := newFakeClock(), newGate(), newCollector()
			p := ConstantVUs(1, 10*time.Second)
			p.GracefulStop = 5 * time.Second
			var logs bytes.Buffer
			out := startRun(context.Background(), p, g.exec, WithClock(clk), WithResults(col.add),
				WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			c := g.next(t)
			clk.waitTimers(t, 1) // the end of the profile
			clk.Advance(10 * time.Second)
			clk.waitTimers(t, 1) // the graceful stop deadline
			if finish {
				c.reply <- Result{Class: ClassOK}
			} else {
				clk.Advance(5 * time.Second)
			}
			o := wait(t, out)
			if o.err != nil {
				t.Fatal(o.err)
			}
			r := col.results()
			wantClass, wantLat := ClassOK, 10*time.Second
			if !finish {
				wantClass, wantLat = ClassInterrupted, 15*time.Second
				if cause := context.Cause(c.ctx); !errors.Is(cause, ErrGracefulStop) {
					t.Errorf("cause %v, want ErrGracefulStop", cause)
				}
			}
			if len(r) != 1 || r[0].Class != wantClass || r[0].Latency != wantLat || r[0].VU != 1 || !r[0].Start.Equal(fakeEpoch) {
				t.Fatalf("results %+v, want one %s of %s", r, wantClass, wantLat)
			}
			if got := logs.String(); !strings.Contains(got, "reason=\"profile ended\"") ||
				strings.Contains(got, "interrupting") == finish {
				t.Errorf("logs:\n%s", got)
			}
			if o.m.Duration() != wantLat {
				t.Errorf("run duration %s, want %s", o.m.Duration(), wantLat)
			}
			checkConsistent(t, o.m)
		})
	}
}

// gracefulRampDown: a VU removed by a ramp-down finishes its iteration
// within GracefulRampDown or is interrupted, and starts no other.
func TestGracefulRampDown(t *testing.T) {
	for _, finish := range []bool{true, false} {
		t.Run(fmt.Sprintf("finishes=%v", finish), func(t *testing.T) {
			clk, g, col := newFakeClock(), newGate(), newCollector()
			// 2 VUs for 1s, then 1 VU for 1s.
			p := RampingVUs(2, Stage{time.Second, 2}, Stage{0, 1}, Stage{time.Second, 1})
			p.GracefulRampDown, p.GracefulStop = 500*time.Millisecond, 0
			m := NewMetrics()
			out := startRun(context.Background(), p, g.exec, WithClock(clk), WithResults(col.add), WithMetrics(m))
			c1, c2 := g.next(t), g.next(t)
			if c1.vu == 2 {
				c1, c2 = c2, c1
			}
			clk.waitTimers(t, 1)
			clk.Advance(time.Second) // VU 2 removed, draining until 1.5s
			clk.waitTimers(t, 1)
			if s := m.Snapshot(); s.VUs != 2 || s.TargetVUs != 1 || s.InFlight != 2 || s.Elapsed != time.Second {
				t.Errorf("snapshot while draining: %+v", s)
			}
			if finish {
				clk.Advance(200 * time.Millisecond)
				c2.reply <- Result{Class: ClassOK}
				if r := col.next(t); r.VU != 2 || r.Class != ClassOK || r.Latency != 1200*time.Millisecond {
					t.Errorf("VU 2 result %+v", r)
				}
				clk.Advance(300 * time.Millisecond)
			} else {
				clk.Advance(500 * time.Millisecond)
				if r := col.next(t); r.VU != 2 || r.Class != ClassInterrupted || r.Latency != 1500*time.Millisecond {
					t.Errorf("VU 2 result %+v", r)
				}
				if cause := context.Cause(c2.ctx); !errors.Is(cause, ErrRampDown) {
					t.Errorf("VU 2 cause %v, want ErrRampDown", cause)
				}
			}
			clk.waitTimers(t, 1) // the end of the profile
			c1.reply <- Result{Class: ClassOK}
			c3 := g.next(t) // VU 1 goes on
			if c3.vu != 1 {
				t.Fatalf("a removed VU started an iteration: %+v", c3)
			}
			clk.Advance(500 * time.Millisecond) // end, GracefulStop 0
			o := wait(t, out)
			if o.err != nil {
				t.Fatal(o.err)
			}
			if cause := context.Cause(c3.ctx); !errors.Is(cause, ErrGracefulStop) {
				t.Errorf("last iteration cause %v, want ErrGracefulStop", cause)
			}
			wantOK, wantInt := int64(1), int64(2)
			if finish {
				wantOK, wantInt = 2, 1
			}
			if m.Count(ClassOK) != wantOK || m.Count(ClassInterrupted) != wantInt || m.Completed() != 3 {
				t.Errorf("totals %v, want ok %d interrupted %d", m.Totals(), wantOK, wantInt)
			}
			sec := m.Seconds()
			if len(sec) < 2 || sec[0].VUs != 2 || sec[1].VUs != 2 || m.PeakVUs() != 2 {
				t.Errorf("seconds %+v peak %d", sec, m.PeakVUs())
			}
			checkConsistent(t, m)
		})
	}
}

// Think time and 429 backoff pause a VU; latency counts from the intended
// start even when the VU starts late.
func TestThinkTimeAndRetryAfter(t *testing.T) {
	clk, g, col := newFakeClock(), newGate(), newCollector()
	p := ConstantVUs(1, 2*time.Second)
	p.ThinkTime, p.GracefulStop = 100*time.Millisecond, 0
	out := startRun(context.Background(), p, g.exec, WithClock(clk), WithResults(col.add), WithRetryAfterCap(time.Second))
	ms := time.Millisecond
	steps := []struct {
		reply   Result
		advance time.Duration // after the VU parks on its pause
	}{
		{Result{Class: Class429, Status: 429, RetryAfter: 5 * time.Second}, 1150 * ms}, // pause 100ms + min(5s, 1s); 50ms late
		{Result{Class: ClassOK}, 100 * ms},                                             // pause 100ms
		{Result{Class: Class429, RetryAfter: 300 * ms}, 400 * ms},                      // 100ms + 300ms
		{Result{Class: Class429, RetryAfter: 10 * time.Second}, 350 * ms},              // next start 2.75s: after the end
	}
	for _, s := range steps {
		c := g.next(t)
		c.reply <- s.reply
		clk.waitTimers(t, 2) // the end of the profile and the VU's pause
		clk.Advance(s.advance)
	}
	o := wait(t, out)
	if o.err != nil {
		t.Fatal(o.err)
	}
	r := col.results()
	wantStart := []time.Duration{0, 1100 * ms, 1250 * ms, 1650 * ms}
	wantLat := []time.Duration{0, 50 * ms, 0, 0}
	if len(r) != len(wantStart) {
		t.Fatalf("%d results, want %d: %+v", len(r), len(wantStart), r)
	}
	for i := range r {
		if got := r[i].Start.Sub(fakeEpoch); got != wantStart[i] || r[i].Latency != wantLat[i] || r[i].Iteration != int64(i) {
			t.Errorf("result %d: start %s latency %s iteration %d, want %s %s", i, got, r[i].Latency, r[i].Iteration, wantStart[i], wantLat[i])
		}
	}
	checkConsistent(t, o.m)
}

func TestMaxIterations(t *testing.T) {
	col := newCollector()
	p := ConstantVUs(4, time.Hour)
	p.MaxIterations = 50
	exec := func(ctx context.Context, vu int, iter int64) Result { return Result{} }
	m, err := Run(context.Background(), p, exec, WithResults(col.add))
	if err != nil {
		t.Fatal(err)
	}
	if m.Started() != 50 || m.Completed() != 50 || m.Count(ClassOK) != 50 {
		t.Fatalf("started %d completed %d totals %v, want 50", m.Started(), m.Completed(), m.Totals())
	}
	for i, r := range col.results() {
		if r.Iteration != int64(i) {
			t.Fatalf("iterations not 0..49: %d at %d", r.Iteration, i)
		}
	}
	checkConsistent(t, m)
}

func TestContextCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := newGate()
	out := startRun(ctx, ConstantVUs(3, time.Hour), g.exec)
	for range 3 {
		g.next(t)
	}
	cancel()
	o := wait(t, out)
	if !errors.Is(o.err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", o.err)
	}
	if o.m.Count(ClassInterrupted) != 3 || o.m.Completed() != 3 {
		t.Errorf("totals %v, want 3 interrupted", o.m.Totals())
	}
	checkConsistent(t, o.m)
}

// The seed-000 profile on a clock 100 times faster: 7 minutes in 4.2 s. (At
// 1000 times, a loaded machine's 50 ms scheduling delay was 50 s of the
// profile, and the 50-VU plateau was read mid-ramp: 18 VUs at 150 s.)
func TestSeed000Scaled(t *testing.T) {
	p := seed000()
	p.ThinkTime = 2 * time.Second
	exec := func(ctx context.Context, vu int, iter int64) Result { return Result{Class: ClassOK} }
	m, err := Run(context.Background(), p, exec, WithClock(newScaledClock(100)))
	if err != nil {
		t.Fatal(err)
	}
	checkConsistent(t, m)
	sec := m.Seconds()
	if len(sec) < 420 {
		t.Fatalf("%d seconds, want at least 420", len(sec))
	}
	if sec[150].VUs != 50 { // the middle of the 50-VU plateau [120s, 180s)
		t.Errorf("VUs at 150s = %d, want 50", sec[150].VUs)
	}
	if peak := m.PeakVUs(); peak < 90 || peak > 100 {
		t.Errorf("peak VUs %d, want about 100", peak)
	}
	if m.Completed() == 0 || m.Latencies().Count == 0 {
		t.Errorf("completed %d, latencies %+v", m.Completed(), m.Latencies())
	}
}

// The result stream never blocks a VU beyond its wait: overflow is dropped
// from the stream and counted, never lost from the metrics.
func TestResultQueueOverflow(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("wait=%s", wait), func(t *testing.T) {
			release := make(chan struct{})
			var delivered atomic.Int64
			p := ConstantVUs(1, time.Hour)
			p.MaxIterations = 10
			exec := func(ctx context.Context, vu int, iter int64) Result {
				if iter == 9 {
					close(release)
				}
				return Result{}
			}
			fn := func(r Result) { // blocks the stream until the last iteration runs
				if r.Iteration == 0 {
					<-release
				}
				delivered.Add(1)
			}
			m, err := Run(context.Background(), p, exec, WithResults(fn), WithResultQueue(1, wait))
			if err != nil {
				t.Fatal(err)
			}
			// At most result 0 in fn and one result queued get through before
			// the release: at least 7 of results 1..8 are dropped.
			if m.Completed() != 10 || delivered.Load()+m.DroppedResults() != 10 || m.DroppedResults() < 7 {
				t.Errorf("completed %d delivered %d dropped %d", m.Completed(), delivered.Load(), m.DroppedResults())
			}
		})
	}
}

func TestRunRejects(t *testing.T) {
	exec := func(ctx context.Context, vu int, iter int64) Result { return Result{} }
	p := ConstantVUs(1, time.Millisecond)
	if _, err := Run(context.Background(), Profile{}, exec); err == nil {
		t.Error("invalid profile accepted")
	}
	if _, err := Run(context.Background(), p, nil); err == nil {
		t.Error("nil Exec accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, p, exec); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: %v", err)
	}
	m := NewMetrics()
	if _, err := Run(context.Background(), p, exec, WithMetrics(m)); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), p, exec, WithMetrics(m)); err == nil {
		t.Error("reused Metrics accepted")
	}
}

func TestComplete(t *testing.T) {
	t0 := fakeEpoch
	end := t0.Add(time.Second)
	tests := []struct {
		name  string
		in    Result
		cause error
		want  Class
	}{
		{"empty is ok", Result{}, nil, ClassOK},
		{"empty with error is transport", Result{Err: "dial"}, nil, ClassTransport},
		{"transport cut is interrupted", Result{Class: ClassTransport}, ErrRampDown, ClassInterrupted},
		{"bad response cut is interrupted", Result{Class: ClassBadResponse}, ErrGracefulStop, ClassInterrupted},
		{"a complete answer stays", Result{Class: Class5xx, Status: 503}, ErrGracefulStop, Class5xx},
		{"ok stays", Result{Class: ClassOK}, context.Canceled, ClassOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := complete(tt.in, 3, 9, t0, end, tt.cause)
			if got.Class != tt.want || got.VU != 3 || got.Iteration != 9 || !got.Start.Equal(t0) || got.Latency != time.Second {
				t.Errorf("got %+v, want class %s", got, tt.want)
			}
			if got.Class == ClassInterrupted && got.Err != tt.cause.Error() && got.Err != tt.in.Err {
				t.Errorf("err %q", got.Err)
			}
		})
	}
}

// WithStop ends the run early with the profile's gracefulStop: the call in
// progress finishes (or is interrupted at the deadline) and none starts.
func TestWithStop(t *testing.T) {
	for _, finish := range []bool{true, false} {
		t.Run(fmt.Sprintf("finishes=%v", finish), func(t *testing.T) {
			clk, g, col := newFakeClock(), newGate(), newCollector()
			p := ConstantVUs(1, time.Hour)
			p.GracefulStop = 5 * time.Second
			stop := make(chan struct{})
			out := startRun(context.Background(), p, g.exec, WithClock(clk), WithResults(col.add), WithStop(stop))
			c := g.next(t)
			clk.waitTimers(t, 1) // the end of the profile
			clk.Advance(2 * time.Second)
			close(stop)
			clk.waitTimerAt(t, fakeEpoch.Add(7*time.Second)) // stop at 2 s + gracefulStop 5 s
			if finish {
				c.reply <- Result{Class: ClassOK}
			} else {
				clk.Advance(5 * time.Second)
			}
			o := wait(t, out)
			if o.err != nil {
				t.Fatalf("a stopped run is not an error: %v", o.err)
			}
			r := col.results()
			want := ClassOK
			if !finish {
				want = ClassInterrupted
			}
			if len(r) != 1 || r[0].Class != want {
				t.Fatalf("results %+v, want one %s", r, want)
			}
			checkConsistent(t, o.m)
		})
	}
}
