package controller_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/autoscaler/store"
	"github.com/scaleproof/scaleproof/autoscaler/worker"
)

// liveWorker is a reference worker (autoscaler/worker) behind an HTTP server,
// whose work calls are held until released, so its in-flight count is
// exactly what the test says.
type liveWorker struct {
	ep      fleet.Endpoint
	w       *worker.Worker
	srv     *httptest.Server
	release chan struct{}
	entered chan struct{}
	calls   sync.WaitGroup
}

func startLiveWorker(t *testing.T, id string, created time.Time) *liveWorker {
	t.Helper()
	lw := &liveWorker{release: make(chan struct{}), entered: make(chan struct{}, 64)}
	lw.w = worker.New(worker.Config{ID: id, MaxInflight: 32, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Wait: func(ctx context.Context, _ time.Duration) error {
			lw.entered <- struct{}{}
			select {
			case <-lw.release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	lw.srv = httptest.NewServer(lw.w.Handler())
	lw.ep = fleet.Endpoint{ID: id, Addr: strings.TrimPrefix(lw.srv.URL, "http://"), Ready: true, Created: created}
	t.Cleanup(func() {
		close(lw.release)
		lw.calls.Wait()
		lw.srv.Close()
	})
	return lw
}

// hold starts n work calls on the worker and waits until they are in flight.
func (lw *liveWorker) hold(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		lw.calls.Go(func() {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"work","arguments":{"ms":1000}}}`, i+1)
			req, _ := http.NewRequest(http.MethodPost, lw.srv.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := lw.srv.Client().Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	for i := range n {
		select {
		case <-lw.entered:
		case <-time.After(wait):
			t.Fatalf("waited %s for call %d of %d to be in flight on %s", wait, i+1, n, lw.ep.ID)
		}
	}
	if got := lw.w.InFlight(); got != n {
		t.Fatalf("%s: %d in flight, want %d", lw.ep.ID, got, n)
	}
}

// liveZone is the platform side of one zone for a controller: discovery
// lists the endpoints, the target records scale calls.
type liveZone struct {
	mu     sync.Mutex
	eps    []fleet.Endpoint
	scales []controllertest.ScaleCall
}

func (z *liveZone) Endpoints(context.Context, string, string) ([]fleet.Endpoint, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	return slices.Clone(z.eps), nil
}

func (z *liveZone) Scale(_ context.Context, group, zone string, replicas int, victims []string) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.scales = append(z.scales, controllertest.ScaleCall{Group: group, Zone: zone, Replicas: replicas, Victims: slices.Clone(victims)})
	return nil
}

// newLiveController is a controller over real worker HTTP servers, scraped
// by the real HTTPScraper, on a fake clock.
func newLiveController(t *testing.T, z *liveZone, scrapeTimeout time.Duration) (*controller.Controller, *controllertest.Clock) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clock := controllertest.NewClock(t0)
	cfg := autoscaler.DefaultStepConfig()
	c, err := controller.New(controller.Options{Store: st, Target: z, Discovery: z,
		Scraper: controller.NewHTTPScraper(scrapeTimeout), Policy: controller.StepPolicy(cfg),
		StartupGrace: cfg.StartupGrace, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c, clock
}

// TestDownVictimsFromLiveWorkers: the DOWN the controller applies names as
// its first victim the worker with the fewest calls in flight, as the
// workers themselves report them on /metrics; between equals, the newest.
func TestDownVictimsFromLiveWorkers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight []int // per worker, oldest first
		want     []string
	}{
		{"fewest in flight first, even the oldest", []int{0, 2, 1}, []string{"w1", "w3", "w2"}},
		{"ties: newest first", []int{1, 1, 1}, []string{"w3", "w2", "w1"}},
		{"fewest, then ties newest", []int{2, 1, 1}, []string{"w3", "w2", "w1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := &liveZone{}
			var ws []*liveWorker
			for i, n := range tc.inFlight {
				lw := startLiveWorker(t, fmt.Sprintf("w%d", i+1), t0.Add(time.Duration(i)*time.Minute))
				ws = append(ws, lw)
				z.eps = append(z.eps, lw.ep)
				lw.hold(t, n)
			}
			c, clock := newLiveController(t, z, time.Second)
			ctx := context.Background()
			if _, err := c.Apply(ctx, "root", "g1", "a", controller.Change{Count: ptr(3), MaxCount: ptr(3)}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(3 * time.Minute) // past the down cooldown
			var d autoscaler.Decision
			for i := range 3 { // three low rounds
				clock.Advance(time.Second)
				var err error
				if d, err = c.Round(ctx, "g1", "a", controller.ActorScheduler); err != nil {
					t.Fatal(err)
				}
				if i < 2 && d.Action != autoscaler.ActionHold {
					t.Fatalf("round %d: %+v", i+1, d)
				}
			}
			if d.Action != autoscaler.ActionDown || !slices.Equal(d.Victims, tc.want) {
				t.Fatalf("decision %+v, want DOWN with victims %v", d, tc.want)
			}
			if len(z.scales) != 2 || !slices.Equal(z.scales[1].Victims, tc.want) || z.scales[1].Replicas != 2 {
				t.Fatalf("scale calls %+v, want the last to 2 with victims %v", z.scales, tc.want)
			}
		})
	}
}

// TestUnreachableLiveWorkersNeverScaleIn: a worker whose /metrics does not
// answer (frozen: the scrape times out; or gone: connection refused) counts
// as down, never low: no DOWN however many low rounds pass, the reason says
// so, and UP still works for the others. A zone with every worker
// unreachable holds with "no ready worker".
func TestUnreachableLiveWorkersNeverScaleIn(t *testing.T) {
	frozen := make(chan struct{})
	t.Cleanup(func() { close(frozen) })
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a frozen process: accepts, never answers
		case <-r.Context().Done():
		case <-frozen:
		}
	}))
	t.Cleanup(stuck.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	goneAddr := strings.TrimPrefix(gone.URL, "http://")
	gone.Close() // connection refused from now on

	for _, tc := range []struct {
		name     string
		bad      []fleet.Endpoint
		live     int
		count    int
		inFlight int // on each live worker
		want     autoscaler.Action
		reason   string
	}{
		{"frozen worker holds", []fleet.Endpoint{{ID: "frozen", Addr: strings.TrimPrefix(stuck.URL, "http://"), Ready: true, Created: t0}},
			2, 3, 0, autoscaler.ActionHold, "1 of 3 workers down (frozen): no scale-in"},
		{"gone worker holds", []fleet.Endpoint{{ID: "gone", Addr: goneAddr, Ready: true, Created: t0}},
			2, 3, 0, autoscaler.ActionHold, "1 of 3 workers down (gone): no scale-in"},
		{"UP still works with a frozen worker", []fleet.Endpoint{{ID: "frozen", Addr: strings.TrimPrefix(stuck.URL, "http://"), Ready: true, Created: t0}},
			2, 3, 30, autoscaler.ActionUp, "high"},
		{"whole zone unreachable", []fleet.Endpoint{
			{ID: "frozen", Addr: strings.TrimPrefix(stuck.URL, "http://"), Ready: true, Created: t0},
			{ID: "gone", Addr: goneAddr, Ready: true, Created: t0}},
			0, 2, 0, autoscaler.ActionHold, "no ready worker (2 down)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := &liveZone{eps: slices.Clone(tc.bad)}
			for i := range tc.live {
				lw := startLiveWorker(t, fmt.Sprintf("w%d", i+1), t0.Add(time.Duration(i+1)*time.Minute))
				z.eps = append(z.eps, lw.ep)
				lw.hold(t, tc.inFlight)
			}
			c, clock := newLiveController(t, z, time.Second) // a frozen worker times out; a live one answers within it even on a loaded machine (200 ms did not, at load 12 with -race)
			ctx := context.Background()
			if _, err := c.Apply(ctx, "root", "g1", "a", controller.Change{Count: ptr(tc.count), MaxCount: ptr(4)}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(3 * time.Minute) // past every cooldown
			for i := range 6 {
				clock.Advance(time.Second)
				d, err := c.Round(ctx, "g1", "a", controller.ActorScheduler)
				if err != nil {
					t.Fatal(err)
				}
				if d.Action == autoscaler.ActionDown {
					t.Fatalf("round %d: DOWN with a worker unreachable: %+v", i+1, d)
				}
				if d.Action != tc.want || !strings.Contains(d.Reason, tc.reason) {
					t.Fatalf("round %d: %s %q, want %s with %q", i+1, d.Action, d.Reason, tc.want, tc.reason)
				}
				if d.Action == autoscaler.ActionUp {
					return
				}
			}
		})
	}
}
