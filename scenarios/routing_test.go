package scenarios

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// TestBootWatch: a worker that joins the listing not ready and admits a
// call while both listings around its read still say not ready is caught;
// one that turned ready between the reads, one listed before the watch, and
// one that joined ready are not.
func TestBootWatch(t *testing.T) {
	w := func(id string, ready bool) platform.Worker {
		return platform.Worker{ID: id, Addr: "127.0.0.1:1", Ready: ready}
	}
	tests := []struct {
		name     string
		listings [][]platform.Worker // successive answers of the listing
		admitted map[string]float64  // each worker's calls + in flight
		seen     []string            // workers seen booting
		called   []string            // ids caught
		// readyAfter is how long the first booting worker was listed not ready (0: not judged)
		readyAfter time.Duration
	}{
		{name: "booting worker without calls",
			listings: [][]platform.Worker{{w("a", true)}, {w("a", true), w("b", false)}, {w("a", true), w("b", true)}},
			admitted: map[string]float64{"a": 9}, seen: []string{"b"}},
		{name: "booting worker with calls",
			listings: [][]platform.Worker{{w("a", true)}, {w("a", true), w("b", false)}, {w("a", true), w("b", false)}, {w("a", true), w("b", true)}},
			admitted: map[string]float64{"a": 9, "b": 2}, seen: []string{"b"}, called: []string{"b"}, readyAfter: time.Second},
		{name: "turned ready between the reads",
			listings: [][]platform.Worker{{w("a", true)}, {w("a", true), w("b", false)}, {w("a", true), w("b", true)}},
			admitted: map[string]float64{"b": 2}, seen: []string{"b"}},
		{name: "listed before the watch",
			listings: [][]platform.Worker{{w("a", false)}, {w("a", false)}, {w("a", false)}},
			admitted: map[string]float64{"a": 3}},
		{name: "joined ready",
			listings: [][]platform.Worker{{w("a", true)}, {w("a", true), w("b", true)}},
			admitted: map[string]float64{"b": 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			list := func(context.Context) ([]platform.Worker, error) {
				l := tc.listings[min(i, len(tc.listings)-1)]
				i++
				return l, nil
			}
			read := func(_ context.Context, w platform.Worker) (workerMetrics, error) {
				return workerMetrics{Calls: tc.admitted[w.ID]}, nil
			}
			b := newBootWatch()
			t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
			for n := 0; i < len(tc.listings) && n < 10; n++ {
				b.tick(t.Context(), t0.Add(time.Duration(n)*time.Second), list, read)
			}
			seen, called := b.result()
			var ids []string
			for _, s := range seen {
				ids = append(ids, s.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.seen, ",") {
				t.Errorf("seen booting %v, want %v", ids, tc.seen)
			}
			if tc.readyAfter > 0 && (len(seen) == 0 || seen[0].Ready.Sub(seen[0].First) != tc.readyAfter) {
				t.Errorf("seen %+v, want the first listed ready %s after it was seen booting", seen, tc.readyAfter)
			}
			if len(called) != len(tc.called) {
				t.Fatalf("caught %q, want %v", called, tc.called)
			}
			for k, c := range called {
				if !strings.HasPrefix(c, tc.called[k]+" ") {
					t.Errorf("caught %q, want %s", c, tc.called[k])
				}
			}
		})
	}
}

// TestReadinessRoutingSkips: on an hpa zone, and on a platform with no fault
// actions, the scenario is skipped with the reason before it touches the
// system (its Scope is never used).
func TestReadinessRoutingSkips(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  *Env
		want string
	}{
		{"hpa policy", &Env{Policy: PolicyHPA}, "on the hpa policy the count follows the query's ratio"},
		{"no fault actions", &Env{Faults: platform.NoFaults{Platform: "external", Reason: "no access"}},
			"platform external cannot fail a worker's readiness: no access"},
		{"only the console's restart offered (kind)", &Env{Faults: restartOnly{platform.NoFaults{Platform: "kind", Reason: "only the console's pod"}}},
			"platform kind cannot fail a worker's readiness: only the console's pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ReadinessRouting().Run(t.Context(), tc.env, nil)
			var sk *skipError
			if !errors.As(err, &sk) || !strings.Contains(sk.reason, tc.want) {
				t.Errorf("%v, want skipped with %q", err, tc.want)
			}
		})
	}
}

// restartOnly offers the console's restart alone (platform.Offerer), as the
// kubeconfig platform on kind does.
type restartOnly struct{ platform.NoFaults }

func (r restartOnly) Offers(action string) error {
	if action == platform.RestartAction(platform.PartConsole) {
		return nil
	}
	return &platform.NotOfferedError{Platform: r.Platform, Action: action, Reason: r.Reason}
}
