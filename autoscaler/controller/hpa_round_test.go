package controller_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// fakeMetrics is a MetricSource whose answers the test sets per zone (the
// zone label of the expanded query); it records every query.
type fakeMetrics struct {
	mu      sync.Mutex
	answers map[string]fakeAnswer // by zone
	queries []string
}

type fakeAnswer struct {
	vals []float64
	err  error
}

func newFakeMetrics() *fakeMetrics { return &fakeMetrics{answers: map[string]fakeAnswer{}} }

func (f *fakeMetrics) set(zone string, a fakeAnswer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[zone] = a
}

func (f *fakeMetrics) Query(ctx context.Context, q string) ([]float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for z, a := range f.answers {
		if strings.Contains(q, `zone="`+z+`"`) {
			return a.vals, a.err
		}
	}
	return nil, nil
}

func (f *fakeMetrics) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queries)
}

type hpaRig struct {
	path    string
	store   *store.Store
	clock   *controllertest.Clock
	fleet   *controllertest.Fleet
	metrics *fakeMetrics
	noSrc   bool       // no MetricSource at all
	faults  faults.Set // planted bugs switched on (nil: none)
	c       *controller.Controller
}

func newHPARig(t *testing.T, noSource bool) *hpaRig {
	t.Helper()
	clock := controllertest.NewClock(t0)
	r := &hpaRig{path: filepath.Join(t.TempDir(), "state.db"), clock: clock, fleet: controllertest.NewFleet(clock),
		metrics: newFakeMetrics(), noSrc: noSource}
	r.start(t)
	t.Cleanup(func() { _ = r.store.Close() })
	return r
}

func (r *hpaRig) start(t *testing.T) {
	t.Helper()
	st, err := store.Open(r.path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r.store = st
	cfg := autoscaler.DefaultStepConfig()
	o := controller.Options{
		Store: st, Target: r.fleet, Discovery: r.fleet, Scraper: r.fleet,
		Policy: controller.StepPolicy(cfg), StartupGrace: cfg.StartupGrace, Clock: r.clock,
		Logger: slog.New(slog.DiscardHandler), Concurrency: 4, Faults: r.faults,
	}
	if !r.noSrc {
		o.Metrics = r.metrics
	}
	if r.c, err = controller.New(o); err != nil {
		t.Fatal(err)
	}
}

func (r *hpaRig) restart(t *testing.T) {
	t.Helper()
	if err := r.store.Close(); err != nil {
		t.Fatal(err)
	}
	r.start(t)
}

// zone creates g/zone with count and max.
func (r *hpaRig) zone(t *testing.T, zone string, count, maxCount int) {
	t.Helper()
	if _, err := r.c.Apply(context.Background(), "root", "g", zone, controller.Change{Count: &count, MaxCount: &maxCount}); err != nil {
		t.Fatal(err)
	}
}

func (r *hpaRig) setHPA(t *testing.T, zone string, h controller.HPASpec) controller.PolicyView {
	t.Helper()
	v, err := r.c.SetPolicy("root", "g", zone, controller.PolicySpec{Policy: controller.PolicyHPA, HPA: &h})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func fptr(f float64) *float64 { return &f }

// spec is an hpa spec on the zone's signal with no stabilization.
func spec(threshold float64) controller.HPASpec {
	return controller.HPASpec{
		Query: `sum(signal{group="$group",zone="$zone"})`, Threshold: threshold,
		Behavior: &controller.HPABehaviorSpec{
			ScaleDown: &controller.HPARulesSpec{StabilizationWindowSeconds: fptr(0)},
		},
	}
}

// TestHPARounds: one API round of an hpa zone for each situation (fake
// metric source and fleet).
func TestHPARounds(t *testing.T) {
	tests := []struct {
		name            string
		count, max      int
		spec            func(*controller.HPASpec)
		answer          fakeAnswer
		noSource        bool
		notReady        int // workers listed not ready
		unlisted        int // workers the count asks for that discovery does not list
		wantAction      autoscaler.Action
		wantTo          int
		wantReason      string
		wantStatusError string
	}{
		{name: "seed 000: 1 replica, 20 in flight, threshold 4 -> 5", count: 1, max: 5,
			answer: fakeAnswer{vals: []float64{20}}, wantAction: autoscaler.ActionUp, wantTo: 5, wantReason: "query 20 / 4 per replica"},
		{name: "series are summed", count: 1, max: 5,
			answer: fakeAnswer{vals: []float64{8, 4}}, wantAction: autoscaler.ActionUp, wantTo: 3},
		{name: "max_count bounds the proposal", count: 1, max: 3,
			answer: fakeAnswer{vals: []float64{20}}, wantAction: autoscaler.ActionUp, wantTo: 3, wantReason: "TooManyReplicas: max 3"},
		{name: "hpa max_replicas under max_count bounds it", count: 1, max: 5,
			spec: func(h *controller.HPASpec) { h.MaxReplicas = ptr(2) }, answer: fakeAnswer{vals: []float64{20}},
			wantAction: autoscaler.ActionUp, wantTo: 2, wantReason: "TooManyReplicas: max 2"},
		{name: "within tolerance: no change", count: 2, max: 5,
			answer: fakeAnswer{vals: []float64{8.8}}, wantAction: autoscaler.ActionHold, wantTo: 2, wantReason: "within [0.9, 1.1]"},
		{name: "scale down to the proposal", count: 4, max: 5,
			answer: fakeAnswer{vals: []float64{4}}, wantAction: autoscaler.ActionDown, wantTo: 1},
		{name: "query error: hold, never scale in", count: 3, max: 5,
			answer: fakeAnswer{err: errors.New("connection refused")}, wantAction: autoscaler.ActionHold, wantTo: 3,
			wantReason: "query failed: connection refused", wantStatusError: "connection refused"},
		{name: "no series: hold", count: 3, max: 5,
			answer: fakeAnswer{}, wantAction: autoscaler.ActionHold, wantTo: 3, wantReason: "query failed: no series", wantStatusError: "no series"},
		{name: "NaN: hold", count: 3, max: 5,
			answer: fakeAnswer{vals: []float64{math.NaN()}}, wantAction: autoscaler.ActionHold, wantTo: 3, wantReason: "value NaN"},
		{name: "+Inf: hold", count: 3, max: 5,
			answer: fakeAnswer{vals: []float64{math.Inf(1)}}, wantAction: autoscaler.ActionHold, wantTo: 3, wantReason: "value +Inf"},
		{name: "no series read as zero scales in", count: 3, max: 5,
			spec: func(h *controller.HPASpec) { h.ReadEmptyAsZero = true }, answer: fakeAnswer{},
			wantAction: autoscaler.ActionDown, wantTo: 1, wantReason: "TooFewReplicas: min 1"},
		{name: "a query error is never read as zero", count: 3, max: 5,
			spec: func(h *controller.HPASpec) { h.ReadEmptyAsZero = true }, answer: fakeAnswer{err: errors.New("timeout")},
			wantAction: autoscaler.ActionHold, wantTo: 3},
		{name: "no metric source: hold", count: 2, max: 5, noSource: true,
			wantAction: autoscaler.ActionHold, wantTo: 2, wantReason: "no metric source"},
		{name: "Value target counts ready pods only", count: 2, max: 5, notReady: 1,
			spec: func(h *controller.HPASpec) { h.Target = "Value" }, answer: fakeAnswer{vals: []float64{12}},
			wantAction: autoscaler.ActionUp, wantTo: 3, wantReason: "x 1 ready -> 3"},
		{name: "unlisted workers are Pending pods: AverageValue over the count", count: 3, max: 6, unlisted: 2,
			answer: fakeAnswer{vals: []float64{12.5}}, wantAction: autoscaler.ActionHold, wantTo: 3, wantReason: "over 3 replicas"},
		{name: "min_replicas raises the count", count: 1, max: 5,
			spec: func(h *controller.HPASpec) { h.MinReplicas = ptr(2) }, answer: fakeAnswer{vals: []float64{1}},
			wantAction: autoscaler.ActionUp, wantTo: 2, wantReason: "below min 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newHPARig(t, tc.noSource)
			r.zone(t, "a", tc.count, tc.max)
			h := spec(4)
			if tc.spec != nil {
				tc.spec(&h)
			}
			r.setHPA(t, "a", h)
			r.metrics.set("a", tc.answer)
			if tc.notReady > 0 {
				n := 0
				r.fleet.Update("g", "a", func(w *controllertest.Worker) {
					if n < tc.notReady {
						w.Endpoint.Ready = false
						n++
					}
				})
			}
			if tc.unlisted > 0 {
				// The fleet runs fewer workers than the count asks for.
				if err := r.fleet.Scale(context.Background(), "g", "a", tc.count-tc.unlisted, nil); err != nil {
					t.Fatal(err)
				}
			}
			d, err := r.c.Round(context.Background(), "g", "a", "root")
			if err != nil {
				t.Fatal(err)
			}
			if d.Action != tc.wantAction || d.To != tc.wantTo || !strings.Contains(d.Reason, tc.wantReason) {
				t.Fatalf("decision %s %d -> %d (%s), want %s to %d with %q", d.Action, d.From, d.To, d.Reason, tc.wantAction, tc.wantTo, tc.wantReason)
			}
			v, err := r.c.Zone("g", "a")
			if err != nil {
				t.Fatal(err)
			}
			if v.Count != tc.wantTo {
				t.Fatalf("count %d, want %d", v.Count, tc.wantTo)
			}
			p, err := r.c.Policy("g", "a")
			if err != nil {
				t.Fatal(err)
			}
			if p.Status == nil || p.Status.LastQueryAt.IsZero() || !strings.Contains(p.Status.Error, tc.wantStatusError) {
				t.Fatalf("status %+v, want a query recorded with error %q", p.Status, tc.wantStatusError)
			}
			if !tc.noSource && r.metrics.count() != 1 {
				t.Fatalf("%d queries, want 1", r.metrics.count())
			}
		})
	}
}

// TestHPAPollingInterval: the scheduler visits the zone every pass but
// queries only once the polling interval has passed; an API rebalance
// always queries. A step zone beside it decides every pass.
func TestHPAPollingInterval(t *testing.T) {
	r := newHPARig(t, false)
	r.zone(t, "a", 1, 5)
	r.zone(t, "s", 1, 5)
	h := spec(4)
	h.PollingIntervalSeconds = fptr(30)
	r.setHPA(t, "a", h)
	r.metrics.set("a", fakeAnswer{vals: []float64{4}})
	ctx := context.Background()

	steps := []struct {
		advance     time.Duration
		api         bool
		wantQueries int
	}{
		{0, false, 1},                // first pass queries
		{10 * time.Second, false, 1}, // skipped
		{10 * time.Second, false, 1}, // skipped
		{5 * time.Second, true, 2},   // API round: queries now
		{10 * time.Second, false, 2}, // 10 s after the API round: skipped
		{20 * time.Second, false, 3}, // 30 s after: queries
	}
	for i, s := range steps {
		r.clock.Advance(s.advance)
		if s.api {
			if _, err := r.c.Rebalance(ctx, "root", "g", "a"); err != nil {
				t.Fatal(err)
			}
		} else {
			rep := r.c.Pass(ctx)
			if rep.Visited != 2 || rep.Errors != 0 {
				t.Fatalf("step %d: pass %+v, want both zones visited", i, rep)
			}
		}
		if got := r.metrics.count(); got != s.wantQueries {
			t.Fatalf("step %d: %d queries, want %d", i, got, s.wantQueries)
		}
	}
}

// TestHPAFallback: KEDA's fallback after more than failure_threshold failed
// rounds, never below the count.
func TestHPAFallback(t *testing.T) {
	r := newHPARig(t, false)
	r.zone(t, "a", 1, 5)
	h := spec(4)
	h.Fallback = &controller.HPAFallbackSpec{FailureThreshold: 2, Replicas: 4}
	r.setHPA(t, "a", h)
	r.metrics.set("a", fakeAnswer{err: errors.New("down")})
	want := []struct {
		action autoscaler.Action
		to     int
	}{{autoscaler.ActionHold, 1}, {autoscaler.ActionHold, 1}, {autoscaler.ActionUp, 4}}
	for i, w := range want {
		d, err := r.c.Round(context.Background(), "g", "a", "root")
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != w.action || d.To != w.to {
			t.Fatalf("round %d: %s to %d (%s), want %s to %d", i+1, d.Action, d.To, d.Reason, w.action, w.to)
		}
	}
	p, _ := r.c.Policy("g", "a")
	if p.Status.Failures != 3 {
		t.Fatalf("failures %d, want 3", p.Status.Failures)
	}
}

// TestHPAScaleFailureForgetsItsEvent: a scale-up whose scale failed does not
// count against the rate limit of the next round.
func TestHPAScaleFailureForgetsItsEvent(t *testing.T) {
	r := newHPARig(t, false)
	r.zone(t, "a", 1, 5)
	h := spec(4)
	h.Behavior.ScaleUp = &controller.HPARulesSpec{Policies: []controller.HPARatePolicySpec{{Type: "Pods", Value: 1, PeriodSeconds: 60}}}
	r.setHPA(t, "a", h)
	r.metrics.set("a", fakeAnswer{vals: []float64{20}})
	r.fleet.SetScaleError(errors.New("quota"))
	if _, err := r.c.Round(context.Background(), "g", "a", "root"); !errors.Is(err, controller.ErrScale) {
		t.Fatalf("round with a failing scale: %v, want ErrScale", err)
	}
	r.fleet.SetScaleError(nil)
	r.clock.Advance(time.Second)
	d, err := r.c.Round(context.Background(), "g", "a", "root")
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != autoscaler.ActionUp || d.To != 2 {
		t.Fatalf("after the failed scale: %s to %d (%s), want up to 2", d.Action, d.To, d.Reason)
	}
	// The successful one counts: no second step within the minute.
	r.clock.Advance(time.Second)
	if d, _ = r.c.Round(context.Background(), "g", "a", "root"); d.Action != autoscaler.ActionHold || !strings.Contains(d.Reason, "ScaleUpLimit") {
		t.Fatalf("within the period: %s to %d (%s), want a hold by ScaleUpLimit", d.Action, d.To, d.Reason)
	}
}

// TestHPAStabilizationAcrossRestart: a restarted controller starts each hpa
// zone afresh, its count as the first recommendation: no scale-down within
// the scale-down window of the restart.
func TestHPAStabilizationAcrossRestart(t *testing.T) {
	r := newHPARig(t, false)
	r.zone(t, "a", 3, 5)
	h := spec(4)
	h.Behavior.ScaleDown.StabilizationWindowSeconds = fptr(300)
	r.setHPA(t, "a", h)
	r.restart(t)
	r.metrics.set("a", fakeAnswer{vals: []float64{1}})
	for _, adv := range []time.Duration{0, 299 * time.Second} {
		r.clock.Advance(adv)
		d, err := r.c.Round(context.Background(), "g", "a", "root")
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != autoscaler.ActionHold || !strings.Contains(d.Reason, "ScaleDownStabilized") {
			t.Fatalf("+%s: %s to %d (%s), want a stabilized hold", adv, d.Action, d.To, d.Reason)
		}
	}
	r.clock.Advance(2 * time.Second)
	if d, _ := r.c.Round(context.Background(), "g", "a", "root"); d.Action != autoscaler.ActionDown || d.To != 1 {
		t.Fatalf("after the window: %s to %d (%s), want down to 1", d.Action, d.To, d.Reason)
	}
}

// TestHPADownVictimsNotReadyFirst: a scale-down removes not-ready workers first.
func TestHPADownVictimsNotReadyFirst(t *testing.T) {
	r := newHPARig(t, false)
	r.zone(t, "a", 3, 5)
	r.setHPA(t, "a", spec(4))
	eps, _ := r.fleet.Endpoints(context.Background(), "g", "a")
	oldest := eps[0].ID
	r.fleet.Update("g", "a", func(w *controllertest.Worker) {
		if w.Endpoint.ID == oldest {
			w.Endpoint.Ready = false
		}
	})
	r.metrics.set("a", fakeAnswer{vals: []float64{8}})
	d, err := r.c.Round(context.Background(), "g", "a", "root")
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != autoscaler.ActionDown || d.To != 2 || len(d.Victims) != 1 || d.Victims[0] != oldest {
		t.Fatalf("decision %s to %d victims %v, want down to 2 removing the not-ready %s", d.Action, d.To, d.Victims, oldest)
	}
}

// TestSetPolicy covers defaults, validation (422, audited error:invalid),
// the audit of a change, persistence across a restart, and back to step.
func TestSetPolicy(t *testing.T) {
	r := newHPARig(t, false)
	r.zone(t, "a", 1, 3)
	if _, err := r.c.SetPolicy("root", "g", "nope", controller.PolicySpec{Policy: "step"}); !errors.Is(err, controller.ErrNotFound) {
		t.Fatalf("unknown zone: %v, want ErrNotFound", err)
	}
	if v, err := r.c.Policy("g", "a"); err != nil || v.Policy != controller.PolicyStep || v.HPA != nil {
		t.Fatalf("a new zone: %+v %v, want step", v, err)
	}

	invalid := []struct {
		name string
		spec controller.PolicySpec
		want string
	}{
		{"unknown policy", controller.PolicySpec{Policy: "keda"}, `policy: "keda": want step or hpa`},
		{"hpa without settings", controller.PolicySpec{Policy: "hpa"}, "needs its settings"},
		{"step with settings", controller.PolicySpec{Policy: "step", HPA: &controller.HPASpec{}}, "takes no hpa settings"},
		{"no query", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Threshold: 4}}, "query is required"},
		{"zero threshold", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q"}}, "threshold 0"},
		{"negative threshold", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q", Threshold: -1}}, "threshold -1"},
		{"bad target", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q", Threshold: 1, Target: "Utilization"}}, `target "Utilization"`},
		{"min above max", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q", Threshold: 1, MinReplicas: ptr(3), MaxReplicas: ptr(2)}}, "max_replicas 2 is below min_replicas 3"},
		{"min 0", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q", Threshold: 1, MinReplicas: ptr(0)}}, "min_replicas 0"},
		{"max above max_count", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q", Threshold: 1, MaxReplicas: ptr(4)}}, "max_replicas 4 is above the zone's max_count 3"},
		{"polling 0", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q", Threshold: 1, PollingIntervalSeconds: fptr(0)}}, "polling_interval_seconds 0"},
		{"window over an hour", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q", Threshold: 1,
			Behavior: &controller.HPABehaviorSpec{ScaleDown: &controller.HPARulesSpec{StabilizationWindowSeconds: fptr(3601)}}}}, "behavior.scale_down.stabilization_window_seconds 3601"},
		{"bad rate policy", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q", Threshold: 1,
			Behavior: &controller.HPABehaviorSpec{ScaleUp: &controller.HPARulesSpec{Policies: []controller.HPARatePolicySpec{{Type: "Nodes", Value: 0, PeriodSeconds: 0}}}}}},
			`behavior.scale_up.policies[0].type "Nodes"`},
		{"bad select", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q", Threshold: 1,
			Behavior: &controller.HPABehaviorSpec{ScaleUp: &controller.HPARulesSpec{SelectPolicy: "Any"}}}}, `select_policy "Any"`},
		{"negative fallback", controller.PolicySpec{Policy: "hpa", HPA: &controller.HPASpec{Query: "q", Threshold: 1,
			Fallback: &controller.HPAFallbackSpec{FailureThreshold: -1}}}, "fallback.failure_threshold -1"},
	}
	for _, tc := range invalid {
		_, err := r.c.SetPolicy("ga", "g", "a", tc.spec)
		var ve *controller.ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a validation error with %q", tc.name, err, tc.want)
		}
	}
	refused, err := r.store.Audit(store.AuditQuery{Action: controller.AuditPolicy, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != len(invalid) {
		t.Fatalf("%d refused attempts audited, want %d", len(refused), len(invalid))
	}
	for _, e := range refused {
		if e.Error != controller.RefusedInvalid || e.Actor != "ga" {
			t.Fatalf("refused entry %+v, want error invalid by ga", e)
		}
	}

	v := r.setHPA(t, "a", controller.HPASpec{Query: " sum(x{namespace=\"%s\",zone=\"$zone\"}) ", Threshold: 4})
	got, _ := json.Marshal(v.HPA)
	want := `{"query":"sum(x{namespace=\"%s\",zone=\"$zone\"})","threshold":4,"target":"AverageValue","min_replicas":1,"max_replicas":3,` +
		`"polling_interval_seconds":30,"read_empty_as_zero":false,"behavior":{` +
		`"scale_down":{"stabilization_window_seconds":300,"select_policy":"Max","policies":[{"type":"Percent","value":100,"period_seconds":15}],"tolerance":0.1},` +
		`"scale_up":{"stabilization_window_seconds":0,"select_policy":"Max","policies":[{"type":"Pods","value":4,"period_seconds":15},{"type":"Percent","value":100,"period_seconds":15}],"tolerance":0.1}}}`
	if string(got) != want {
		t.Fatalf("resolved spec\n got %s\nwant %s", got, want)
	}
	if v.EffectiveMaxReplicas != 3 || v.MaxCount != 3 {
		t.Fatalf("view %+v, want effective max 3", v)
	}
	es, _ := r.store.Audit(store.AuditQuery{Action: controller.AuditPolicy, Limit: 1})
	if e := es[0]; e.Error != "" || e.Tags["from"] != "step" || e.Tags["to"] != "hpa" || !strings.Contains(e.Tags["hpa"], "threshold=4") {
		t.Fatalf("audit %+v, want workers.policy from step to hpa", e)
	}

	r.restart(t)
	after, err := r.c.Policy("g", "a")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(after.HPA); string(b) != want {
		t.Fatalf("after a restart: %s", b)
	}
	r.metrics.set("a", fakeAnswer{vals: []float64{8}})
	if d, _ := r.c.Round(context.Background(), "g", "a", "root"); d.Action != autoscaler.ActionUp || d.To != 2 {
		t.Fatalf("after a restart the zone is hpa: %s to %d (%s)", d.Action, d.To, d.Reason)
	}

	if v, err := r.c.SetPolicy("root", "g", "a", controller.PolicySpec{Policy: "step"}); err != nil || v.Policy != "step" || v.HPA != nil {
		t.Fatalf("back to step: %+v %v", v, err)
	}
	es, _ = r.store.Audit(store.AuditQuery{Action: controller.AuditPolicy, Limit: 1})
	if e := es[0]; e.Tags["from"] != "hpa" || e.Tags["to"] != "step" {
		t.Fatalf("audit %+v, want from hpa to step", e)
	}
	before := r.metrics.count()
	if _, err := r.c.Round(context.Background(), "g", "a", "root"); err != nil {
		t.Fatal(err)
	}
	if r.metrics.count() != before {
		t.Fatal("a step zone ran the hpa query")
	}
}

// TestMaxCountBoundsHPAMax: lowering max_count lowers hpa max_replicas (and
// min_replicas) in the same change, audited; raising it leaves them.
func TestMaxCountBoundsHPAMax(t *testing.T) {
	r := newHPARig(t, false)
	r.zone(t, "a", 2, 5)
	h := spec(4)
	h.MinReplicas = ptr(4)
	r.setHPA(t, "a", h)
	if _, err := r.c.SetMax(context.Background(), "ga", "g", "a", 3); err != nil {
		t.Fatal(err)
	}
	v, _ := r.c.Policy("g", "a")
	if *v.HPA.MaxReplicas != 3 || *v.HPA.MinReplicas != 3 || v.EffectiveMaxReplicas != 3 {
		t.Fatalf("after max_count 3: min %d max %d effective %d, want 3 3 3", *v.HPA.MinReplicas, *v.HPA.MaxReplicas, v.EffectiveMaxReplicas)
	}
	es, _ := r.store.Audit(store.AuditQuery{Action: controller.AuditPolicy, Limit: 1})
	if e := es[0]; e.Actor != "ga" || e.Tags["reason"] != "max_count lowered" || e.Tags["max_replicas_from"] != "5" || e.Tags["max_replicas_to"] != "3" {
		t.Fatalf("audit %+v", e)
	}
	if _, err := r.c.SetMax(context.Background(), "ga", "g", "a", 6); err != nil {
		t.Fatal(err)
	}
	v, _ = r.c.Policy("g", "a")
	if *v.HPA.MaxReplicas != 3 || v.MaxCount != 6 || v.EffectiveMaxReplicas != 3 {
		t.Fatalf("after max_count 6: %+v, want max_replicas still 3", v)
	}
	r.restart(t)
	if v, _ = r.c.Policy("g", "a"); *v.HPA.MaxReplicas != 3 {
		t.Fatalf("lowered max_replicas not persisted: %d", *v.HPA.MaxReplicas)
	}
}
