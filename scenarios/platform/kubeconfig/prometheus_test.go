package kubeconfig

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakePrometheus answers /-/ready and /api/v1/targets with one active
// target in health (its lastError when not "up"), as Prometheus 2.x's HTTP
// API does (https://prometheus.io/docs/prometheus/latest/querying/api/#targets).
func fakePrometheus(t *testing.T, health, lastError string) int {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/-/ready":
			_, _ = w.Write([]byte("Prometheus Server is Ready.\n"))
		case "/api/v1/targets":
			if r.URL.Query().Get("state") != "active" {
				t.Errorf("targets asked with %q, want state=active", r.URL.RawQuery)
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"activeTargets": []map[string]any{{
				"scrapeUrl": "http://10-244-0-7.prometheus-scrape.sp-test.svc.cluster.local.:8080/metrics",
				"health":    health, "lastError": lastError,
			}}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)
	port, _ := strconv.Atoi(u.Port())
	return port
}

// TestReachPrometheus: with Config.Prometheus, Up's last step reaches the
// Prometheus at its host port and returns its URL only once it scrapes the
// edge healthily; a Prometheus whose target is down fails Up, saying why
// hpa zones need it and what Prometheus reported; without it, nothing is
// asked and the URL is "".
func TestReachPrometheus(t *testing.T) {
	for _, tc := range []struct {
		name      string
		on        bool
		health    string
		lastError string
		want      string // an error containing it; "" : success
		// timeout bounds the wait for a healthy target: 10 s where it must
		// succeed, 2 s where it must time out after an answer it quotes (a
		// loaded machine can delay that answer past 600 ms), 600 ms where
		// the expiry is all the row checks.
		timeout time.Duration
	}{
		{name: "off", on: false, timeout: 600 * time.Millisecond},
		{name: "edge up", on: true, health: "up", timeout: 10 * time.Second},
		{name: "edge down", on: true, health: "down", lastError: "connection refused", want: "does not scrape the edge", timeout: 2 * time.Second},
		{name: "unknown yet", on: true, health: "unknown", want: "no healthy target", timeout: 600 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := fakePrometheus(t, tc.health, tc.lastError)
			cfg := Config{Kubeconfig: kubeconfigFor(t), Namespace: testNS, Profile: "quick", Image: testImg, Group: "g",
				NodeHost: "127.0.0.1", ConsoleHostPort: 1, EdgeHostPort: 2,
				Prometheus: tc.on, PrometheusImage: promImg, PrometheusHostPort: port, ScrapeInterval: time.Second, EvalInterval: time.Second,
				PrometheusTimeout: tc.timeout}
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			u, err := p.reachPrometheus(context.Background())
			switch {
			case !tc.on:
				if u != "" || err != nil {
					t.Errorf("without Prometheus: %q, %v; want nothing", u, err)
				}
			case tc.want == "":
				if want := "http://127.0.0.1:" + strconv.Itoa(port); u != want || err != nil {
					t.Errorf("reachPrometheus = %q, %v; want %s", u, err, want)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.lastError) {
					t.Errorf("reachPrometheus = %q, %v; want an error with %q and %q", u, err, tc.want, tc.lastError)
				}
			}
		})
	}
}

// TestNewPrometheusBadInput: Prometheus needs its image and, with a node
// host, its host port, refused before anything is contacted.
func TestNewPrometheusBadInput(t *testing.T) {
	good := Config{Kubeconfig: kubeconfigFor(t), Namespace: testNS, Profile: "quick", Image: testImg, Group: "g",
		NodeHost: "127.0.0.1", ConsoleHostPort: 1, EdgeHostPort: 2, Prometheus: true, PrometheusImage: promImg, PrometheusHostPort: 3}
	if _, err := New(good); err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no image", func(c *Config) { c.PrometheusImage = "" }, "prometheus image"},
		{"latest", func(c *Config) { c.PrometheusImage = "scaleproof.local/prometheus:latest" }, "never :latest"},
		{"no host port", func(c *Config) { c.PrometheusHostPort = 0 }, "prometheus host port 0"},
		{"sub-second scrape", func(c *Config) { c.ScrapeInterval = 200 * time.Millisecond }, "at least 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
