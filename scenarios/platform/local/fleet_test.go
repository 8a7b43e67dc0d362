package local_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/internal/proctest"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
)

// TestFleetRemovesVictimsFirst: the fleet (the platform's ReplicaSet) stops
// the workers a scale-down names as victims, in order, before the newest;
// unknown names are ignored; a worker leaves the endpoints at once.
func TestFleetRemovesVictimsFirst(t *testing.T) {
	t.Parallel()
	if refBin == "" {
		t.Skip("process-level test: skipped in -short mode")
	}
	dir := t.TempDir()
	f := local.NewFleet(local.WorkerSpec{Bin: refBin, LogDir: dir, MaxInflight: 4, WorkMS: 10, Drain: 5 * time.Second},
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
	if _, err := f.Scale("g", "v", 4, nil); err != nil {
		t.Fatal(err)
	}
	var eps []fleet.Endpoint
	waitUntil(t, "4 ready workers", 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		z := f.Zone("g", "v")
		eps = z.Endpoints
		for _, ep := range eps {
			if !ep.Ready {
				return false, describe(z)
			}
		}
		return len(eps) == 4, describe(z)
	})
	slices.SortFunc(eps, func(a, b fleet.Endpoint) int { return a.Created.Compare(b.Created) })
	ids := func(z fleet.Zone) []string {
		var out []string
		for _, ep := range z.Endpoints {
			out = append(out, ep.ID)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s ...string) []string { s = slices.Clone(s); slices.Sort(s); return s }

	// Victims in order: the oldest (an unknown name is skipped), then the
	// second oldest. The newest stay.
	z, err := f.Scale("g", "v", 2, []string{"nobody", eps[0].ID, eps[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(z), sorted(eps[2].ID, eps[3].ID); !slices.Equal(got, want) {
		t.Fatalf("after scaling to 2 with victims %s, %s: %v, want %v", eps[0].ID, eps[1].ID, got, want)
	}
	// More victims than workers to remove: only the first goes.
	z, err = f.Scale("g", "v", 1, []string{eps[2].ID, eps[3].ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(z); !slices.Equal(got, []string{eps[3].ID}) {
		t.Fatalf("after scaling to 1 with victims %s, %s: %v, want [%s]", eps[2].ID, eps[3].ID, got, eps[3].ID)
	}
	// No victims: the newest goes.
	if _, err := f.Scale("g", "v", 2, nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "2 workers", 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		z := f.Zone("g", "v")
		return len(z.Endpoints) == 2, describe(z)
	})
	z, _ = f.Scale("g", "v", 1, nil)
	if got := ids(z); !slices.Equal(got, []string{eps[3].ID}) {
		t.Fatalf("after scaling to 1 without victims: %v, want the older %s", got, eps[3].ID)
	}
}
