package scenarios

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// fixedWorkers is a platform that lists fixed workers and offers no other fault action.
type fixedWorkers struct {
	platform.NoFaults
	ws []platform.Worker
}

func (l fixedWorkers) Workers(context.Context, string, string) ([]platform.Worker, error) {
	return l.ws, nil
}

// proxiedWorkers is a platform that lists workers without addresses and
// reads their /metrics itself (platform.MetricsReader), as the kubeconfig
// platform does through the API server: inflight by worker ID.
type proxiedWorkers struct {
	fixedWorkers
	inflight map[string]int
}

func (p proxiedWorkers) WorkerMetrics(_ context.Context, group, zone, id string) ([]byte, error) {
	n, ok := p.inflight[id]
	if !ok || group != "g" || !strings.HasPrefix(zone, "sustained-") {
		return nil, fmt.Errorf("no worker %s in %s/%s", id, group, zone)
	}
	return fmt.Appendf(nil, "%s 7\n%s %d\n%s 32\n", metricWorkerCalls, metricWorkerInflight, n, metricWorkerLimit), nil
}

// worker serves a reference worker's /metrics with the given in-flight, limit 32.
func worker(t *testing.T, inflight int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE %s counter\n%s 7\n# TYPE %s gauge\n%s %d\n# TYPE %s gauge\n%s 32\n",
			metricWorkerCalls, metricWorkerCalls, metricWorkerInflight, metricWorkerInflight, inflight, metricWorkerLimit, metricWorkerLimit)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestInflightWatch: the watch reads ready loopback workers while a load
// runs, bounded in ticks; it reads nothing without addresses, from workers
// not ready, or from a non-loopback address.
func TestInflightWatch(t *testing.T) {
	hot, idle := worker(t, 32), worker(t, 0)
	cases := []struct {
		name  string
		ws    []platform.Worker
		reads int // seconds read
		flag  bool
	}{
		{"one hot, one idle", []platform.Worker{{ID: "w1", Addr: idle, Ready: true}, {ID: "w2", Addr: hot, Ready: true}}, 5, true},
		{"the idle one not ready", []platform.Worker{{ID: "w1", Addr: idle}, {ID: "w2", Addr: hot, Ready: true}}, 5, false},
		{"no addresses", []platform.Worker{{ID: "w1", Ready: true}, {ID: "w2", Ready: true}}, 0, false},
		{"not loopback", []platform.Worker{{ID: "w1", Addr: "192.0.2.1:80", Ready: true}}, 0, false},
		{"read by the platform (kind)", []platform.Worker{{ID: "p1", Proxied: true, Ready: true}, {ID: "p2", Proxied: true, Ready: true}}, 5, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f platform.Faulter = fixedWorkers{ws: c.ws}
			if c.ws[0].Proxied {
				f = proxiedWorkers{fixedWorkers{ws: c.ws}, map[string]int{"p1": 0, "p2": 32}}
			}
			env := &Env{HTTP: http.DefaultClient, Faults: f}
			env.Endpoints.Group = "g"
			s := newScope(env, Scenario{Name: "sustained"})
			s.loads = []*loadRun{{done: make(chan struct{})}} // a load that runs
			w := &inflightWatch{}
			w.run(t.Context(), s, 1, 5) // 5 ticks, as fast as they come
			if len(w.secs) != c.reads {
				t.Fatalf("%d seconds read, want %d: %+v", len(w.secs), c.reads, w.secs)
			}
			s.watch = &inflightWatch{stop: func() {}, secs: w.secs}
			im := s.stopInflightWatch()
			if (im != nil) != (c.reads > 0) || im.Flagged() != c.flag {
				t.Errorf("imbalance %+v, want flagged %v", im, c.flag)
			}
			if want := strings.TrimSuffix(c.ws[len(c.ws)-1].ID, "2"); c.flag && !strings.Contains(im.Warning(), fmt.Sprintf("worker %s2 at 32/32 in flight while %s1 idled", want, want)) {
				t.Errorf("warning %q", im.Warning())
			}
		})
	}
}

// TestInflightWatchIdle: no load running, nothing is read.
func TestInflightWatchIdle(t *testing.T) {
	env := &Env{HTTP: http.DefaultClient, Faults: fixedWorkers{ws: []platform.Worker{{ID: "w1", Addr: worker(t, 32), Ready: true}}}}
	s := newScope(env, Scenario{Name: "sustained"})
	done := make(chan struct{})
	close(done)
	s.loads = []*loadRun{{done: done}}
	w := &inflightWatch{}
	w.run(t.Context(), s, 1, 5)
	if len(w.secs) != 0 {
		t.Errorf("read %d seconds with no load running", len(w.secs))
	}
}

// readErrWorkers is a platform that lists proxied workers and answers every
// /metrics read with err.
type readErrWorkers struct {
	fixedWorkers
	err error
}

func (p readErrWorkers) WorkerMetrics(context.Context, string, string, string) ([]byte, error) {
	return nil, p.err
}

// TestBackPressureOnUnreadableWorkers: a worker the platform cannot read
// from where the harness stands (a *platform.NotOfferedError: an API server
// that forbids or cannot reach pods/proxy) makes back-pressure not
// applicable, with the platform's reason; any other read error fails it.
func TestBackPressureOnUnreadableWorkers(t *testing.T) {
	ws := []platform.Worker{{ID: "p1", Proxied: true, Ready: true}}
	for _, c := range []struct {
		name   string
		err    error
		na     bool
		detail string
	}{
		{"the API server cannot reach the pod", &platform.NotOfferedError{Platform: "eks", Action: "read a worker's /metrics", Reason: "the API server cannot reach worker pod p1"}, true, "cannot reach worker pod p1"},
		{"the worker answers an error", fmt.Errorf("platform eks: worker p1 /metrics through the API server: metrics broken"), false, "metrics broken"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := &Env{HTTP: http.DefaultClient, Log: slog.New(slog.DiscardHandler), Faults: readErrWorkers{fixedWorkers{ws: ws}, c.err}}
			env.Endpoints.Group = "g"
			s := newScope(env, Scenario{Name: "max-1"})
			s.judgeBackPressure(t.Context())
			if len(s.facts) != 1 {
				t.Fatalf("facts %+v, want one", s.facts)
			}
			f := s.facts[0]
			if na := f.NotApplicable != ""; na != c.na || f.Passed || !strings.Contains(f.NotApplicable+f.Detail, c.detail) {
				t.Errorf("fact %+v, want not applicable %v, not passed, saying %q", f, c.na, c.detail)
			}
		})
	}
}
