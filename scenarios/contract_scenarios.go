package scenarios

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// Contract returns the scenarios that check how an autoscaler behaves in an
// outage, a scale-in, a console restart, on the rate path, when a worker is
// not ready, and on loads built for one step rule (steprules.go). They are not
// in the default set (that stays the five of the published table); `run
// --scenarios contract` selects them all, or each by name.
func Contract() []Scenario {
	return []Scenario{Outage(), ScaleInDrain(), NoDoubleExecution(), RatePath(), RestartCooldown(), RestartKeepsChanges(), ReadinessRouting(), LowStreakReset(), UnevenLoad()}
}

// ContractSet is the --scenarios name that selects every Contract scenario.
const ContractSet = "contract"

// skipError ends a scenario without a verdict of pass or fail: the platform
// cannot perform a fault action the scenario needs.
type skipError struct{ reason string }

func (e *skipError) Error() string { return "skipped: " + e.reason }

// skip turns a platform's refusal of a fault action into a skip (its reason
// kept), and any other error into itself.
func skip(err error) error {
	if errors.Is(err, platform.ErrNotOffered) {
		return &skipError{reason: err.Error()}
	}
	return err
}

// stepOnly skips a scenario that checks the step policy's own rules (its
// cooldowns, its low rounds, its calls-per-second trigger) when the run's
// zones use another policy.
func stepOnly(e *Env) error {
	if e.Policy != "" && e.Policy != PolicyStep {
		return &skipError{reason: fmt.Sprintf("it checks the step policy's rules (its cooldowns, low rounds and calls-per-second trigger); this run's zones use the %s policy", e.Policy)}
	}
	return nil
}

// needsFaults skips a scenario before it touches the system when the
// platform offers no fault action at all (platform.NoFaults): a skipped
// scenario leaves no zone behind on a system the harness did not deploy.
func needsFaults(e *Env, action string) error {
	switch f := e.faults().(type) {
	case platform.NoFaults:
		return &skipError{reason: (&platform.NotOfferedError{Platform: f.Platform, Action: action, Reason: f.Reason}).Error()}
	case platform.Offerer:
		if err := f.Offers(action); err != nil {
			return &skipError{reason: err.Error()}
		}
	}
	return nil
}

// consoleRestarted drops the harness's kept-alive connections to the
// console after a planned restart (the zone sampler's and the API calls'
// client, and the /readyz poller's): behind a Service, a connection opened
// to the old console may lead nowhere, or to a network filter's refusal,
// once its pod is gone; the next request dials the new one.
func (e *Env) consoleRestarted() {
	e.Console.CloseIdleConnections()
	if e.readyz != nil {
		e.readyz.Client.CloseIdleConnections()
	}
}

// faults is the platform's fault actions (none offered when Env.Faults is nil).
func (e *Env) faults() platform.Faulter {
	if e.Faults == nil {
		return platform.NoFaults{Platform: "under test", Reason: "the run was given no fault actions"}
	}
	return e.Faults
}

// plannedOutage marks [from, to] as a console outage the scenario caused on
// purpose (a restart): /readyz failures in it do not fail the scenario.
func (s *Scope) plannedOutage(from, to time.Time) {
	s.mu.Lock()
	s.outages = append(s.outages, [2]time.Time{from, to})
	s.mu.Unlock()
}

func (s *Scope) inPlannedOutage(t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.outages, func(o [2]time.Time) bool { return !t.Before(o[0]) && !t.After(o[1]) })
}

// zoneAt creates the scenario's zone with max (CreateZone) and forces its
// count to n (forceCount), whose time of the change it returns.
func (s *Scope) zoneAt(ctx context.Context, max, n int) (time.Time, error) {
	if err := s.CreateZone(ctx, max); err != nil {
		return time.Time{}, err
	}
	return s.forceCount(ctx, n)
}

// forceCount sets the zone's count to n as an admin (a forced change, which
// starts the cooldowns) and waits until n workers are ready and a call is
// served. It returns the console's time of the change (its audit entry),
// or the time of the PUT's answer when the audit has none. The first forced
// count of a scenario also creates the group's other zone, which the
// scenario must leave alone (ensureSibling). On a target it is
// forceTargetCount.
func (s *Scope) forceCount(ctx context.Context, n int) (time.Time, error) {
	e := s.env
	if e.Target != nil {
		return s.forceTargetCount(ctx, n)
	}
	if err := s.ensureSibling(ctx); err != nil {
		return s.Now(), err
	}
	st, err := e.Console.PutZone(ctx, s.admin(), e.Endpoints.Group, s.Zone, consoleclient.Update{Count: &n})
	answered := s.Now()
	if err != nil || st != http.StatusOK {
		return answered, fmt.Errorf("admin PUT count %d: %s", n, httpDetail(st, err))
	}
	at := answered
	if entries, st, err := e.Console.Audit(ctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, s.Zone); err == nil && st == http.StatusOK {
		for _, en := range entries {
			if en.Action == "workers.count" && en.Tags["to"] == fmt.Sprint(n) && en.At.After(at.Add(-time.Minute)) {
				at = en.At
			}
		}
	}
	if _, err := s.WaitFor(ctx, fmt.Sprintf("%d workers ready", n), 30*time.Second+4*e.Profile.BootDelay,
		func(x observe.Sample) bool { return x.Count == n && x.Ready >= n }); err != nil {
		return at, err
	}
	return at, s.waitServed(ctx, 30*time.Second)
}

// AuditTrail reads the zone's audit trail as the super admin (World).
func (s *Scope) AuditTrail(ctx context.Context) ([]consoleclient.AuditEntry, error) {
	e := s.env
	entries, st, err := e.Console.Audit(ctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, s.Zone)
	if err != nil || st != http.StatusOK {
		return nil, fmt.Errorf("read the audit: %s", httpDetail(st, err))
	}
	return entries, nil
}

// auditLag bounds how long auditShowing waits for the audit to show a step
// the samples already show.
const auditLag = 3 * time.Second

// auditShowing reads the zone's audit trail until it shows an autoscale
// step to count to, for at most auditLag (then it returns what it read): a
// console may show a new count before its audit entry is committed (the
// reference console publishes the round, then writes the entry), so a
// sample can see the count first. Read errors are returned at once.
func (s *Scope) auditShowing(ctx context.Context, to int) ([]consoleclient.AuditEntry, error) {
	want := fmt.Sprint(to)
	var entries []consoleclient.AuditEntry
	for i := 0; i <= int(auditLag/decisionPoll); i++ {
		var err error
		if entries, err = s.AuditTrail(ctx); err != nil {
			return nil, err
		}
		for _, en := range entries {
			if en.Action == auditAutoscale && en.Tags["to"] == want {
				return entries, nil
			}
		}
		if s.Pause(ctx, decisionPoll) != nil {
			break
		}
	}
	return entries, nil
}

// autoscales returns the zone's autoscale entries of action ("up", "down"),
// oldest first.
func autoscales(entries []consoleclient.AuditEntry, action string) []consoleclient.AuditEntry {
	var out []consoleclient.AuditEntry
	for _, en := range entries {
		if en.Action == "workers.autoscale" && en.Tags["action"] == action {
			out = append(out, en)
		}
	}
	slices.SortFunc(out, func(a, b consoleclient.AuditEntry) int { return a.At.Compare(b.At) })
	return out
}

func describe(entries []consoleclient.AuditEntry, since time.Time) string {
	var parts []string
	for _, en := range entries {
		parts = append(parts, fmt.Sprintf("%s %s->%s at +%.1f s (%s)", en.Tags["action"], en.Tags["from"], en.Tags["to"],
			en.At.Sub(since).Seconds(), en.Tags["reason"]))
	}
	return joinOrNone(parts, "; ")
}

// joinOrNone is parts joined by sep, or "none" when there are none.
func joinOrNone(parts []string, sep string) string {
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, sep)
}

// minCount is the lowest count sampled in [from, to] (ok samples only), or
// -1 when there is none.
func (s *Scope) minCount(from, to time.Time) int {
	good := goodIn(s.Samples(), from, to)
	if len(good) == 0 {
		return -1
	}
	return slices.MinFunc(good, func(a, b observe.Sample) int { return cmp.Compare(a.Count, b.Count) }).Count
}

// failedCalls sums the classes of calls that failed: 5xx, transport errors,
// truncated or malformed answers, JSON-RPC errors, 429 and other 4xx.
// Interrupted calls (the harness's own gracefulStop) are not counted.
func failedCalls(c reports.Calls) int64 {
	return c.Server5xx + c.Transport + c.BadResponse + c.JSONRPCError + c.TooMany + c.Other4xx
}

func callsDetail(c reports.Calls) string {
	return fmt.Sprintf("ok %d, 5xx %d, transport %d, truncated or bad %d, JSON-RPC error %d, 429 %d, other 4xx %d, interrupted %d",
		c.OK, c.Server5xx, c.Transport, c.BadResponse, c.JSONRPCError, c.TooMany, c.Other4xx, c.Interrupted)
}

// Worker metrics the harness reads (the reference worker's names; Ramen 0.7.5's autoscaling notes:
// each worker reports its in-flight calls and its total call count).
const (
	metricWorkerCalls    = "scaleproof_worker_calls_total"
	metricWorkerInflight = "scaleproof_worker_inflight"
	metricWorkerLimit    = "scaleproof_worker_inflight_limit"
	// metricWorkerHighWater: the most calls the worker held at once since
	// it started; metricWorkerRefused: calls it answered 429 at its limit.
	metricWorkerHighWater = "scaleproof_worker_inflight_high_water"
	metricWorkerRefused   = "scaleproof_worker_refused_total"
)

// workerMetrics is one read of a worker's /metrics.
type workerMetrics struct {
	Calls, InFlight float64
	Limit           float64 // the in-flight limit; 0 when the worker reports none
	// HighWater is metricWorkerHighWater (HasHighWater: the worker reports
	// it); Refused is metricWorkerRefused (0 when not reported).
	HighWater    float64
	HasHighWater bool
	Refused      float64
}

// readable reports whether the harness can read w's own /metrics: at its
// address, or through the platform (platform.MetricsReader).
func readable(w platform.Worker) bool { return w.Addr != "" || w.Proxied }

// readWorker reads worker w of the scope's zone's /metrics: http://ADDR/metrics
// where the platform gives its address, else through the platform
// (Worker.Proxied: platform.MetricsReader; on Kubernetes the API server's
// proxy to the pod). Bounded by 3 s, or ctx's deadline when sooner. A
// platform that cannot read it returns a *platform.NotOfferedError.
func (e *Env) readWorker(ctx context.Context, zone string, w platform.Worker) (workerMetrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if w.Addr == "" {
		mr, ok := e.faults().(platform.MetricsReader)
		if !w.Proxied || !ok {
			return workerMetrics{}, &platform.NotOfferedError{Platform: "under test", Action: "read a worker's /metrics",
				Reason: fmt.Sprintf("it gives worker %s no address", w.ID)}
		}
		body, err := mr.WorkerMetrics(ctx, e.Endpoints.Group, zone, w.ID)
		if err != nil {
			return workerMetrics{}, err
		}
		return parseWorkerMetrics(w.ID, bytes.NewReader(body))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.Addr+"/metrics", nil)
	if err != nil {
		return workerMetrics{}, err
	}
	resp, err := e.HTTP.Do(req)
	if err != nil {
		return workerMetrics{}, fmt.Errorf("worker %s /metrics: %w", w.ID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return workerMetrics{}, fmt.Errorf("worker %s /metrics: HTTP %d", w.ID, resp.StatusCode)
	}
	return parseWorkerMetrics(w.ID, io.LimitReader(resp.Body, 4<<20))
}

// parseWorkerMetrics reads the worker metrics the harness uses from the
// Prometheus text format of worker id's /metrics.
func parseWorkerMetrics(id string, r io.Reader) (workerMetrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return workerMetrics{}, fmt.Errorf("worker %s /metrics: %w", id, err)
	}
	var m workerMetrics
	get := func(name string) (float64, bool) {
		f, ok := fams[name]
		if !ok {
			return 0, false
		}
		sum := 0.0
		for _, x := range f.GetMetric() {
			switch {
			case x.GetCounter() != nil:
				sum += x.GetCounter().GetValue()
			case x.GetGauge() != nil:
				sum += x.GetGauge().GetValue()
			case x.GetUntyped() != nil:
				sum += x.GetUntyped().GetValue()
			}
		}
		return sum, true
	}
	var ok bool
	if m.Calls, ok = get(metricWorkerCalls); !ok {
		return m, fmt.Errorf("worker %s /metrics has no %s", id, metricWorkerCalls)
	}
	m.InFlight, _ = get(metricWorkerInflight)
	m.Limit, _ = get(metricWorkerLimit)
	m.HighWater, m.HasHighWater = get(metricWorkerHighWater)
	m.Refused, _ = get(metricWorkerRefused)
	return m, nil
}
