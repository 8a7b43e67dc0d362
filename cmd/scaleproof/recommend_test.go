package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/promserver"
	"github.com/scaleproof/scaleproof/internal/skips"
	"github.com/scaleproof/scaleproof/scenarios"
)

// fakeProm answers queries from a map (the exact PromQL); unknown queries
// return no series.
type fakeProm struct {
	answers map[string][]float64
	err     error
	asked   []string
}

func (f *fakeProm) Query(_ context.Context, q string) ([]float64, error) {
	f.asked = append(f.asked, q)
	if f.err != nil {
		return nil, f.err
	}
	return f.answers[q], nil
}

func TestRecommendBounds(t *testing.T) {
	o := &recommendOpts{group: "g", workers: 6, rangeStr: "7d", minFloor: 2, maxFloor: 20, timeout: time.Second}
	p75, p50, cur := o.queries()
	if p75 != scenarios.InflightMetric+`{group="g",quantile="0.75"}` || p50 != scenarios.InflightMetric+`{group="g",quantile="0.5"}` ||
		cur != `scaleproof_console_zone_count{group="g"}` {
		t.Fatalf("default queries %s %s %s", p75, p50, cur)
	}
	avgQ := "avg(avg_over_time(" + p75 + "[7d]))"
	minQ := "clamp_min(ceil(" + avgQ + " / scalar(floor(vector(6 * 0.75)))), 2)"
	peakQ := "max(max_over_time(" + p50 + "[7d]))"
	curQ := "max(" + cur + ")"
	maxQ := "clamp_min(ceil((" + peakQ + " / 6 > " + curQ + ") or " + curQ + "), 20)"

	tests := []struct {
		name      string
		answers   map[string][]float64
		err       error
		wantCode  int
		wantMin   int
		wantMax   int
		wantSteps []string
	}{
		{name: "the seed's formulas", answers: map[string][]float64{avgQ: {10}, minQ: {3}, peakQ: {150}, curQ: {3}, maxQ: {25}},
			wantMin: 3, wantMax: 25, wantSteps: []string{"ceil(10 / 4) = 3, at least 2: 3", "25 > current 3: ceil(25) = 25, at least 20: 25"}},
		{name: "current replicas win", answers: map[string][]float64{avgQ: {1}, minQ: {2}, peakQ: {12}, curQ: {30}, maxQ: {30}},
			wantMin: 2, wantMax: 30, wantSteps: []string{"ceil(1 / 4) = 1, at least 2: 2", "2 is not above current 30: ceil(30) = 30, at least 20: 30"}},
		{name: "no in-flight data", answers: map[string][]float64{curQ: {3}, maxQ: {20}}, wantCode: exitUsage},
		{name: "no data at all for max", answers: map[string][]float64{avgQ: {10}, minQ: {3}}, wantCode: exitUsage},
		{name: "Prometheus down", err: errors.New("connection refused"), wantCode: exitInfra},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs, err := recommendBounds(context.Background(), &fakeProm{answers: tc.answers, err: tc.err}, o)
			if tc.wantCode != exitOK {
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != tc.wantCode {
					t.Fatalf("err %v, want exit code %d", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if bs[0].Value != tc.wantMin || bs[1].Value != tc.wantMax || bs[0].PromQL != minQ || bs[1].PromQL != maxQ {
				t.Fatalf("bounds %+v", bs)
			}
			var out strings.Builder
			writeBounds(&out, bs)
			for _, s := range append(tc.wantSteps, "min replicas: ", "max replicas: ", "PromQL: "+minQ, "floor(workers 6 × 0.75):") {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestRecommendQueriesPlaceholders(t *testing.T) {
	o := &recommendOpts{group: "loki", zone: "eu", queryMin: `x{namespace="%s",q="0.75"}`, queryMax: `x{ns="$group",z="$zone"}`, replicasQuery: `r{ns="%s"}`}
	p75, p50, cur := o.queries()
	if p75 != `x{namespace="loki",q="0.75"}` || p50 != `x{ns="loki",z="eu"}` || cur != `r{ns="loki"}` {
		t.Fatalf("%s %s %s", p75, p50, cur)
	}
	o = &recommendOpts{group: "g", zone: "a"}
	if p75, _, cur = o.queries(); !strings.Contains(p75, `group="g",zone="a",quantile="0.75"`) || cur != `scaleproof_console_zone_count{group="g",zone="a"}` {
		t.Fatalf("%s %s", p75, cur)
	}
}

func TestRecommendCommandUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"--prometheus", "127.0.0.1:9090"}, {"--prometheus", "http://x", "--workers", "0"}, {"extra"}} {
		if _, code := execute(t, newRecommendCmd(), args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	// Nothing listens on port 1: exit 3.
	if _, code := execute(t, newRecommendCmd(), "--prometheus", "http://127.0.0.1:1", "--timeout", "2s"); code != exitInfra {
		t.Errorf("unreachable Prometheus: exit %d, want %d", code, exitInfra)
	}
}

// TestRecommendAgainstPrometheus runs the formulas on a real Prometheus
// (skipped without the binary, unless CI=true): the PromQL is valid and the
// numbers are the seed's.
func TestRecommendAgainstPrometheus(t *testing.T) {
	bin, err := promserver.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		skips.Skip(t, err)
	}
	reg := prometheus.NewRegistry()
	inflight := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: scenarios.InflightMetric, Help: "h"}, []string{"group", "zone", "quantile"})
	count := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "scaleproof_console_zone_count", Help: "h"}, []string{"group", "zone"})
	reg.MustRegister(inflight, count)
	inflight.WithLabelValues("g", "a", "0.75").Set(10)
	inflight.WithLabelValues("g", "a", "0.5").Set(150)
	count.WithLabelValues("g", "a").Set(3)
	exp := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer exp.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := promserver.Start(ctx, promserver.Config{Bin: bin, Dir: dir, ScrapeInterval: 500 * time.Millisecond,
		StaticTargets: []string{strings.TrimPrefix(exp.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	src, err := controller.NewPrometheusSource(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := src.Query(ctx, `scaleproof_console_zone_count`)
		if err == nil && len(v) == 1 {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Fatalf("no data scraped: %v %v\n%s", v, err, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, code := execute(t, newRecommendCmd(), "--prometheus", srv.URL(), "--group", "g", "--workers", "6", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, out)
	}
	var res struct {
		Bounds []Bound `json:"bounds"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// min: ceil(10 / floor(6 × 0.75)) = 3; max: 150 / 6 = 25 > 3, ceil 25, at least 20.
	if len(res.Bounds) != 2 || res.Bounds[0].Value != 3 || res.Bounds[1].Value != 25 {
		t.Fatalf("bounds %+v", res.Bounds)
	}
	out, code = execute(t, newRecommendCmd(), "--prometheus", srv.URL(), "--group", "g") // --workers 32, the reference worker's
	// min: ceil(10 / 24) = 1, at least 2; max: 150 / 32 = 4.6875 > 3, ceil 5, at least 20.
	if code != exitOK || !strings.Contains(out, "min replicas: 2") || !strings.Contains(out, "max replicas: 20") ||
		!strings.Contains(out, "4.6875 > current 3: ceil(4.6875) = 5, at least 20: 20") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	t.Logf("\n%s", out)
}
