// Package local is the embedded default platform: the reference system as
// child processes of the harness on 127.0.0.1, each on port 0. The Fleet in
// this package plays the part Kubernetes plays on kind (scale subresource,
// EndpointSlices, readiness probes, ReplicaSet), so a console restart leaves
// the workers serving.
//
// Must not import scenarios/.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/promserver"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// Config configures the local platform. Durations are wall-clock.
type Config struct {
	Bin     string // path to the scaleproof-ref binary
	WorkDir string // state and process logs go here (created); never the API keys (KeysFile)
	Group   string // the group the scenarios use
	// LogDir receives every process's log, written as they run, so it holds
	// their shutdown lines too (default WorkDir/logs). DumpLogs into LogDir
	// is a no-op: the harness points it at its artifacts' logs/ to keep one
	// complete copy.
	LogDir string

	UpCooldown   time.Duration // console --up-cooldown (Ramen 0.7.5: 30 s)
	DownCooldown time.Duration // console --down-cooldown (Ramen 0.7.5: 120 s)
	StartupGrace time.Duration // console --startup-grace (starting workers are capacity, not down: 120 s)
	TargetRPS    float64       // console --target-rps (Ramen 0.7.5: 50)
	ConsoleDrain time.Duration // console --drain (Ramen 0.7.5: 40 s)

	Worker        WorkerSpec    // Bin and LogDir are filled in from Bin and WorkDir
	ProbeInterval time.Duration // fleet readiness probe interval (500 ms when zero)
	Discovery     time.Duration // edge --discovery-interval (500 ms when zero)
	Log           *slog.Logger
	// Prometheus: whether and how the platform runs Prometheus
	// (prometheus.go); the zero value runs none.
	Prometheus PrometheusConfig
	// InflightMaxAge is the edge's --inflight-max-age, the window of
	// the edge's in-flight summary (0: the edge's default, 1 min).
	InflightMaxAge time.Duration
	// Faults are planted bugs (autoscaler/faults) for the self-test and
	// tests, never set by `scaleproof run`: each goes to the --fault flag of
	// the server its Component names (console, edge, every worker).
	Faults faults.Set
}

// Local is the local platform.
type Local struct {
	cfg   Config
	log   *slog.Logger
	fleet *Fleet

	mu        sync.Mutex
	fleetSrv  *http.Server
	fleetURL  string
	console   *proc
	edge      *proc
	cancel    context.CancelFunc
	keys      platform.Keys
	keysFile  string // the console's keys file, in a private folder (0700) outside WorkDir; Down removes it
	endpoints platform.Endpoints
	down      bool
	prom      *promserver.Server // started by the platform; nil otherwise
	promURL   string             // the Prometheus in use; "" when none
	sd        *fileSD            // its file_sd file; nil without Prometheus
	frozen    map[string]*proc   // workers Freeze stopped, by ID (faults.go)
}

var _ platform.Platform = (*Local)(nil)

// New returns a local platform; nothing starts until Up.
func New(cfg Config) *Local {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Discovery <= 0 {
		cfg.Discovery = 500 * time.Millisecond
	}
	// Absolute, so that every path handed to a child process (and to
	// Prometheus, which reads its paths relative to its config file) names
	// the same file whatever the child's idea of "relative" is.
	if abs, err := filepath.Abs(cfg.WorkDir); err == nil {
		cfg.WorkDir = abs
	}
	if abs, err := filepath.Abs(cfg.LogDir); err == nil && cfg.LogDir != "" {
		cfg.LogDir = abs
	}
	cfg.Worker.Bin = cfg.Bin
	cfg.Worker.LogDir = cfg.LogDir
	if cfg.Worker.LogDir == "" {
		cfg.Worker.LogDir = filepath.Join(cfg.WorkDir, "logs")
	}
	if cfg.Worker.DrainDelay == 0 {
		// The worker keeps serving two discovery refreshes after SIGTERM,
		// so the edge has stopped routing to it before its listener closes.
		cfg.Worker.DrainDelay = 2 * cfg.Discovery
	}
	cfg.Worker.Faults = cfg.Faults.For(faults.ComponentWorker).String()
	return &Local{cfg: cfg, log: cfg.Log}
}

// Name is "local".
func (l *Local) Name() string { return "local" }

// Up starts the fleet server, the console and the edge, and waits for their /readyz.
func (l *Local) Up(ctx context.Context) (platform.Endpoints, error) {
	c := l.cfg
	if _, err := os.Stat(c.Bin); err != nil {
		return platform.Endpoints{}, fmt.Errorf("local: reference binary %q: %w (run `make build`)", c.Bin, err)
	}
	for _, d := range []string{c.WorkDir, c.Worker.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return platform.Endpoints{}, fmt.Errorf("local: %w", err)
		}
	}
	l.keys = platform.NewKeys(c.Group)
	// The keys are secrets and WorkDir is under the run's artifacts, which
	// are published: they go to a private folder (0700) that Down removes.
	secrets, err := os.MkdirTemp("", "scaleproof-keys-")
	if err != nil {
		return platform.Endpoints{}, fmt.Errorf("local: private folder for the API keys: %w", err)
	}
	l.mu.Lock()
	l.keysFile = filepath.Join(secrets, "keys.json")
	l.mu.Unlock()
	if err := platform.WriteKeysFile(l.keysFile, l.keys); err != nil {
		return platform.Endpoints{}, err
	}

	rctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.fleet = NewFleet(c.Worker, c.ProbeInterval, l.log.With("component", "fleet"))
	go l.fleet.Run(rctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return platform.Endpoints{}, fmt.Errorf("local: fleet listen: %w", err)
	}
	l.fleetSrv = serve.NewServer(l.fleet.Handler(), 0)
	go func() { _ = l.fleetSrv.Serve(ln) }()
	l.fleetURL = "http://" + ln.Addr().String()

	if err := l.startPrometheus(ctx); err != nil {
		return platform.Endpoints{}, err
	}
	if err := l.startConsole(ctx, "127.0.0.1:0"); err != nil {
		return platform.Endpoints{}, err
	}
	edgeArgs := []string{"edge", "--listen", "127.0.0.1:0", "--fleet", l.fleetURL, "--discovery-interval", c.Discovery.String(), "--drain", "5s"}
	if c.InflightMaxAge > 0 {
		edgeArgs = append(edgeArgs, "--inflight-max-age", c.InflightMaxAge.String())
	}
	if f := c.Faults.For(faults.ComponentEdge).String(); f != "" {
		edgeArgs = append(edgeArgs, "--fault", f)
	}
	edge, err := startProc(ctx, c.Bin, c.Worker.LogDir, "edge", edgeArgs, nil, 15*time.Second)
	if err != nil {
		return platform.Endpoints{}, fmt.Errorf("local: %w", err)
	}
	l.mu.Lock()
	l.edge = edge
	l.endpoints = platform.Endpoints{ConsoleURL: "http://" + l.console.addr, EdgeURL: "http://" + edge.addr, Group: c.Group, Keys: l.keys,
		PrometheusURL: l.promURL, Canary: c.Worker.Canary}
	l.mu.Unlock()
	l.announceTarget("edge", edge.addr)
	for _, p := range []*proc{l.console, edge} {
		if err := serve.WaitOK(ctx, "http://"+p.addr+"/readyz", upReadyTimeout, p.done); err != nil {
			return platform.Endpoints{}, fmt.Errorf("local: %s (log %s): %w", p.name, p.logf.Name(), err)
		}
	}
	if err := l.checkPrometheusScrapes(ctx, edge.addr); err != nil {
		return platform.Endpoints{}, err
	}
	return l.endpoints, nil
}

func (l *Local) startConsole(ctx context.Context, listen string) error {
	c := l.cfg
	args := []string{"console", "--listen", listen,
		"--keys", l.KeysFile(),
		"--state", filepath.Join(c.WorkDir, "console.db"),
		"--fleet", l.fleetURL,
		"--up-cooldown", c.UpCooldown.String(), "--down-cooldown", c.DownCooldown.String(),
		"--startup-grace", c.StartupGrace.String(),
		"--target-rps", strconv.FormatFloat(c.TargetRPS, 'f', -1, 64),
		"--drain", c.ConsoleDrain.String()}
	if u := l.PrometheusURL(); u != "" {
		args = append(args, "--prometheus", u)
	}
	if fs := c.Faults.For(faults.ComponentConsole); len(fs) > 0 {
		args = append(args, "--fault", fs.String())
	}
	p, err := startProc(ctx, c.Bin, c.Worker.LogDir, "console", args, nil, 15*time.Second)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	l.mu.Lock()
	l.console = p
	l.mu.Unlock()
	l.announceTarget("console", p.addr)
	return nil
}

// RestartConsole kills the console (SIGKILL when hard, else SIGTERM and
// drain) and starts it again on the same state file and, like a Service in
// front of a restarted pod, on the same address, so the edge, the harness's
// samplers and its /readyz poller keep reaching it. Only when that address
// cannot be bound again does the console move to a new port; the returned
// URL (and Endpoints) then names it.
func (l *Local) RestartConsole(ctx context.Context, hard bool) (string, error) {
	l.mu.Lock()
	p := l.console
	l.mu.Unlock()
	if hard {
		p.kill()
	} else if err := p.stop(l.cfg.ConsoleDrain + 5*time.Second); err != nil {
		// The old console is gone either way (stop kills it after the
		// grace): like a pod's container, it is started again whatever
		// its exit, and the run goes on against the new one.
		l.log.Warn("console did not stop cleanly before its restart", "err", err)
	}
	if err := l.startConsole(ctx, p.addr); err != nil {
		l.log.Warn("console could not listen on its old address again; moving it", "addr", p.addr, "err", err)
		if err := l.startConsole(ctx, "127.0.0.1:0"); err != nil {
			return "", err
		}
	}
	l.mu.Lock()
	u, done := "http://"+l.console.addr, l.console.done
	l.endpoints.ConsoleURL = u
	l.mu.Unlock()
	return u, serve.WaitOK(ctx, u+"/readyz", upReadyTimeout, done)
}

// Fleet exposes the worker supervisor (fault tests freeze or kill workers through it).
func (l *Local) Fleet() *Fleet { return l.fleet }

// SignalWorker sends sig to a listed worker (SIGKILL, SIGSTOP, SIGCONT).
func (l *Local) SignalWorker(id string, sig syscall.Signal) error {
	w := l.fleet.worker(id)
	if w == nil {
		return fmt.Errorf("local: no worker %q", id)
	}
	return w.p.signal(sig)
}

// IsUp reports whether the console and edge answer /readyz.
func (l *Local) IsUp(ctx context.Context) (bool, error) {
	l.mu.Lock()
	e := l.endpoints
	l.mu.Unlock()
	if e.ConsoleURL == "" {
		return false, nil
	}
	for _, u := range []string{e.ConsoleURL, e.EdgeURL} {
		if err := waitReady(ctx, u+"/readyz", time.Second); err != nil {
			return false, nil
		}
	}
	return true, nil
}

// DumpLogs copies the process logs into dir.
func (l *Local) DumpLogs(_ context.Context, dir string) error {
	src := l.cfg.Worker.LogDir
	if filepath.Clean(src) == filepath.Clean(dir) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Down stops the edge, the console and every worker (each drained, bounded),
// then the fleet server. Safe to call twice.
func (l *Local) Down(ctx context.Context) error {
	l.mu.Lock()
	if l.down {
		l.mu.Unlock()
		return nil
	}
	l.down = true
	edge, console := l.edge, l.console
	l.mu.Unlock()
	l.thawAll()
	var errs []error
	if edge != nil {
		errs = append(errs, edge.stop(10*time.Second))
	}
	if console != nil {
		errs = append(errs, console.stop(l.cfg.ConsoleDrain+5*time.Second))
	}
	if l.fleet != nil {
		l.fleet.Close()
	}
	if l.cancel != nil {
		l.cancel()
	}
	if l.fleetSrv != nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		errs = append(errs, l.fleetSrv.Shutdown(sctx))
		cancel()
	}
	errs = append(errs, l.stopPrometheus())
	if kf := l.KeysFile(); kf != "" {
		errs = append(errs, os.RemoveAll(filepath.Dir(kf)))
	}
	return errors.Join(errs...)
}

// KeysFile is the path of the console's API keys file (JSON, mode 0600) in
// a private folder (0700) outside the artifacts, while the platform is up;
// "" before Up. Down removes it.
func (l *Local) KeysFile() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keysFile
}

// upReadyTimeout bounds the wait for a started console or edge to answer
// /readyz 200 (the store opened, the first discovery done): well under a
// second on an idle machine; the bound leaves room for a machine whose
// cores are all busy (the self-test runs three platforms at once beside
// other builds). A process that exits ends the wait at once.
const upReadyTimeout = 60 * time.Second

// waitReady waits until url answers 200 (see serve.WaitOK).
func waitReady(ctx context.Context, url string, timeout time.Duration) error {
	return serve.WaitOK(ctx, url, timeout, nil)
}
