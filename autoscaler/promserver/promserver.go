// Package promserver runs a real Prometheus server (Debian's `prometheus`
// 2.x binary, found on PATH) for the reference system: on 127.0.0.1 with a
// free port, a generated configuration whose one scrape job reads its targets
// from a file (file-based service discovery), its TSDB in a directory of the
// caller's, and a bounded wait for /-/ready. Stop ends it (SIGTERM, then
// SIGKILL) and is safe to call twice.
//
// The local platform uses it as the metric source of hpa zones and
// tests use it as a real Prometheus started by the test. WriteTargets writes
// the file_sd JSON atomically (write, then rename), so Prometheus never
// reads half a file.
//
// Imports only autoscaler/serve and autoscaler/api of this module.
package promserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/api"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

// Binary is the name looked up on PATH.
const Binary = "prometheus"

// DefaultReadyTimeout bounds the wait for /-/ready.
const DefaultReadyTimeout = 60 * time.Second

// ErrNotFound: no prometheus binary on PATH.
var ErrNotFound = errors.New("prometheus not found on PATH (Debian: apt-get install --no-install-recommends prometheus; or `make deps-prometheus`)")

// Find returns the path of the prometheus binary on PATH, or ErrNotFound.
func Find() (string, error) {
	p, err := exec.LookPath(Binary)
	if err != nil {
		return "", ErrNotFound
	}
	return p, nil
}

// Config configures Start.
type Config struct {
	// Bin is the prometheus binary; Find() when empty.
	Bin string
	// Dir holds the configuration, the targets file and the TSDB (created).
	Dir string
	// ScrapeInterval and EvalInterval: Prometheus' global scrape_interval
	// and evaluation_interval (1 s when zero). The scrape timeout is the
	// scrape interval, capped at 10 s.
	ScrapeInterval time.Duration
	EvalInterval   time.Duration
	// Job is the scrape job's name ("scaleproof" when empty). Targets keep
	// their own labels (honor_labels: true), so the edge's group and zone
	// labels survive.
	Job string
	// StaticTargets are host:port targets scraped besides the file_sd ones
	// (tests use them for an httptest server).
	StaticTargets []string
	// RuleFiles are loaded as rule_files (alerting or recording rules).
	RuleFiles []string
	// LogPath receives Prometheus' own log (Dir/prometheus.log when empty).
	LogPath string
	// ReadyTimeout bounds the wait for /-/ready (DefaultReadyTimeout when 0).
	ReadyTimeout time.Duration
	// Retention of the TSDB (2h when zero: runs are short).
	Retention time.Duration
}

// TargetGroup is one entry of a file_sd file.
type TargetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// Server is a running Prometheus.
type Server struct {
	url, targets, config string
	cmd                  *exec.Cmd
	logf                 *os.File
	done                 chan struct{}
	exitErr              error
}

// URL is the server's base URL, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.url }

// TargetsFile is the file_sd file the scrape job watches.
func (s *Server) TargetsFile() string { return s.targets }

// ConfigFile is the generated prometheus.yml.
func (s *Server) ConfigFile() string { return s.config }

// Done is closed when the process has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// Start writes the configuration (and an empty targets file when none
// exists), starts Prometheus on 127.0.0.1 with a free port and waits until
// /-/ready answers 200. On failure nothing is left running. The free port is
// found by binding port 0 and closing it; a start that loses the port to
// another process is retried (three tries in all).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Bin == "" {
		b, err := Find()
		if err != nil {
			return nil, err
		}
		cfg.Bin = b
	}
	if cfg.Dir == "" {
		return nil, errors.New("promserver: no directory")
	}
	// Prometheus resolves a relative path in its configuration against the
	// configuration file's directory, not against our working directory: every
	// path it is given must be absolute (a relative --artifacts folder once left
	// the file_sd job reading a file that did not exist, so nothing was scraped).
	var err error
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, fmt.Errorf("promserver: %w", err)
	}
	if cfg.LogPath != "" {
		if cfg.LogPath, err = filepath.Abs(cfg.LogPath); err != nil {
			return nil, fmt.Errorf("promserver: %w", err)
		}
	}
	rules := make([]string, len(cfg.RuleFiles))
	for i, f := range cfg.RuleFiles {
		if rules[i], err = filepath.Abs(f); err != nil {
			return nil, fmt.Errorf("promserver: %w", err)
		}
	}
	cfg.RuleFiles = rules
	if cfg.ScrapeInterval <= 0 {
		cfg.ScrapeInterval = time.Second
	}
	if cfg.EvalInterval <= 0 {
		cfg.EvalInterval = time.Second
	}
	if cfg.Job == "" {
		cfg.Job = "scaleproof"
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 2 * time.Hour
	}
	if cfg.LogPath == "" {
		cfg.LogPath = filepath.Join(cfg.Dir, "prometheus.log")
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("promserver: %w", err)
	}
	s := &Server{targets: filepath.Join(cfg.Dir, "targets.json"), config: filepath.Join(cfg.Dir, "prometheus.yml")}
	if _, err := os.Stat(s.targets); errors.Is(err, os.ErrNotExist) {
		if err := WriteTargets(s.targets, nil); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(s.config, []byte(configYAML(cfg, s.targets)), 0o644); err != nil {
		return nil, fmt.Errorf("promserver: write config: %w", err)
	}
	var last error
	for range 3 {
		srv, err := s.start(ctx, cfg)
		if err == nil {
			return srv, nil
		}
		last = err
		if ctx.Err() != nil || !errors.Is(err, errExited) {
			break
		}
	}
	return nil, last
}

var errExited = errors.New("prometheus exited")

func (s *Server) start(ctx context.Context, cfg Config) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logf, err := os.OpenFile(cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("promserver: log file: %w", err)
	}
	cmd := exec.Command(cfg.Bin,
		"--config.file="+s.config,
		"--storage.tsdb.path="+filepath.Join(cfg.Dir, "data"),
		"--storage.tsdb.retention.time="+api.PromDuration(cfg.Retention),
		"--web.listen-address="+addr,
		"--web.enable-lifecycle",
		"--log.level=info")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group (a terminal's Ctrl-C reaches the caller, which stops
	// it in order) and SIGKILL if the caller dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("promserver: start %s: %w", cfg.Bin, err)
	}
	srv := &Server{url: "http://" + addr, targets: s.targets, config: s.config, cmd: cmd, logf: logf, done: make(chan struct{})}
	go func() {
		srv.exitErr = cmd.Wait()
		close(srv.done)
	}()
	if err := srv.waitReady(ctx, cfg.ReadyTimeout); err != nil {
		_ = srv.Stop(5 * time.Second)
		return nil, fmt.Errorf("%w (log: %s)", err, cfg.LogPath)
	}
	return srv, nil
}

// waitReady waits for /-/ready to answer 200, the process to exit, or timeout.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	if err := serve.WaitOK(ctx, s.url+"/-/ready", timeout, s.done); err != nil {
		select {
		case <-s.done:
			return fmt.Errorf("promserver: %w before it was ready: %v", errExited, s.exitErr)
		default:
		}
		return fmt.Errorf("promserver: %w", err)
	}
	return nil
}

// Stop sends SIGTERM and waits up to grace for a clean shutdown, then
// SIGKILL. Safe to call more than once.
func (s *Server) Stop(grace time.Duration) error {
	if s == nil || s.cmd == nil {
		return nil
	}
	select {
	case <-s.done:
		s.logf.Close()
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	var err error
	select {
	case <-s.done:
	case <-t.C:
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.done
		err = fmt.Errorf("promserver: prometheus did not stop within %s: killed", grace)
	}
	s.logf.Close()
	return err
}

// Kill ends the process at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	if s == nil || s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.logf.Close()
}

// WriteTargets writes a file_sd file atomically: a temporary file in the
// same directory, then a rename over path.
func WriteTargets(path string, groups []TargetGroup) error {
	if groups == nil {
		groups = []TargetGroup{}
	}
	b, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return fmt.Errorf("promserver: encode targets: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".targets-*.json")
	if err != nil {
		return fmt.Errorf("promserver: write targets: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("promserver: write targets: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("promserver: write targets: %w", err)
	}
	return nil
}

// configYAML renders prometheus.yml. JSON strings are valid YAML scalars,
// so paths and targets are quoted with strconv.Quote-compatible JSON.
func configYAML(cfg Config, targets string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	timeout := min(cfg.ScrapeInterval, 10*time.Second)
	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by scaleproof (autoscaler/promserver); rewritten at every start.\n")
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n",
		api.PromDuration(cfg.ScrapeInterval), api.PromDuration(timeout), api.PromDuration(cfg.EvalInterval))
	if len(cfg.RuleFiles) > 0 {
		b.WriteString("rule_files:\n")
		for _, f := range cfg.RuleFiles {
			fmt.Fprintf(&b, "  - %s\n", q(f))
		}
	}
	b.WriteString("scrape_configs:\n")
	fmt.Fprintf(&b, "  - job_name: %s\n    honor_labels: true\n", q(cfg.Job))
	fmt.Fprintf(&b, "    file_sd_configs:\n      - files: [%s]\n        refresh_interval: 5s\n", q(targets))
	if len(cfg.StaticTargets) > 0 {
		b.WriteString("    static_configs:\n      - targets: [")
		for i, t := range cfg.StaticTargets {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(q(t))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// freePort binds 127.0.0.1:0, notes the port and releases it.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("promserver: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// DefaultTargetTimeout bounds WaitTargetUp: a file_sd refresh (5 s) plus a
// few scrape intervals.
const DefaultTargetTimeout = 30 * time.Second

// WaitTargetUp polls the Prometheus at baseURL (/api/v1/targets) until one
// of its active targets scrapes addr (host:port) with health "up", for at
// most timeout (DefaultTargetTimeout when 0). It is the check that a
// Prometheus is really collecting what the caller needs: a Prometheus with
// no healthy target answers every query with no series, which a policy that
// reads an empty result as zero would take as no load. The error lists the
// targets Prometheus does have (as the last poll the wait's end did not cut
// short saw them, when there was one).
func WaitTargetUp(ctx context.Context, baseURL, addr string, timeout time.Duration) error {
	return WaitTargetUpFunc(ctx, baseURL, addr, func(host string) bool { return host == addr }, timeout)
}

// WaitTargetUpFunc is WaitTargetUp for the first active target whose
// scrape URL's host:port match accepts (what names it in the error): a
// Prometheus in a cluster finds its targets by DNS, under names the
// caller does not know in advance.
func WaitTargetUpFunc(ctx context.Context, baseURL, what string, match func(host string) bool, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultTargetTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	const noAnswer = "no answer"
	last := noAnswer
	for {
		up, seen, err := targetUp(ctx, hc, strings.TrimRight(baseURL, "/"), match)
		if err != nil {
			// A poll the wait's own end cut short keeps the answer before it.
			if last == noAnswer || ctx.Err() == nil {
				last = err.Error()
			}
		} else if up {
			return nil
		} else {
			last = "active targets: " + seen
		}
		select {
		case <-ctx.Done():
			if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return fmt.Errorf("promserver: prometheus %s has no healthy target %s after %s (%s)", baseURL, what, timeout, last)
		case <-tick.C:
		}
	}
}

// targetUp asks /api/v1/targets once: whether a target whose host:port
// match accepts is scraped with health "up", and a summary of the active
// targets for the error.
func targetUp(ctx context.Context, hc *http.Client, base string, match func(string) bool) (bool, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/targets?state=active", nil)
	if err != nil {
		return false, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, "", fmt.Errorf("/api/v1/targets: HTTP %d", resp.StatusCode)
	}
	var body struct {
		Data struct {
			ActiveTargets []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&body); err != nil {
		return false, "", fmt.Errorf("/api/v1/targets: %w", err)
	}
	var seen []string
	for _, t := range body.Data.ActiveTargets {
		host := t.ScrapeURL
		if u, err := url.Parse(t.ScrapeURL); err == nil {
			host = u.Host
		}
		if match(host) && t.Health == "up" {
			return true, "", nil
		}
		d := host + " " + t.Health
		if t.LastError != "" {
			d += ": " + t.LastError
		}
		seen = append(seen, d)
	}
	if len(seen) == 0 {
		return false, "none", nil
	}
	return false, strings.Join(seen, "; "), nil
}
