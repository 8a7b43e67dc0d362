package local_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/internal/proctest"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// group is the group every fault test uses.
const group = "g"

// rig is one local platform brought up for one test, with the clients the
// test drives it with. Teardown (Down, then a check that none of its
// processes is left) is registered on t.
type rig struct {
	t    *testing.T
	l    *local.Local
	cfg  local.Config
	ep   platform.Endpoints
	cc   *consoleclient.Client
	hc   *http.Client // load and direct calls to workers; no redirects followed
	work string       // the platform's WorkDir

	downOnce sync.Once
	downErr  error
}

// upLocal brings up a local platform with time-scaled settings (probe and
// discovery every 250 ms, cooldowns of seconds) that mod may change.
func upLocal(t *testing.T, mod func(*local.Config)) *rig {
	t.Helper()
	if refBin == "" {
		t.Skip("process-level fault test: skipped in -short mode")
	}
	work := t.TempDir()
	logf, err := os.Create(filepath.Join(work, "harness.log"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := local.Config{
		Bin: refBin, WorkDir: work, Group: group,
		UpCooldown: time.Second, DownCooldown: time.Hour, StartupGrace: 5 * time.Second,
		TargetRPS: 50, ConsoleDrain: 2 * time.Second,
		Worker:        local.WorkerSpec{MaxInflight: 32, WorkMS: 200, Drain: 10 * time.Second},
		ProbeInterval: 250 * time.Millisecond,
		Discovery:     250 * time.Millisecond,
		Log:           slog.New(slog.NewJSONHandler(logf, nil)),
	}
	if mod != nil {
		mod(&cfg)
	}
	r := &rig{t: t, l: local.New(cfg), cfg: cfg, work: work,
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(func() {
		if err := r.down(); err != nil {
			t.Logf("platform down: %v", err)
		}
		r.hc.CloseIdleConnections()
		logf.Close()
		if pids := proctest.WaitNone(func() []int { return proctest.Of("", work) }, 10*time.Second); len(pids) > 0 {
			t.Errorf("processes of this platform left after Down: %v", pids)
		}
		if t.Failed() {
			r.dumpLogs()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ep, err := r.l.Up(ctx)
	if err != nil {
		t.Fatalf("local platform up: %v", err)
	}
	r.ep = ep
	r.cc = consoleclient.New(ep.ConsoleURL, 10*time.Second)
	return r
}

// down tears the platform down once (tests that read logs call it first).
func (r *rig) down() error {
	r.downOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		r.downErr = r.l.Down(ctx)
	})
	return r.downErr
}

func (r *rig) dumpLogs() {
	files, _ := filepath.Glob(filepath.Join(r.work, "logs", "*.log"))
	files = append(files, filepath.Join(r.work, "harness.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		r.t.Logf("%s (tail):\n%s", filepath.Base(f), b)
	}
}

func (r *rig) admin() string { return r.ep.Keys.GroupAdmin.Key }
func (r *rig) super() string { return r.ep.Keys.SuperAdmin.Key }

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// createZone creates zone with count and max through the console as the group admin.
func (r *rig) createZone(zone string, count, max int) {
	r.t.Helper()
	st, err := r.cc.PutZone(ctxFor(r.t, 20*time.Second), r.admin(), group, zone, consoleclient.Update{Count: &count, MaxCount: &max})
	if err != nil || st != http.StatusOK {
		r.t.Fatalf("create zone %s with count %d, max %d: HTTP %d %v", zone, count, max, st, err)
	}
}

// scheduler turns the console's auto-rebalance scheduler on or off.
func (r *rig) scheduler(on bool, every time.Duration) {
	r.t.Helper()
	st, err := r.cc.SetAutorebalance(ctxFor(r.t, 20*time.Second), r.super(),
		consoleclient.Autorebalance{Enabled: on, IntervalSeconds: every.Seconds()})
	if err != nil || st != http.StatusOK {
		r.t.Fatalf("auto-rebalance enabled=%v every %s: HTTP %d %v", on, every, st, err)
	}
}

// waitUntil polls cond every interval until it holds or timeout passes;
// the failure names what it waited for and the last state cond reported.
func waitUntil(t *testing.T, what string, timeout, interval time.Duration, cond func() (bool, string)) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return state
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: last state: %s", timeout, what, state)
		}
		<-tick.C
	}
}

// fleetZone reads the zone as the fleet (the platform's Kubernetes) sees it.
func (r *rig) fleetZone(zone string) fleet.Zone { return r.l.Fleet().Zone(group, zone) }

// waitReady waits until the fleet lists exactly n ready workers of zone and
// returns them.
func (r *rig) waitReady(zone string, n int, timeout time.Duration) []fleet.Endpoint {
	r.t.Helper()
	var eps []fleet.Endpoint
	waitUntil(r.t, fmt.Sprintf("%d ready workers in %s", n, zone), timeout, 50*time.Millisecond, func() (bool, string) {
		z := r.fleetZone(zone)
		eps = eps[:0]
		for _, ep := range z.Endpoints {
			if ep.Ready {
				eps = append(eps, ep)
			}
		}
		return len(eps) == n && len(z.Endpoints) == n, describe(z)
	})
	return slices.Clone(eps)
}

func describe(z fleet.Zone) string {
	var b strings.Builder
	fmt.Fprintf(&b, "replicas %d:", z.Replicas)
	for _, ep := range z.Endpoints {
		fmt.Fprintf(&b, " %s(ready=%v)", ep.ID, ep.Ready)
	}
	return b.String()
}

// workerMetrics scrapes one worker's /metrics, bounded by timeout: 1 s
// where a frozen worker must time out or a retry follows, 10 s where the
// answer must come (a loaded machine can delay it past 1 s).
func (r *rig) workerMetrics(addr string, timeout time.Duration) (controller.WorkerMetrics, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := r.hc.Do(req)
	if err != nil {
		return controller.WorkerMetrics{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return controller.WorkerMetrics{}, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return controller.ParseWorkerMetrics(resp.Body)
}

// waitServing waits until every worker in eps has a call in flight (the
// edge routes to all of them).
func (r *rig) waitServing(eps []fleet.Endpoint, timeout time.Duration) {
	r.t.Helper()
	waitUntil(r.t, "every worker to have a call in flight", timeout, 50*time.Millisecond, func() (bool, string) {
		var parts []string
		all := true
		for _, ep := range eps {
			m, err := r.workerMetrics(ep.Addr, time.Second)
			parts = append(parts, fmt.Sprintf("%s: %d in flight %v", ep.ID, m.InFlight, err))
			if err != nil || m.InFlight == 0 {
				all = false
			}
		}
		return all, strings.Join(parts, ", ")
	})
}

// loadRun is VUs of tools/call work {"ms": ms} through the edge on one zone.
type loadRun struct {
	m    *load.Metrics
	stop chan struct{}
	once sync.Once
	done chan struct{}
	err  error

	mu      sync.Mutex
	results []load.Result
}

// startLoad starts the load once the edge routes calls for zone.
func (r *rig) startLoad(zone string, vus, ms int, d, gracefulStop time.Duration) *loadRun {
	r.waitRoutable(zone, 30*time.Second)
	p := load.ConstantVUs(vus, d)
	p.GracefulStop = gracefulStop
	p.ThinkTime = 0
	url := r.ep.EdgeURL + "/g/" + group + "/z/" + zone + "/mcp"
	exec := load.MCPToolCall(r.hc, url, "work", map[string]any{"ms": ms}, nil)
	l := &loadRun{m: load.NewMetrics(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		_, l.err = load.Run(context.Background(), p, exec, load.WithMetrics(l.m), load.WithStop(l.stop),
			load.WithResults(func(res load.Result) {
				l.mu.Lock()
				l.results = append(l.results, res)
				l.mu.Unlock()
			}))
	}()
	r.t.Cleanup(func() {
		l.Stop()
		select {
		case <-l.done:
		case <-time.After(2 * time.Minute):
			r.t.Errorf("waited 2m0s for the load on %s to end", zone)
		}
	})
	return l
}

// waitRoutable waits until a tools/call through the edge on zone answers
// 200 (the edge's discovery lists a ready worker of the zone).
func (r *rig) waitRoutable(zone string, timeout time.Duration) {
	r.t.Helper()
	url := r.ep.EdgeURL + "/g/" + group + "/z/" + zone + "/mcp"
	exec := load.MCPToolCall(r.hc, url, "work", map[string]any{"ms": 0}, nil)
	waitUntil(r.t, "the edge to route calls for "+zone, timeout, 50*time.Millisecond, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res := exec(ctx, 0, 0)
		return res.Class == load.ClassOK, fmt.Sprintf("%s %d %s", res.Class, res.Status, res.Err)
	})
}

// Stop ends the load: calls in flight get the graceful stop to finish.
func (l *loadRun) Stop() { l.once.Do(func() { close(l.stop) }) }

// Wait waits for the load to end.
func (l *loadRun) Wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(timeout):
		t.Fatalf("waited %s for the load to end", timeout)
	}
	if l.err != nil {
		t.Errorf("load: %v", l.err)
	}
}

func (l *loadRun) Results() []load.Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.results)
}

// failed lists the results that are neither ok nor 429 (back-pressure).
func failed(rs []load.Result) []load.Result {
	var out []load.Result
	for _, r := range rs {
		if r.Class != load.ClassOK && r.Class != load.Class429 {
			out = append(out, r)
		}
	}
	return out
}

// sampler samples a zone through the console every 250 ms as the super admin.
func (r *rig) sampler(zone string) *observe.Zone {
	read := target.NewConsoleWith(r.cc, platform.Keys{}, group, zone, target.ConsoleSettings{}, target.ReadAs(r.super())).State
	z := observe.NewZone(read, group+"/"+zone, 250*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); z.Run(ctx) }()
	r.t.Cleanup(func() { cancel(); <-done })
	return z
}

// audit lists the audit entries of zone, oldest first.
func (r *rig) audit(zone string) []consoleclient.AuditEntry {
	r.t.Helper()
	es, st, err := r.cc.Audit(ctxFor(r.t, 10*time.Second), r.super(), group, zone)
	if err != nil || st != http.StatusOK {
		r.t.Fatalf("audit of %s: HTTP %d %v", zone, st, err)
	}
	slices.SortFunc(es, func(a, b consoleclient.AuditEntry) int { return int(a.ID) - int(b.ID) })
	return es
}

// autoscales returns the zone's workers.autoscale entries with the action.
func autoscales(es []consoleclient.AuditEntry, action string) []consoleclient.AuditEntry {
	var out []consoleclient.AuditEntry
	for _, e := range es {
		if e.Action == controller.AuditAutoscale && e.Tags["action"] == action {
			out = append(out, e)
		}
	}
	return out
}

// consoleDecisions reads scaleproof_console_decisions_total by action.
func (r *rig) consoleDecisions() map[string]float64 {
	r.t.Helper()
	resp, err := r.hc.Get(r.ep.ConsoleURL + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, `scaleproof_console_decisions_total{action="`)
		if !ok {
			continue
		}
		action, val, _ := strings.Cut(rest, `"} `)
		f, _ := strconv.ParseFloat(val, 64)
		out[action] = f
	}
	return out
}

// logLine is one JSON log line of a reference process.
type logLine struct {
	Time   time.Time `json:"time"`
	Msg    string    `json:"msg"`
	Worker string    `json:"worker"`
	Raw    string    `json:"-"`
}

// logOf reads the JSON lines of a process log (logs/NAME.log).
func (r *rig) logOf(name string) []logLine {
	b, err := os.ReadFile(filepath.Join(r.work, "logs", name+".log"))
	if err != nil {
		return nil
	}
	var out []logLine
	for _, line := range bytes.Split(b, []byte("\n")) {
		var l logLine
		if json.Unmarshal(line, &l) == nil {
			l.Raw = string(line)
			out = append(out, l)
		}
	}
	return out
}

func hasMsg(ls []logLine, msg string) bool {
	return slices.ContainsFunc(ls, func(l logLine) bool { return l.Msg == msg })
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read %s: %v", path, err)
	}
	return string(b)
}
