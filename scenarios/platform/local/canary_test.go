package local_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/internal/proctest"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
)

// TestFleetCanary: with WorkerSpec.Canary every zone scaled to 1 or more
// runs a canary process beside its workers (--version canary, listed with
// Canary), which no scale counts, picks or stops; it is replaced when it
// dies and stopped when the zone goes to 0.
func TestFleetCanary(t *testing.T) {
	t.Parallel()
	if refBin == "" {
		t.Skip("process-level test: skipped in -short mode")
	}
	dir := t.TempDir()
	f := local.NewFleet(local.WorkerSpec{Bin: refBin, LogDir: dir, MaxInflight: 4, WorkMS: 10, Drain: 5 * time.Second, Canary: true},
		100*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() {
		f.Close()
		cancel()
		<-done
		if pids := proctest.WaitNone(func() []int { return proctest.Of("", dir) }, 10*time.Second); len(pids) > 0 {
			t.Errorf("workers left after Close: %v", pids)
		}
	})
	canaryOf := func(z fleet.Zone) (fleet.Endpoint, int) {
		var c fleet.Endpoint
		n := 0
		for _, ep := range z.Endpoints {
			if ep.Canary {
				c = ep
				n++
			}
		}
		return c, n
	}
	readyWith := func(stable int) fleet.Endpoint {
		t.Helper()
		var c fleet.Endpoint
		waitUntil(t, "stable workers and the canary ready", 30*time.Second, 50*time.Millisecond, func() (bool, string) {
			z := f.Zone("g", "c")
			var n int
			c, n = canaryOf(z)
			for _, ep := range z.Endpoints {
				if !ep.Ready {
					return false, describe(z)
				}
			}
			return n == 1 && len(z.Endpoints) == stable+1 && z.Replicas == stable, describe(z)
		})
		return c
	}

	if _, err := f.Scale("g", "c", 2, nil); err != nil {
		t.Fatal(err)
	}
	c := readyWith(2)
	resp, err := http.Get("http://" + c.Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `scaleproof_worker_info{version="canary"} 1`) {
		t.Fatalf("the canary's /metrics does not say version canary:\n%s", b)
	}

	// Scaling to 1 naming the canary as a victim: a stable worker goes, the
	// canary stays.
	z, err := f.Scale("g", "c", 1, []string{c.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got, n := canaryOf(z); n != 1 || got.ID != c.ID || len(z.Endpoints) != 2 {
		t.Fatalf("after scaling to 1 with the canary named: %s, want one stable worker and canary %s", describe(z), c.ID)
	}

	// The canary dies: it is replaced.
	if err := f.Signal(c.ID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a new canary", 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		z := f.Zone("g", "c")
		got, n := canaryOf(z)
		return n == 1 && got.ID != c.ID && got.Ready, describe(z)
	})

	// Scaled to 0: the canary goes too.
	if _, err := f.Scale("g", "c", 0, nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "no workers", 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		z := f.Zone("g", "c")
		return len(z.Endpoints) == 0, describe(z)
	})
}
