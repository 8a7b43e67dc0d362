package kube

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/scaleproof/scaleproof/scenarios/target"
)

// hpaFixture is an HPA target over fakes: worker at 3 replicas (2 ready),
// HPA worker min 2 max 10 desired 4 at 73 % CPU.
type hpaFixture struct {
	run, admin, viewer *fake.Clientset
	t                  target.Target
}

func newHPAFixture(t *testing.T, objs ...runtime.Object) hpaFixture {
	t.Helper()
	base := []runtime.Object{deployment("worker", 3, 2), hpaObject("worker", "worker", ptr(int32(2)), 10, 4, nil, cpuAt(73))}
	objs = append(base, objs...)
	// One store for the three roles, as one API server: the run's
	// clientset; the roles' clientsets forward to it unless a reactor
	// refuses first.
	run := withScale(t, fake.NewClientset(objs...))
	f := hpaFixture{run: run, admin: forward(run), viewer: forward(run)}
	tg, err := NewHPA(context.Background(), HPAConfig{Run: f.run, Admin: f.admin, Viewer: f.viewer,
		Namespace: ns, Deployment: "worker", HPA: "worker", Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	f.t = tg
	return f
}

// forward is a clientset whose every action goes to run's reactors (so a
// role's refusal reactor is its own, its store the run's).
func forward(run *fake.Clientset) *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o, err := run.Invokes(a, nil)
		return true, o, err
	})
	return c
}

func TestHPAState(t *testing.T) {
	f := newHPAFixture(t)
	got, err := f.t.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := target.State{At: t0, Count: 3, Ready: 2, Desired: 4, Min: 2, Max: 10, Metric: 73, HasMetric: true}
	if got != want {
		t.Fatalf("State = %+v, want %+v", got, want)
	}
	if f.t.Kind() != target.HPA || f.t.Name() != "hpa sp-1/worker" {
		t.Errorf("Kind, Name = %s, %q", f.t.Kind(), f.t.Name())
	}
}

func TestCurrentMetric(t *testing.T) {
	for _, c := range []struct {
		name string
		ms   []autoscalingv2.MetricStatus
		want float64
		has  bool
	}{
		{"none", nil, 0, false},
		{"cpu utilization in percent", []autoscalingv2.MetricStatus{cpuAt(81)}, 81, true},
		{"external average value", []autoscalingv2.MetricStatus{externalAt("1500m")}, 1.5, true},
		{"pods average value", []autoscalingv2.MetricStatus{{Type: autoscalingv2.PodsMetricSourceType,
			Pods: &autoscalingv2.PodsMetricStatus{Current: autoscalingv2.MetricValueStatus{AverageValue: ptr(resource.MustParse("4"))}}}}, 4, true},
		{"object value", []autoscalingv2.MetricStatus{{Type: autoscalingv2.ObjectMetricSourceType,
			Object: &autoscalingv2.ObjectMetricStatus{Current: autoscalingv2.MetricValueStatus{Value: ptr(resource.MustParse("27"))}}}}, 27, true},
		{"first with a value wins", []autoscalingv2.MetricStatus{{Type: autoscalingv2.ExternalMetricSourceType,
			External: &autoscalingv2.ExternalMetricStatus{}}, externalAt("2")}, 2, true},
		{"type without its block", []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType}}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _, has := currentMetric(c.ms)
			if got != c.want || has != c.has {
				t.Errorf("currentMetric = %v %v, want %v %v", got, has, c.want, c.has)
			}
		})
	}
}

func TestHPASetBounds(t *testing.T) {
	for _, c := range []struct {
		name     string
		role     target.Role
		refuse   error // the role's API answer
		want     int
		msg      string
		err      bool
		min, max int32 // the HPA after
	}{
		{name: "admin", role: target.Admin, want: 200, min: 3, max: 5},
		{name: "viewer forbidden", role: target.Viewer, refuse: forbidden(hpaGR, "worker"), want: 403, msg: "forbidden", min: 2, max: 10},
		{name: "admin invalid", role: target.Admin, refuse: invalid("HorizontalPodAutoscaler", "worker"), want: 422, msg: "must be greater than or equal to minReplicas", min: 2, max: 10},
		{name: "no answer", role: target.Admin, refuse: errNet, err: true, min: 2, max: 10},
		{name: "unknown role", role: "mcp_user", err: true, min: 2, max: 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newHPAFixture(t)
			if c.refuse != nil {
				cs := map[target.Role]*fake.Clientset{target.Admin: f.admin, target.Viewer: f.viewer}[c.role]
				refuse(cs, "patch", "horizontalpodautoscalers", c.refuse)
			}
			o, err := f.t.SetBounds(context.Background(), c.role, 3, 5)
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if !c.err && (o.Status != c.want || !strings.Contains(o.Message, c.msg)) {
				t.Errorf("Outcome = %+v, want %d with %q", o, c.want, c.msg)
			}
			h, err := f.run.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), "worker", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *h.Spec.MinReplicas != c.min || h.Spec.MaxReplicas != c.max {
				t.Errorf("hpa bounds %d..%d, want %d..%d", *h.Spec.MinReplicas, h.Spec.MaxReplicas, c.min, c.max)
			}
		})
	}
}

func TestHPASetCount(t *testing.T) {
	for _, c := range []struct {
		name   string
		role   target.Role
		refuse error
		want   int
		err    bool
		count  int
	}{
		{name: "admin", role: target.Admin, want: 200, count: 7},
		{name: "viewer forbidden", role: target.Viewer, refuse: forbidden(depGR, "worker"), want: 403, count: 3},
		{name: "no answer", role: target.Admin, refuse: errNet, err: true, count: 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newHPAFixture(t)
			if c.refuse != nil {
				cs := map[target.Role]*fake.Clientset{target.Admin: f.admin, target.Viewer: f.viewer}[c.role]
				refuse(cs, "update", "deployments", c.refuse)
			}
			o, err := f.t.SetCount(context.Background(), c.role, 7)
			if (err != nil) != c.err || (!c.err && o.Status != c.want) {
				t.Fatalf("SetCount = %+v, %v; want %d (error %v)", o, err, c.want, c.err)
			}
			st, err := f.t.State(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.Count != c.count {
				t.Errorf("count %d, want %d", st.Count, c.count)
			}
		})
	}
}

func TestRescaleEvent(t *testing.T) {
	t1 := t0.Add(time.Minute)
	series := *event("s", "HorizontalPodAutoscaler", "worker", "SuccessfulRescale", "New size: 2; reason: All metrics below target", time.Time{}, time.Time{}, 0)
	series.EventTime = metav1.NewMicroTime(t0)
	series.Series = &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(t1)}
	for _, c := range []struct {
		name string
		e    corev1.Event
		want []target.Change
		ok   bool
	}{
		{"one rescale", *event("a", "HorizontalPodAutoscaler", "worker", "SuccessfulRescale",
			"New size: 4; reason: cpu resource utilization (percentage of request) above target", t0, t0, 1),
			[]target.Change{{At: t0, From: -1, To: 4, Reason: "cpu resource utilization (percentage of request) above target", Source: "event"}}, true},
		{"combined from similar events", *event("b", "HorizontalPodAutoscaler", "worker", "SuccessfulRescale",
			"(combined from similar events): New size: 10; reason: Current number of replicas above Spec.MaxReplicas", t0, t0, 1),
			[]target.Change{{At: t0, From: -1, To: 10, Reason: "Current number of replicas above Spec.MaxReplicas", Source: "event"}}, true},
		{"no reason", *event("c", "HorizontalPodAutoscaler", "worker", "SuccessfulRescale", "New size: 1", t0, t0, 1),
			[]target.Change{{At: t0, From: -1, To: 1, Source: "event"}}, true},
		{"count 3: first and last", *event("d", "HorizontalPodAutoscaler", "worker", "SuccessfulRescale",
			"New size: 3; reason: All metrics below target", t0, t1, 3),
			[]target.Change{{At: t0, From: -1, To: 3, Reason: "All metrics below target", Source: "event"},
				{At: t1, From: -1, To: 3, Reason: "All metrics below target", Source: "event"}}, true},
		{"events.k8s.io series", series,
			[]target.Change{{At: t0, From: -1, To: 2, Reason: "All metrics below target", Source: "event"},
				{At: t1, From: -1, To: 2, Reason: "All metrics below target", Source: "event"}}, true},
		{"failed rescale is no change", *event("e", "HorizontalPodAutoscaler", "worker", "FailedRescale", "New size: 4; reason: ...", t0, t0, 1), nil, false},
		{"unparsable", *event("f", "HorizontalPodAutoscaler", "worker", "SuccessfulRescale", "New size: many", t0, t0, 1), nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := RescaleEvent(c.e)
			if ok != c.ok || !slices.EqualFunc(got, c.want, target.Change.Equal) {
				t.Errorf("RescaleEvent = %+v %v, want %+v %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestHPATrail(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	f := newHPAFixture(t,
		event("e3", "HorizontalPodAutoscaler", "worker", "SuccessfulRescale", "New size: 2; reason: All metrics below target", at(9), at(9), 1),
		event("e1", "HorizontalPodAutoscaler", "worker", "SuccessfulRescale", "New size: 4; reason: cpu above target", at(1), at(1), 1),
		event("e0", "HorizontalPodAutoscaler", "worker", "SuccessfulRescale", "New size: 3; reason: before since", at(-5), at(-5), 1),
		event("x1", "HorizontalPodAutoscaler", "other", "SuccessfulRescale", "New size: 8; reason: another HPA", at(2), at(2), 1),
		event("x2", "Deployment", "worker", "ScalingReplicaSet", "Scaled up replica set worker-abc to 4 from 3", at(1), at(1), 1),
		event("x3", "HorizontalPodAutoscaler", "worker", "FailedGetResourceMetric", "missing request for cpu", at(3), at(3), 1),
	)
	got, err := f.t.Trail(context.Background(), t0)
	if err != nil {
		t.Fatal(err)
	}
	want := []target.Change{{At: at(1), From: -1, To: 4, Reason: "cpu above target", Source: "event"},
		{At: at(9), From: -1, To: 2, Reason: "All metrics below target", Source: "event"}}
	if !slices.EqualFunc(got, want, target.Change.Equal) {
		t.Fatalf("Trail = %+v, want %+v", got, want)
	}
	refuse(f.run, "list", "events", errNet)
	if _, err := f.t.Trail(context.Background(), t0); err == nil {
		t.Error("Trail with no answer: no error")
	}
}

func TestNewHPAErrors(t *testing.T) {
	cs := fake.NewClientset(hpaObject("worker", "other", nil, 5, 1, nil))
	for _, c := range []struct {
		name string
		cfg  HPAConfig
		want string
	}{
		{"no clients", HPAConfig{Namespace: ns, Deployment: "worker", HPA: "worker"}, "clients"},
		{"no names", HPAConfig{Run: cs, Admin: cs, Viewer: cs}, "no namespace"},
		{"missing hpa", HPAConfig{Run: cs, Admin: cs, Viewer: cs, Namespace: ns, Deployment: "worker", HPA: "nope"}, "not found"},
		{"hpa of another deployment", HPAConfig{Run: cs, Admin: cs, Viewer: cs, Namespace: ns, Deployment: "worker", HPA: "worker"}, `scales Deployment "other"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewHPA(context.Background(), c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one with %q", err, c.want)
			}
		})
	}
}

// The contracts' bounds follow the HPA's spec and the controller's flags.
func TestHPAContracts(t *testing.T) {
	down := func(r autoscalingv2.HPAScalingRules) *autoscalingv2.HorizontalPodAutoscalerBehavior {
		return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &r}
	}
	disabled := autoscalingv2.DisabledPolicySelect
	for _, c := range []struct {
		name     string
		h        *autoscalingv2.HorizontalPodAutoscaler
		cfg      HPAConfig
		bounds   map[target.Fact]time.Duration
		notAppl  []target.Fact
		contains map[target.Fact]string
	}{
		{name: "defaults", h: hpaObject("worker", "worker", ptr(int32(2)), 10, 2, nil),
			bounds: map[target.Fact]time.Duration{target.FactScalesUp: 15 * time.Second, target.FactLoweredMax: 15 * time.Second, target.FactCountSet: 6 * time.Minute,
				target.FactNoEarlyScaleDown: 300 * time.Second, target.FactBackToMin: 315 * time.Second},
			notAppl:  []target.Fact{target.FactTrailActor, target.FactOutageHolds},
			contains: map[target.Fact]string{target.FactCountSet: "brought back to its recommendation like any scale-down", target.FactNoEarlyScaleDown: "300 s, the default"}},
		{name: "controller flags", h: hpaObject("worker", "worker", nil, 4, 1, nil),
			cfg:    HPAConfig{SyncPeriod: 30 * time.Second, DownscaleStabilization: 120 * time.Second},
			bounds: map[target.Fact]time.Duration{target.FactScalesUp: 30 * time.Second, target.FactLoweredMax: 30 * time.Second, target.FactNoEarlyScaleDown: 120 * time.Second, target.FactBackToMin: 150 * time.Second}},
		{name: "one pod a minute down, 60 s window", h: hpaObject("worker", "worker", ptr(int32(2)), 10, 2, down(autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr(int32(60)),
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}})),
			// 8 steps of 1 pod, 60 s apart: the last at 420 s.
			bounds:   map[target.Fact]time.Duration{target.FactNoEarlyScaleDown: 60 * time.Second, target.FactBackToMin: (60 + 15 + 420) * time.Second},
			contains: map[target.Fact]string{target.FactNoEarlyScaleDown: "60 s, the HPA's behavior.scaleDown.stabilizationWindowSeconds"}},
		{name: "the post's 1800 s window", h: hpaObject("worker", "worker", ptr(int32(10)), 50, 10, down(autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(1800))})),
			bounds: map[target.Fact]time.Duration{target.FactNoEarlyScaleDown: 1800 * time.Second, target.FactBackToMin: 1815 * time.Second}},
		{name: "scale-down disabled", h: hpaObject("worker", "worker", ptr(int32(2)), 10, 2, down(autoscalingv2.HPAScalingRules{SelectPolicy: &disabled})),
			notAppl: []target.Fact{target.FactBackToMin}, contains: map[target.Fact]string{target.FactNoEarlyScaleDown: "never scales down"}},
		{name: "scale-up window and disabled up", h: hpaObject("worker", "worker", ptr(int32(2)), 10, 2, &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled}}),
			notAppl: []target.Fact{target.FactScalesUp}},
		{name: "min equals max", h: hpaObject("worker", "worker", ptr(int32(3)), 3, 3, nil),
			notAppl: []target.Fact{target.FactScalesUp}, bounds: map[target.Fact]time.Duration{target.FactBackToMin: 315 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset(c.h)
			cfg := c.cfg
			cfg.Run, cfg.Admin, cfg.Viewer, cfg.Namespace, cfg.Deployment, cfg.HPA = cs, cs, cs, ns, "worker", "worker"
			tg, err := NewHPA(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			k := tg.Contracts()
			if err := k.Check(); err != nil {
				t.Fatal(err)
			}
			for f, b := range c.bounds {
				if k[f].Bound != b {
					t.Errorf("%s: bound %s, want %s (%s)", f, k[f].Bound, b, k[f].Text)
				}
			}
			for _, f := range c.notAppl {
				if k[f].Applies {
					t.Errorf("%s applies: %s", f, k[f].Text)
				}
			}
			for f, s := range c.contains {
				if !strings.Contains(k[f].Text, s) {
					t.Errorf("%s: %q lacks %q", f, k[f].Text, s)
				}
			}
		})
	}
}

func TestHPAScaleUpWindow(t *testing.T) {
	h := hpaObject("worker", "worker", nil, 10, 1, &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(60)), Tolerance: ptr(resource.MustParse("50m"))}})
	cs := fake.NewClientset(h)
	tg, err := NewHPA(context.Background(), HPAConfig{Run: cs, Admin: cs, Viewer: cs, Namespace: ns, Deployment: "worker", HPA: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	k := tg.Contracts()[target.FactScalesUp]
	if k.Bound != 75*time.Second || !strings.Contains(k.Text, "tolerance (0.05)") {
		t.Errorf("scales up: %s, %q", k.Bound, k.Text)
	}
}

func TestDrainTime(t *testing.T) {
	pods := func(v, p int32) autoscalingv2.HPAScalingPolicy {
		return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: v, PeriodSeconds: p}
	}
	pct := func(v, p int32) autoscalingv2.HPAScalingPolicy {
		return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: v, PeriodSeconds: p}
	}
	s15 := 15 * time.Second
	for _, c := range []struct {
		name     string
		from, to int
		r        rules
		want     time.Duration
		ok       bool
	}{
		{"already there", 2, 2, rules{}, 0, true},
		{"100 % at once", 10, 1, rules{policies: []autoscalingv2.HPAScalingPolicy{pct(100, 15)}}, 0, true},
		{"50 % per 15 s: 8, 4, 2, 1", 8, 1, rules{policies: []autoscalingv2.HPAScalingPolicy{pct(50, 15)}}, 30 * time.Second, true},
		{"2 pods per 60 s", 7, 1, rules{policies: []autoscalingv2.HPAScalingPolicy{pods(2, 60)}}, 120 * time.Second, true},
		{"Max takes the larger change", 10, 2, rules{policies: []autoscalingv2.HPAScalingPolicy{pods(1, 15), pct(100, 15)}}, 0, true},
		{"Min takes the smaller change", 4, 2, rules{selectP: autoscalingv2.MinChangePolicySelect, policies: []autoscalingv2.HPAScalingPolicy{pods(1, 15), pct(100, 15)}}, 15 * time.Second, true},
		{"disabled", 4, 2, rules{selectP: autoscalingv2.DisabledPolicySelect, policies: []autoscalingv2.HPAScalingPolicy{pods(1, 15)}}, 0, false},
		{"no known policy", 4, 2, rules{policies: []autoscalingv2.HPAScalingPolicy{{Type: "Other", Value: 1, PeriodSeconds: 15}}}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := drainTime(c.from, c.to, c.r, s15)
			if got != c.want || ok != c.ok {
				t.Errorf("drainTime = %s %v, want %s %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// TestReadHPAMetricTarget: the metric read comes with the spec's target
// for it, in the same unit (percent of the request for CPU; averageValue
// for an external metric).
func TestReadHPAMetricTarget(t *testing.T) {
	util := int32(100)
	cur := int32(150)
	avg := resource.MustParse("4")
	curAvg := resource.MustParse("7")
	for _, c := range []struct {
		name       string
		h          *autoscalingv2.HorizontalPodAutoscaler
		metric, tg float64
	}{
		{"cpu", &autoscalingv2.HorizontalPodAutoscaler{
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 6, Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &util}}}}},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricStatus{Name: "cpu", Current: autoscalingv2.MetricValueStatus{AverageUtilization: &cur}}}}}}, 150, 100},
		{"external", &autoscalingv2.HorizontalPodAutoscaler{
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 8, Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType,
				External: &autoscalingv2.ExternalMetricSource{Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &avg}}}}},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ExternalMetricSourceType,
				External: &autoscalingv2.ExternalMetricStatus{Current: autoscalingv2.MetricValueStatus{AverageValue: &curAvg}}}}}}, 7, 4},
		{"no status yet", &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 6}}, 0, 0},
	} {
		r := readHPA(c.h)
		if r.metric != c.metric || r.metricTarget != c.tg {
			t.Errorf("%s: metric %v target %v, want %v %v", c.name, r.metric, r.metricTarget, c.metric, c.tg)
		}
	}
}
