package observe

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeConsole answers GET workers with the count it is told, and /readyz
// with the status it is told.
type fakeConsole struct {
	count, ready atomic.Int64
	readyz       atomic.Int64
}

func (f *fakeConsole) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/groups/{g}/zones/{z}/workers", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer admin" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"group": r.PathValue("g"), "zone": r.PathValue("z"),
			"count": f.count.Load(), "max_count": 3, "ready": f.ready.Load(),
			"last_decision": map[string]any{"action": "up", "from": 1, "to": 3, "reason": "mean in-flight 100%"}})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(f.readyz.Load())) })
	return mux
}

func newFake(t *testing.T) (*fakeConsole, *consoleclient.Client) {
	f := &fakeConsole{}
	f.count.Store(1)
	f.ready.Store(1)
	f.readyz.Store(200)
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	return f, consoleclient.New(srv.URL, 2*time.Second)
}

// zoneReader reads zone g/a of the console c with key, as the scenarios'
// sampler does (through the console target).
func zoneReader(c *consoleclient.Client, key string) func(context.Context) (target.State, error) {
	return target.NewConsoleWith(c, platform.Keys{}, "g", "a", target.ConsoleSettings{}, target.ReadAs(key)).State
}

func TestSampleNow(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		wantErr  string
		wantCnt  int
		wantDesc string
	}{
		{"admin sees count, max, ready, decision", "admin", "", 2, "up 1->3: mean in-flight 100%"},
		{"bad key is a failed sample keeping the last values", "nope", "read zone g/a: status 401", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFake(t)
			f.count.Store(2)
			z := NewZone(zoneReader(c, tc.key), "g/a", time.Second)
			s := z.SampleNow(context.Background())
			if s.Err != tc.wantErr || s.Count != tc.wantCnt || s.Decision != tc.wantDesc {
				t.Fatalf("sample %+v, want err %q count %d decision %q", s, tc.wantErr, tc.wantCnt, tc.wantDesc)
			}
			if tc.wantErr == "" && (s.Max != 3 || s.Ready != 1) {
				t.Fatalf("sample %+v, want max 3 ready 1", s)
			}
		})
	}
}

// The OnSample callback may read the sampler (a deadlock once).
func TestOnSampleMayReadTheSampler(t *testing.T) {
	_, c := newFake(t)
	z := NewZone(zoneReader(c, "admin"), "g/a", time.Second)
	var seen atomic.Int64
	z.OnSample = func(Sample) { seen.Store(int64(len(z.Samples())) + int64(z.Last().Count)) }
	z.SampleNow(context.Background())
	if seen.Load() != 2 {
		t.Fatalf("callback saw %d, want 2 (1 sample + count 1)", seen.Load())
	}
}

func TestWaitFor(t *testing.T) {
	f, c := newFake(t)
	z := NewZone(zoneReader(c, "admin"), "g/a", 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); z.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// Only samples taken after the call count; the condition is met once the
	// fake reports 3.
	got := make(chan Sample, 1)
	go func() {
		s, err := z.WaitFor(context.Background(), "count 3", 10*time.Second, func(s Sample) bool { return s.Count == 3 })
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	f.count.Store(3)
	if s := <-got; s.Count != 3 {
		t.Fatalf("WaitFor returned %+v", s)
	}

	_, err := z.WaitFor(context.Background(), "count 9", 50*time.Millisecond, func(s Sample) bool { return s.Count == 9 })
	if err == nil || !strings.Contains(err.Error(), "count 9") || !strings.Contains(err.Error(), "g/a") {
		t.Fatalf("timeout error %v must name what it waited for and the zone", err)
	}
	if !strings.Contains(err.Error(), "waited 50ms for count 9") {
		t.Fatalf("timeout error %v must say it waited the whole 50ms", err)
	}

	// Cancelled before the timeout: the error says interrupted, not "waited 2m0s".
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	_, err = z.WaitFor(cctx, "count 9", 2*time.Minute, func(s Sample) bool { return s.Count == 9 })
	if err == nil || strings.Contains(err.Error(), "waited 2m0s") || !strings.Contains(err.Error(), "interrupted after 0s of 2m0s") {
		t.Fatalf("cancelled wait: %v, want interrupted after 0s of 2m0s", err)
	}
}

func TestReadyzRecordsFailures(t *testing.T) {
	f, c := newFake(t)
	f.readyz.Store(503)
	var fails atomic.Int64
	r := &Readyz{Client: c, Interval: time.Millisecond, OnFail: func(ReadyzFailure) { fails.Add(1) }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	// Wait (bounded) for three failed polls, then stop.
	deadline := time.Now().Add(10 * time.Second)
	for fails.Load() < 3 && time.Now().Before(deadline) {
		_, _ = c.Readyz(context.Background()) // a request per loop: no busy spin
	}
	cancel()
	<-done
	polls, fs := r.Stats()
	if len(fs) < 3 || polls < len(fs) || fs[0].Status != 503 {
		t.Fatalf("polls %d failures %+v", polls, fs)
	}
}

// A poll with no answer within the timeout is counted as timed out, apart
// from an answer that is not 200.
func TestReadyzTimeoutsCountedApart(t *testing.T) {
	release := make(chan struct{})
	var slow atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			select { // hold the answer past the client's timeout
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	defer close(release)
	// The 503 must arrive within the client's timeout: 10 s, so a loaded
	// machine cannot turn it into a timeout; only the slow row, whose
	// expiry is what it checks, gets 50 ms.
	for _, c := range []struct {
		slow     bool
		timedOut bool
		kind     string
		timeout  time.Duration
	}{{false, false, "HTTP 503", 10 * time.Second}, {true, true, "timed out", 50 * time.Millisecond}} {
		slow.Store(c.slow)
		got := make(chan ReadyzFailure, 1)
		r := &Readyz{Client: consoleclient.New(srv.URL, c.timeout), Interval: time.Hour,
			OnFail: func(f ReadyzFailure) {
				select {
				case got <- f:
				default:
				}
			}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		var f ReadyzFailure
		select {
		case f = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("no failed poll within 10 s")
		}
		cancel()
		<-done
		if f.TimedOut != c.timedOut || f.Kind() != c.kind {
			t.Errorf("slow %v: failure %+v kind %q, want timed out %v, kind %q", c.slow, f, f.Kind(), c.timedOut, c.kind)
		}
	}
}
