package controller_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/promserver"
	"github.com/scaleproof/scaleproof/autoscaler/store"
	"github.com/scaleproof/scaleproof/internal/skips"
)

// startPrometheus starts Debian's prometheus for the test on 127.0.0.1 (a
// free port), its TSDB in a temp dir, scraping targets every 500 ms. It
// skips the test when prometheus is not on PATH, unless CI=true.
func startPrometheus(t *testing.T, targets ...string) *promserver.Server {
	t.Helper()
	bin, err := promserver.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: make deps-prometheus)", err)
		}
		skips.Skip(t, err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := promserver.Start(ctx, promserver.Config{Bin: bin, Dir: dir, ScrapeInterval: 500 * time.Millisecond,
		StaticTargets: targets, LogPath: filepath.Join(dir, "prometheus.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus.log:\n%s", b)
		}
	})
	return srv
}

// waitQuery polls Prometheus (an external process: there is no event to
// wait on) until query returns a value for which ok holds, for at most 30 s.
func waitQuery(t *testing.T, src *controller.PrometheusSource, query string, ok func([]float64) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last []float64
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last, lastErr = src.Query(ctx, query)
		cancel()
		if lastErr == nil && ok(last) {
			return
		}
		<-tick.C
	}
	t.Fatalf("waited 30 s for %s: last %v %v", query, last, lastErr)
}

// promController is a controller over a fresh store and a fake fleet on a
// clock at t0, its metric source src, with zone g/a at count 1, max 5.
func promController(t *testing.T, src controller.MetricSource) (*store.Store, *controllertest.Clock, *controllertest.Fleet, *controller.Controller) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clock := controllertest.NewClock(t0)
	fl := controllertest.NewFleet(clock)
	cfg := autoscaler.DefaultStepConfig()
	c, err := controller.New(controller.Options{Store: st, Target: fl, Discovery: fl, Scraper: fl,
		Policy: controller.StepPolicy(cfg), StartupGrace: cfg.StartupGrace, Clock: clock,
		Logger: slog.New(slog.DiscardHandler), Metrics: src})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(context.Background(), "root", "g", "a", controller.Change{Count: ptr(1), MaxCount: ptr(5)}); err != nil {
		t.Fatal(err)
	}
	return st, clock, fl, c
}

// TestHPAWithRealPrometheus: a zone scales up on a PromQL query answered by
// a real Prometheus scraping a gauge (seed 000's example: 1 replica, 20 in
// flight, threshold 4 -> 5), and holds, never scaling in, once Prometheus is
// stopped mid-run although the last value it served asks for 1.
func TestHPAWithRealPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	inflight := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "scaleproof_test_inflight_requests", Help: "test signal"},
		[]string{"group", "zone", "quantile"})
	reg.MustRegister(inflight)
	inflight.WithLabelValues("g", "a", "0.75").Set(20)
	inflight.WithLabelValues("g", "other", "0.75").Set(1000) // another zone's series: never summed in
	exporter := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer exporter.Close()

	prom := startPrometheus(t, strings.TrimPrefix(exporter.URL, "http://"))
	src, err := controller.NewPrometheusSource(prom.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	const query = `sum(max_over_time(scaleproof_test_inflight_requests{group="$group",zone="$zone",quantile="0.75"}[1s]))`
	expanded := strings.NewReplacer("$group", "g", "$zone", "a").Replace(query)
	waitQuery(t, src, expanded, func(v []float64) bool { return len(v) == 1 && v[0] == 20 })

	_, clock, fl, c := promController(t, src)
	ctx := context.Background()
	if _, err := c.SetPolicy("root", "g", "a", controller.PolicySpec{Policy: controller.PolicyHPA, HPA: &controller.HPASpec{
		Query: query, Threshold: 4, PollingIntervalSeconds: fptr(1),
		Behavior: &controller.HPABehaviorSpec{ScaleDown: &controller.HPARulesSpec{StabilizationWindowSeconds: fptr(0)}},
	}}); err != nil {
		t.Fatal(err)
	}

	// A scheduler pass: the query drives the scale-up.
	clock.Advance(time.Second)
	if rep := c.Pass(ctx); rep.Up != 1 {
		t.Fatalf("pass %+v, want one scale-up", rep)
	}
	v, _ := c.Zone("g", "a")
	if v.Count != 5 || fl.Replicas("g", "a") != 5 || v.LastDecision == nil || !strings.Contains(v.LastDecision.Reason, "query 20 / 4 per replica") {
		t.Fatalf("after the pass: count %d, fleet %d, decision %+v; want 5 from 20 / 4", v.Count, fl.Replicas("g", "a"), v.LastDecision)
	}

	// The signal drops to 4 (one replica's worth): Prometheus serves it...
	inflight.WithLabelValues("g", "a", "0.75").Set(4)
	waitQuery(t, src, expanded, func(v []float64) bool { return len(v) == 1 && v[0] == 4 })
	// ...and is stopped before the next round: the zone holds at 5.
	prom.Kill()
	for i := range 3 {
		clock.Advance(2 * time.Second)
		rep := c.Pass(ctx)
		v, _ := c.Zone("g", "a")
		if rep.Hold != 1 || v.Count != 5 || v.LastDecision.Action != autoscaler.ActionHold || !strings.Contains(v.LastDecision.Reason, "query failed") {
			t.Fatalf("pass %d with Prometheus stopped: %+v, count %d, decision %+v; want a hold at 5", i+1, rep, v.Count, v.LastDecision)
		}
	}
	p, _ := c.Policy("g", "a")
	if p.Status == nil || p.Status.Error == "" || p.Status.Failures != 3 || p.Status.Signal != nil {
		t.Fatalf("status %+v, want 3 failures with the query error", p.Status)
	}
	t.Logf("hold reason: %s", p.Status.Error)
}

// TestCheckQueryWithRealPrometheus: Prometheus' own parser decides which hpa
// queries are refused (422, audited error:invalid): a syntax error and a
// range vector are; a query with no data yet is not, and neither is any
// query once the server cannot be asked.
func TestCheckQueryWithRealPrometheus(t *testing.T) {
	srv := startPrometheus(t)
	src, err := controller.NewPrometheusSource(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	st, _, _, c := promController(t, src)
	ctx := context.Background()
	spec := func(q string) controller.PolicySpec {
		return controller.PolicySpec{Policy: controller.PolicyHPA, HPA: &controller.HPASpec{Query: q, Threshold: 4}}
	}
	for _, tc := range []struct {
		query   string
		refused bool
	}{
		{`up(`, true},
		{`sum(rate(x[1m])`, true},
		{`up[1m]`, true},
		{`up`, false},
		{`sum(no_such_metric_yet{zone="a"})`, false},
	} {
		err := c.CheckPolicyQuery(ctx, "root", "g", "a", spec(tc.query))
		var ve *controller.ValidationError
		if got := errors.As(err, &ve); got != tc.refused || (err != nil && !got) {
			t.Errorf("%s: %v, want refused %v", tc.query, err, tc.refused)
		} else if got && ve.Field != "hpa.query" {
			t.Errorf("%s: field %q, want hpa.query", tc.query, ve.Field)
		}
	}
	entries, err := st.Audit(store.AuditQuery{Group: "g", Zone: "a", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	invalid := 0
	for _, e := range entries {
		if e.Action == controller.AuditPolicy && e.Tags["error"] == "invalid" {
			invalid++
		}
	}
	if invalid != 3 {
		t.Errorf("%d workers.policy error:invalid entries, want 3 (one per refused query): %+v", invalid, entries)
	}
	if err := srv.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckPolicyQuery(ctx, "root", "g", "a", spec(`up(`)); err != nil {
		t.Errorf("with Prometheus stopped: %v, want nil (it cannot be asked, so nothing is refused)", err)
	}
}
