package local

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/promserver"
)

// Prometheus modes of PrometheusConfig.Mode.
const (
	// PrometheusAuto starts Debian's prometheus when it is on PATH, and runs
	// without one otherwise.
	PrometheusAuto = "auto"
	// PrometheusOff runs without Prometheus (hpa zones then hold).
	PrometheusOff = "off"
)

// PrometheusConfig is the local platform's Prometheus: the
// metric source of hpa zones and the harness's view of their signal.
type PrometheusConfig struct {
	// Mode is PrometheusAuto, PrometheusOff ("" is off), or the base URL of
	// a Prometheus that is already running (it is used as it is: point its
	// file_sd at TargetsFile to have it scrape the local system).
	Mode string
	// Bin is the prometheus binary (found on PATH when empty).
	Bin string
	// ScrapeInterval and EvalInterval of the generated configuration
	// (quick: 1 s and 1 s; published: 5 s and 15 s).
	ScrapeInterval, EvalInterval time.Duration
	// ReadyTimeout bounds the wait for /-/ready (60 s when zero).
	ReadyTimeout time.Duration
	// TargetTimeout bounds Up's wait for Prometheus to scrape the edge
	// healthily (promserver.DefaultTargetTimeout when zero); Up fails when it
	// does not.
	TargetTimeout time.Duration
}

// ValidatePrometheusMode checks a --prometheus value: auto, off or an
// http(s) URL.
func ValidatePrometheusMode(mode string) error {
	switch mode {
	case "", PrometheusAuto, PrometheusOff:
		return nil
	}
	if u, err := url.Parse(mode); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--prometheus %q: want auto, off or http://HOST:PORT", mode)
	}
	return nil
}

// PrometheusAvailable reports whether mode yields a Prometheus on this
// machine (a URL always does; auto when the binary is on PATH), and why not.
func PrometheusAvailable(mode, bin string) (bool, string) {
	switch mode {
	case "", PrometheusOff:
		return false, "--prometheus off"
	case PrometheusAuto:
		if bin != "" {
			return true, ""
		}
		if _, err := promserver.Find(); err != nil {
			return false, err.Error()
		}
		return true, ""
	}
	return true, ""
}

// TargetsFile is the file_sd file the fleet keeps up to date (under WorkDir).
func (l *Local) TargetsFile() string {
	return filepath.Join(l.cfg.WorkDir, "prometheus", "targets.json")
}

// PrometheusURL is the Prometheus in use ("" when none).
func (l *Local) PrometheusURL() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.promURL
}

// startPrometheus sets up the file_sd file and, per the mode, starts
// Prometheus (waiting for /-/ready) or takes the given URL.
func (l *Local) startPrometheus(ctx context.Context) error {
	pc := l.cfg.Prometheus
	if pc.Mode == "" || pc.Mode == PrometheusOff {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.TargetsFile()), 0o755); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	l.sd = newFileSD(l.TargetsFile(), l.log)
	if err := l.sd.write(); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	l.fleet.SetFileSD(l.sd)
	if pc.Mode != PrometheusAuto {
		l.mu.Lock()
		l.promURL = pc.Mode
		l.mu.Unlock()
		l.log.Info("prometheus: using the given server", "url", pc.Mode, "targets_file", l.TargetsFile())
		return nil
	}
	bin := pc.Bin
	if bin == "" {
		b, err := promserver.Find()
		if err != nil {
			l.log.Warn("prometheus: not started", "err", err)
			return nil
		}
		bin = b
	}
	start := time.Now()
	srv, err := promserver.Start(ctx, promserver.Config{
		Bin: bin, Dir: filepath.Dir(l.TargetsFile()),
		ScrapeInterval: pc.ScrapeInterval, EvalInterval: pc.EvalInterval,
		LogPath: filepath.Join(l.cfg.Worker.LogDir, "prometheus.log"), ReadyTimeout: pc.ReadyTimeout,
	})
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	l.mu.Lock()
	l.prom, l.promURL = srv, srv.URL()
	l.mu.Unlock()
	l.log.Info("prometheus ready", "url", srv.URL(), "took", time.Since(start).String(), "config", srv.ConfigFile())
	return nil
}

// announceTarget adds the console's or the edge's address to the file_sd
// file (no-op without Prometheus).
func (l *Local) announceTarget(component, addr string) {
	if l.sd == nil {
		return
	}
	if err := l.sd.setExtra(component, promserver.TargetGroup{Targets: []string{addr},
		Labels: map[string]string{"component": component}}); err != nil {
		l.log.Warn("prometheus targets", "component", component, "err", err)
	}
}

// stopPrometheus stops the Prometheus the platform started.
func (l *Local) stopPrometheus() error {
	l.mu.Lock()
	srv := l.prom
	l.prom = nil
	l.mu.Unlock()
	return srv.Stop(10 * time.Second)
}

// checkPrometheusScrapes fails Up loudly when the Prometheus in use does not
// scrape the edge: hpa zones read its in-flight gauge, and a Prometheus with
// no healthy target answers every query with no series, which a zone that
// reads empty as zero takes as no load and never scales. No-op without
// Prometheus.
func (l *Local) checkPrometheusScrapes(ctx context.Context, edgeAddr string) error {
	u := l.PrometheusURL()
	if u == "" {
		return nil
	}
	timeout := l.cfg.Prometheus.TargetTimeout
	if err := promserver.WaitTargetUp(ctx, u, edgeAddr, timeout); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("local: waiting for Prometheus to scrape the edge: %w", ctx.Err())
		}
		hint := "its file_sd configuration must read " + l.TargetsFile()
		if l.cfg.Prometheus.Mode == PrometheusAuto {
			hint = "see " + filepath.Join(l.cfg.Worker.LogDir, "prometheus.log") + " and " + filepath.Join(filepath.Dir(l.TargetsFile()), "prometheus.yml")
		}
		return fmt.Errorf("local: Prometheus does not scrape the edge, so hpa zones would see no signal: %w; %s", err, hint)
	}
	l.log.Info("prometheus scrapes the edge", "url", u, "edge", edgeAddr)
	return nil
}
