package kube

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/scaleproof/scaleproof/scenarios/target"
)

// so is a ScaledObject named queriers scaling Deployment querier, with
// spec merged over the scale target reference.
func so(spec map[string]any, meta map[string]any, status map[string]any) *unstructured.Unstructured {
	sp := map[string]any{"scaleTargetRef": map[string]any{"name": "querier"}}
	for k, v := range spec {
		sp[k] = v
	}
	md := map[string]any{"name": "queriers", "namespace": ns}
	for k, v := range meta {
		md[k] = v
	}
	o := map[string]any{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": md, "spec": sp}
	if status != nil {
		o["status"] = status
	}
	return &unstructured.Unstructured{Object: o}
}

func dynClient(objs ...runtime.Object) *dynfake.FakeDynamicClient {
	return dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{ScaledObjects: "ScaledObjectList"}, objs...)
}

// dynForward is a dynamic client whose actions go to run's reactors.
func dynForward(run *dynfake.FakeDynamicClient) *dynfake.FakeDynamicClient {
	c := dynClient()
	c.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o, err := run.Invokes(a, nil)
		return true, o, err
	})
	return c
}

type kedaFixture struct {
	run, admin, viewer          *fake.Clientset
	runDyn, adminDyn, viewerDyn *dynfake.FakeDynamicClient
	t                           target.Target
}

// newKEDAFixture: querier at 12 replicas (11 ready), the post's
// ScaledObject (min 10, max 50, 1800 s scale-down window) and KEDA's HPA
// keda-hpa-queriers at desired 13 on an in-flight of 4.5 per pod.
func newKEDAFixture(t *testing.T, s *unstructured.Unstructured, objs ...runtime.Object) kedaFixture {
	t.Helper()
	if s == nil {
		s = so(map[string]any{"minReplicaCount": int64(10), "maxReplicaCount": int64(50),
			"advanced": map[string]any{"horizontalPodAutoscalerConfig": map[string]any{
				"behavior": map[string]any{"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(1800)}}}}}, nil, nil)
	}
	base := []runtime.Object{deployment("querier", 12, 11), hpaObject("keda-hpa-queriers", "querier", ptr(int32(10)), 50, 13, nil, externalAt("4500m"))}
	run := withScale(t, fake.NewClientset(append(base, objs...)...))
	runDyn := dynClient(s)
	f := kedaFixture{run: run, admin: forward(run), viewer: forward(run), runDyn: runDyn, adminDyn: dynForward(runDyn), viewerDyn: dynForward(runDyn)}
	tg, err := NewKEDA(context.Background(), KEDAConfig{Run: f.run, Admin: f.admin, Viewer: f.viewer,
		RunDyn: f.runDyn, AdminDyn: f.adminDyn, ViewerDyn: f.viewerDyn,
		Namespace: ns, Deployment: "querier", ScaledObject: "queriers", Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	f.t = tg
	return f
}

func TestKEDAState(t *testing.T) {
	for _, c := range []struct {
		name string
		s    *unstructured.Unstructured
		want target.State
	}{
		{"the post's scaledobject", nil, target.State{At: t0, Count: 12, Ready: 11, Desired: 13, Min: 10, Max: 50, Metric: 4.5, HasMetric: true}},
		{"keda's defaults: min 0, max 100", so(nil, nil, nil), target.State{At: t0, Count: 12, Ready: 11, Desired: 13, Min: 0, Max: 100, Metric: 4.5, HasMetric: true}},
		{"hpa not made yet", so(nil, nil, map[string]any{"hpaName": "keda-hpa-custom"}), target.State{At: t0, Count: 12, Ready: 11, Desired: 12, Min: 0, Max: 100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newKEDAFixture(t, c.s)
			got, err := f.t.State(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("State = %+v, want %+v", got, c.want)
			}
		})
	}
	f := newKEDAFixture(t, nil)
	if f.t.Kind() != target.KEDA || f.t.Name() != "scaledobject sp-1/queriers" {
		t.Errorf("Kind, Name = %s, %q", f.t.Kind(), f.t.Name())
	}
	refuse(f.run, "get", "horizontalpodautoscalers", errNet)
	if _, err := f.t.State(context.Background()); err == nil {
		t.Error("State with the HPA unreadable: no error")
	}
}

func TestKEDASetBounds(t *testing.T) {
	for _, c := range []struct {
		name     string
		role     target.Role
		refuse   error
		want     int
		msg      string
		err      bool
		min, max int64
	}{
		{name: "admin", role: target.Admin, want: 200, min: 2, max: 20},
		{name: "viewer forbidden", role: target.Viewer, refuse: forbidden(soGR, "queriers"), want: 403, msg: "forbidden", min: 10, max: 50},
		{name: "admin invalid", role: target.Admin, refuse: invalid("ScaledObject", "queriers"), want: 422, msg: "Invalid", min: 10, max: 50},
		{name: "no answer", role: target.Admin, refuse: errNet, err: true, min: 10, max: 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newKEDAFixture(t, nil)
			if c.refuse != nil {
				d := map[target.Role]*dynfake.FakeDynamicClient{target.Admin: f.adminDyn, target.Viewer: f.viewerDyn}[c.role]
				d.PrependReactor("patch", "scaledobjects", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, c.refuse })
			}
			o, err := f.t.SetBounds(context.Background(), c.role, 2, 20)
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if !c.err && (o.Status != c.want || !strings.Contains(o.Message, c.msg)) {
				t.Errorf("Outcome = %+v, want %d with %q", o, c.want, c.msg)
			}
			st, err := f.t.State(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if int64(st.Min) != c.min || int64(st.Max) != c.max {
				t.Errorf("scaledobject bounds %d..%d, want %d..%d", st.Min, st.Max, c.min, c.max)
			}
		})
	}
}

func TestKEDASetCount(t *testing.T) {
	f := newKEDAFixture(t, nil)
	refuse(f.viewer, "update", "deployments", forbidden(depGR, "querier"))
	if o, err := f.t.SetCount(context.Background(), target.Viewer, 20); err != nil || o.Status != 403 {
		t.Fatalf("viewer SetCount = %+v, %v; want 403", o, err)
	}
	if o, err := f.t.SetCount(context.Background(), target.Admin, 20); err != nil || o.Status != 200 {
		t.Fatalf("admin SetCount = %+v, %v; want 200", o, err)
	}
	st, err := f.t.State(context.Background())
	if err != nil || st.Count != 20 {
		t.Fatalf("count %d (%v), want 20", st.Count, err)
	}
}

func TestKEDAEvent(t *testing.T) {
	t1 := t0.Add(time.Minute)
	for _, c := range []struct {
		name string
		e    corev1.Event
		want []target.Change
		ok   bool
	}{
		{"activated", *event("a", "ScaledObject", "queriers", "KEDAScaleTargetActivated",
			"Scaled apps/v1.Deployment sp-1/querier from 0 to 1, triggered by s0-prometheus", t0, t0, 1),
			[]target.Change{{At: t0, From: 0, To: 1, Reason: "Scaled apps/v1.Deployment sp-1/querier from 0 to 1, triggered by s0-prometheus", Source: "event"}}, true},
		{"deactivated twice", *event("b", "ScaledObject", "queriers", "KEDAScaleTargetDeactivated",
			"Deactivated apps/v1.Deployment sp-1/querier from 3 to 0", t0, t1, 2),
			[]target.Change{{At: t0, From: 3, To: 0, Reason: "Deactivated apps/v1.Deployment sp-1/querier from 3 to 0", Source: "event"},
				{At: t1, From: 3, To: 0, Reason: "Deactivated apps/v1.Deployment sp-1/querier from 3 to 0", Source: "event"}}, true},
		{"scaler failed is no change", *event("c", "ScaledObject", "queriers", "KEDAScalerFailed", "error from 0 to 1", t0, t0, 1), nil, false},
		{"unparsable", *event("d", "ScaledObject", "queriers", "KEDAScaleTargetActivated", "Scaled somehow", t0, t0, 1), nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := KEDAEvent(c.e)
			if ok != c.ok || !slices.EqualFunc(got, c.want, target.Change.Equal) {
				t.Errorf("KEDAEvent = %+v %v, want %+v %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestKEDATrail(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	f := newKEDAFixture(t, nil,
		event("h2", "HorizontalPodAutoscaler", "keda-hpa-queriers", "SuccessfulRescale", "New size: 4; reason: external metric s0-prometheus above target", at(2), at(2), 1),
		event("k1", "ScaledObject", "queriers", "KEDAScaleTargetActivated", "Scaled apps/v1.Deployment sp-1/querier from 0 to 1, triggered by s0-prometheus", at(1), at(1), 1),
		event("k9", "ScaledObject", "queriers", "KEDAScaleTargetDeactivated", "Deactivated apps/v1.Deployment sp-1/querier from 1 to 0", at(9), at(9), 1),
		event("k5", "ScaledObject", "queriers", "KEDAScalerFailed", "connection refused", at(5), at(5), 1),
		event("x", "ScaledObject", "other", "KEDAScaleTargetActivated", "Scaled apps/v1.Deployment sp-1/x from 0 to 1", at(3), at(3), 1),
	)
	got, err := f.t.Trail(context.Background(), at(1))
	if err != nil {
		t.Fatal(err)
	}
	var seq []int
	for _, c := range got {
		seq = append(seq, c.From, c.To)
	}
	if want := []int{0, 1, -1, 4, 1, 0}; !equalInts(seq, want) {
		t.Errorf("Trail from/to = %v, want %v (%+v)", seq, want, got)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNewKEDAErrors(t *testing.T) {
	cs := fake.NewClientset()
	other := so(map[string]any{"scaleTargetRef": map[string]any{"name": "other"}}, nil, nil)
	sts := so(map[string]any{"scaleTargetRef": map[string]any{"name": "querier", "kind": "StatefulSet"}}, nil, nil)
	for _, c := range []struct {
		name string
		d    *dynfake.FakeDynamicClient
		so   string
		want string
	}{
		{"missing scaledobject", dynClient(), "queriers", "not found"},
		{"another deployment", dynClient(other), "queriers", `scales Deployment "other"`},
		{"a statefulset", dynClient(sts), "queriers", `scales StatefulSet "querier"`},
		{"no name", dynClient(), "", "no scaledobject"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewKEDA(context.Background(), KEDAConfig{Run: cs, Admin: cs, Viewer: cs, RunDyn: c.d, AdminDyn: c.d, ViewerDyn: c.d,
				Namespace: ns, Deployment: "querier", ScaledObject: c.so})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one with %q", err, c.want)
			}
		})
	}
	if _, err := NewKEDA(context.Background(), KEDAConfig{Run: cs, Namespace: ns, Deployment: "querier", ScaledObject: "q"}); err == nil {
		t.Error("no dynamic clients: no error")
	}
}

// The contracts' bounds follow the ScaledObject's spec.
func TestKEDAContracts(t *testing.T) {
	fallback := func(b string, replicas int64) map[string]any {
		m := map[string]any{"failureThreshold": int64(3), "replicas": replicas}
		if b != "" {
			m["behavior"] = b
		}
		return m
	}
	for _, c := range []struct {
		name     string
		spec     map[string]any
		meta     map[string]any
		bounds   map[target.Fact]time.Duration
		applies  []target.Fact
		notAppl  []target.Fact
		contains map[target.Fact]string
	}{
		{name: "the post: min 10, max 50, 1800 s window, polling 30 s",
			spec: map[string]any{"minReplicaCount": int64(10), "maxReplicaCount": int64(50), "pollingInterval": int64(30),
				"advanced": map[string]any{"horizontalPodAutoscalerConfig": map[string]any{"behavior": map[string]any{
					"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(1800)}}}}},
			bounds: map[target.Fact]time.Duration{target.FactScalesUp: 15 * time.Second, target.FactLoweredMax: 20 * time.Second, target.FactCountSet: 31 * time.Minute,
				target.FactNoEarlyScaleDown: 1800 * time.Second, target.FactBackToMin: 1815 * time.Second},
			notAppl:  []target.Fact{target.FactTrailActor, target.FactOutageHolds},
			contains: map[target.Fact]string{target.FactNoEarlyScaleDown: "1800 s, the ScaledObject's advanced.horizontalPodAutoscalerConfig", target.FactOutageHolds: "no fallback"}},
		{name: "defaults: min 0, cooldown 300 s, polling 30 s",
			bounds: map[target.Fact]time.Duration{target.FactScalesUp: 45 * time.Second, target.FactCountSet: 6 * time.Minute, target.FactTrail: 30 * time.Second,
				target.FactNoEarlyScaleDown: 300 * time.Second, target.FactBackToMin: 330 * time.Second},
			contains: map[target.Fact]string{target.FactScalesUp: "KEDA activates", target.FactBackToMin: "cooldownPeriod (300 s)"}},
		{name: "min 0, short cooldown, cached metrics",
			spec:   map[string]any{"cooldownPeriod": int64(60), "pollingInterval": int64(10), "triggers": []any{map[string]any{"type": "prometheus", "useCachedMetrics": true}}},
			bounds: map[target.Fact]time.Duration{target.FactScalesUp: 35 * time.Second, target.FactNoEarlyScaleDown: 60 * time.Second, target.FactBackToMin: 70 * time.Second}},
		{name: "min 0 max 1: only keda's activation scales up", spec: map[string]any{"maxReplicaCount": int64(1)},
			applies: []target.Fact{target.FactScalesUp}, bounds: map[target.Fact]time.Duration{target.FactScalesUp: 45 * time.Second}},
		{name: "min equals max", spec: map[string]any{"minReplicaCount": int64(3), "maxReplicaCount": int64(3)}, notAppl: []target.Fact{target.FactScalesUp}},
		{name: "fallback static below max", spec: map[string]any{"minReplicaCount": int64(1), "maxReplicaCount": int64(10), "fallback": fallback("", 6)},
			notAppl: []target.Fact{target.FactOutageHolds}, contains: map[target.Fact]string{target.FactOutageHolds: "behavior static, replicas 6"}},
		{name: "fallback static at max", spec: map[string]any{"minReplicaCount": int64(1), "maxReplicaCount": int64(10), "fallback": fallback("static", 10)},
			applies: []target.Fact{target.FactOutageHolds}},
		{name: "fallback currentReplicas", spec: map[string]any{"minReplicaCount": int64(1), "fallback": fallback("currentReplicas", 2)},
			applies: []target.Fact{target.FactOutageHolds}, contains: map[target.Fact]string{target.FactOutageHolds: "3 failures in a row"}},
		{name: "fallback currentReplicasIfHigher", spec: map[string]any{"minReplicaCount": int64(1), "fallback": fallback("currentReplicasIfHigher", 2)},
			applies: []target.Fact{target.FactOutageHolds}},
		{name: "fallback currentReplicasIfLower", spec: map[string]any{"minReplicaCount": int64(1), "fallback": fallback("currentReplicasIfLower", 2)},
			notAppl: []target.Fact{target.FactOutageHolds}},
		{name: "paused", spec: map[string]any{"minReplicaCount": int64(1)}, meta: map[string]any{"annotations": map[string]any{"autoscaling.keda.sh/paused": "true"}},
			notAppl: []target.Fact{target.FactScalesUp, target.FactCountSet, target.FactBackToMin}, applies: []target.Fact{target.FactViewerRefused, target.FactLoweredMax}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newKEDAFixture(t, so(c.spec, c.meta, nil))
			k := f.t.Contracts()
			if err := k.Check(); err != nil {
				t.Fatal(err)
			}
			for fa, b := range c.bounds {
				if k[fa].Bound != b {
					t.Errorf("%s: bound %s, want %s (%s)", fa, k[fa].Bound, b, k[fa].Text)
				}
			}
			for _, fa := range c.applies {
				if !k[fa].Applies {
					t.Errorf("%s does not apply: %s", fa, k[fa].NotApplicable)
				}
			}
			for _, fa := range c.notAppl {
				if k[fa].Applies {
					t.Errorf("%s applies: %s", fa, k[fa].Text)
				}
			}
			for fa, s := range c.contains {
				if txt := k[fa].Text + k[fa].NotApplicable; !strings.Contains(txt, s) {
					t.Errorf("%s: %q lacks %q", fa, txt, s)
				}
			}
		})
	}
}

func TestScaledObjectHPAName(t *testing.T) {
	for _, c := range []struct {
		name string
		s    *unstructured.Unstructured
		want string
	}{
		{"default", so(nil, nil, nil), "keda-hpa-queriers"},
		{"advanced name", so(map[string]any{"advanced": map[string]any{"horizontalPodAutoscalerConfig": map[string]any{"name": "mine"}}}, nil, nil), "mine"},
		{"status wins", so(map[string]any{"advanced": map[string]any{"horizontalPodAutoscalerConfig": map[string]any{"name": "mine"}}}, nil, map[string]any{"hpaName": "theirs"}), "theirs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := readScaledObject(context.Background(), dynClient(c.s), ns, "queriers")
			if err != nil {
				t.Fatal(err)
			}
			if got := s.hpaName("queriers"); got != c.want {
				t.Errorf("hpaName = %q, want %q", got, c.want)
			}
		})
	}
}

// TestKEDALookback: the longest range selector of the prometheus
// triggers' queries (the post's max_over_time(...[2m])) is how long the
// signal holds a peak; other triggers and subqueries' steps are not it.
func TestKEDALookback(t *testing.T) {
	for _, c := range []struct {
		typ, query string
		want       time.Duration
	}{
		{"prometheus", `sum(max_over_time(loki_query_scheduler_inflight_requests{namespace="n",quantile="0.75"}[2m]))`, 2 * time.Minute},
		{"prometheus", `sum(rate(x[30s])) + max_over_time(y[5m:1m])`, 5 * time.Minute},
		{"prometheus", `sum(scaleproof_worker_inflight{namespace="n"})`, 0},
		{"cron", `[10m]`, 0},
	} {
		var s scaledObject
		s.Spec.Triggers = append(s.Spec.Triggers, struct {
			Type             string            `json:"type"`
			UseCachedMetrics bool              `json:"useCachedMetrics"`
			Metadata         map[string]string `json:"metadata"`
		}{Type: c.typ, Metadata: map[string]string{"query": c.query}})
		if got, _ := s.lookback(); got != c.want {
			t.Errorf("%s %q: lookback %s, want %s", c.typ, c.query, got, c.want)
		}
	}
}
