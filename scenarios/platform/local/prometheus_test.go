package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/promserver"
	"github.com/scaleproof/scaleproof/internal/skips"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
)

func TestValidatePrometheusMode(t *testing.T) {
	for mode, ok := range map[string]bool{"": true, "auto": true, "off": true, "http://127.0.0.1:9090": true,
		"https://prom.example/prometheus": true, "127.0.0.1:9090": false, "ftp://x": false, "maybe": false} {
		if err := local.ValidatePrometheusMode(mode); (err == nil) != ok {
			t.Errorf("%q: %v, want ok=%v", mode, err, ok)
		}
	}
	if ok, why := local.PrometheusAvailable("off", ""); ok || why == "" {
		t.Errorf("off: %v %q", ok, why)
	}
	if ok, _ := local.PrometheusAvailable("http://127.0.0.1:1", ""); !ok {
		t.Error("a URL is always available")
	}
}

// TestUpWithPrometheus: with --prometheus auto the platform starts
// Prometheus, gives the console its URL, keeps the file_sd file in step with
// the workers, the edge and the console, and stops Prometheus on Down.
func TestUpWithPrometheus(t *testing.T) {
	if refBin == "" {
		t.Skip("process-level test: skipped in -short mode")
	}
	bin, err := promserver.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: make deps-prometheus)", err)
		}
		skips.Skip(t, err)
	}
	// A relative work folder, as the harness's default artifacts folder is:
	// Prometheus must still find its targets file.
	t.Chdir(t.TempDir())
	work := filepath.Join("_artifacts", "run", "local")
	l := local.New(local.Config{
		Bin: refBin, WorkDir: work, Group: "g",
		UpCooldown: time.Second, DownCooldown: time.Hour, StartupGrace: 5 * time.Second, TargetRPS: 50, ConsoleDrain: 2 * time.Second,
		Worker:         local.WorkerSpec{MaxInflight: 8, WorkMS: 10, Drain: 2 * time.Second},
		Log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		Prometheus:     local.PrometheusConfig{Mode: local.PrometheusAuto, Bin: bin, ScrapeInterval: 500 * time.Millisecond},
		InflightMaxAge: 6 * time.Second,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	downed := false
	defer func() {
		if !downed {
			_ = l.Down(context.Background())
		}
	}()
	ep, err := l.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ep.PrometheusURL == "" || ep.PrometheusURL != l.PrometheusURL() {
		t.Fatalf("endpoints %+v: no Prometheus", ep)
	}
	cc := consoleclient.New(ep.ConsoleURL, 10*time.Second)
	two, four := 2, 4
	if st, err := cc.PutZone(ctx, ep.Keys.GroupAdmin.Key, "g", "a", consoleclient.Update{Count: &two, MaxCount: &four}); err != nil || st != 200 {
		t.Fatalf("create zone: %d %v", st, err)
	}

	// The targets file follows the workers (polled: the fleet starts them in
	// the background and rewrites the file as each one lists).
	var groups []promserver.TargetGroup
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(l.TargetsFile())
		if err == nil {
			groups = nil
			_ = json.Unmarshal(b, &groups)
		}
		var comps []string
		for _, g := range groups {
			comps = append(comps, g.Labels["component"])
		}
		if slices.Equal(comps, []string{"worker", "worker", "console", "edge"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("targets file never listed 2 workers, the console and the edge: %+v", groups)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if g := groups[0]; g.Labels["group"] != "g" || g.Labels["zone"] != "a" || !strings.HasPrefix(g.Labels["worker"], "g-a-") {
		t.Fatalf("worker target %+v", g)
	}

	// Prometheus scrapes them all (up == 1), and the console's gauges.
	src, err := controller.NewPrometheusSource(ep.PrometheusURL)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, q := range []string{`sum(up{component=~"worker|edge|console"})`, `scaleproof_console_zone_max_count{group="g",zone="a"}`} {
		want := map[string]float64{`sum(up{component=~"worker|edge|console"})`: 4, `scaleproof_console_zone_max_count{group="g",zone="a"}`: 4}[q]
		deadline := time.Now().Add(30 * time.Second)
		for {
			v, err := src.Query(ctx, q)
			if err == nil && len(v) == 1 && v[0] == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v %v, want %g", q, v, err, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// The console was told where Prometheus is.
	b, _ := os.ReadFile(filepath.Join(work, "logs", "console.log"))
	if !strings.Contains(string(b), ep.PrometheusURL) {
		t.Errorf("console log does not name %s", ep.PrometheusURL)
	}

	downed = true
	if err := l.Down(context.Background()); err != nil {
		t.Logf("down: %v", err)
	}
	hc := &http.Client{Timeout: time.Second}
	if resp, err := hc.Get(ep.PrometheusURL + "/-/ready"); err == nil {
		resp.Body.Close()
		t.Fatalf("Prometheus still answers after Down: HTTP %d", resp.StatusCode)
	}
	hc.CloseIdleConnections()
}

// TestUpFailsWithoutHealthyTarget: a Prometheus that does not scrape the
// edge (here a stand-in that has no targets at all) makes Up fail loudly
// instead of leaving hpa zones reading no series as zero load.
func TestUpFailsWithoutHealthyTarget(t *testing.T) {
	if refBin == "" {
		t.Skip("process-level test: skipped in -short mode")
	}
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/targets":
			fmt.Fprint(w, `{"status":"success","data":{"activeTargets":[]}}`)
		default:
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		}
	}))
	defer prom.Close()
	l := local.New(local.Config{
		Bin: refBin, WorkDir: t.TempDir(), Group: "g",
		UpCooldown: time.Second, DownCooldown: time.Hour, StartupGrace: 5 * time.Second, TargetRPS: 50, ConsoleDrain: 2 * time.Second,
		Worker:     local.WorkerSpec{MaxInflight: 8, WorkMS: 10, Drain: 2 * time.Second},
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Prometheus: local.PrometheusConfig{Mode: prom.URL, TargetTimeout: time.Second},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := l.Up(ctx)
	if derr := l.Down(context.Background()); derr != nil {
		t.Logf("down: %v", derr)
	}
	if err == nil || !strings.Contains(err.Error(), "does not scrape the edge") || !strings.Contains(err.Error(), l.TargetsFile()) {
		t.Fatalf("Up: %v, want an error naming the edge and the targets file", err)
	}
}
