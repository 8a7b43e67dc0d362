package addons

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const (
	testMS       = "scaleproof.local/metrics-server:0.8.0-0123456789ab"
	testOperator = "scaleproof.local/keda:2.21.0-0123456789ab"
	testAdapter  = "scaleproof.local/keda-metrics-apiserver:2.21.0-0123456789ab"
	testWebhooks = "scaleproof.local/keda-admission-webhooks:2.21.0-0123456789ab"
)

// fakeClock moves only when waited on: After(d) advances Now by d.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	c.mu.Unlock()
	return ch
}

// cluster is a fake API server's state: what it answers after how many
// reads.
type cluster struct {
	readyAfter  int             // Deployment gets until rolled out
	pod         *corev1.Pod     // a pod of every Deployment (its waiting reason)
	available   map[string]bool // APIService -> Available
	availMsg    string          // the Available condition's message
	nodeMetrics []string        // the cpu usage of each NodeMetrics listed ("" : none yet)
	listErr     error           // listing NodeMetrics fails
	external    bool            // external.metrics.k8s.io answers discovery

	mu      sync.Mutex
	gets    map[string]int
	applied []k8stesting.PatchActionImpl
}

func (f *cluster) clients(t *testing.T, objs []*unstructured.Unstructured) clients {
	t.Helper()
	f.gets = map[string]int{}
	kc := fake.NewClientset()
	if f.pod != nil {
		kc = fake.NewClientset(f.pod)
	}
	kc.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g := a.(k8stesting.GetAction)
		f.mu.Lock()
		f.gets[g.GetNamespace()+"/"+g.GetName()]++
		n := f.gets[g.GetNamespace()+"/"+g.GetName()]
		f.mu.Unlock()
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: g.GetName(), Namespace: g.GetNamespace(), Generation: 1},
			Spec:       appsv1.DeploymentSpec{Replicas: new(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1},
		}
		if n > f.readyAfter {
			d.Status.ReadyReplicas = 1
		}
		return true, d, nil
	})
	if f.external {
		kc.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: ExternalGroupVersion}}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		nodeMetricsGVR: "NodeMetricsList", apiServicesGVR: "APIServiceList"})
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchActionImpl)
		f.mu.Lock()
		f.applied = append(f.applied, p)
		f.mu.Unlock()
		return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "X", "metadata": map[string]any{"name": p.Name}}}, nil
	})
	dyn.PrependReactor("get", "apiservices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.GetAction).GetName()
		st, ok := f.available[name]
		if !ok {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}, name)
		}
		status, reason := "True", "Passed"
		if !st {
			status, reason = "False", "FailedDiscoveryCheck"
		}
		return true, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": name},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": status, "reason": reason, "message": f.availMsg}}},
		}}, nil
	})
	dyn.PrependReactor("list", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if f.listErr != nil {
			return true, nil, f.listErr
		}
		l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetricsList"}}
		for i, cpu := range f.nodeMetrics {
			it := unstructured.Unstructured{Object: map[string]any{"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics",
				"metadata": map[string]any{"name": "node-" + string(rune('a'+i))}}}
			if cpu != "" {
				it.Object["usage"] = map[string]any{"cpu": cpu, "memory": "1Gi"}
			}
			l.Items = append(l.Items, it)
		}
		return true, l, nil
	})
	return clients{kc: kc, dyn: dyn, disc: kc.Discovery(), mapper: mapperFor(objs)}
}

// mapperFor maps every kind of objs, cluster-scoped ones as the API server does.
func mapperFor(objs []*unstructured.Unstructured) meta.RESTMapper {
	cluster := map[string]bool{"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
		"APIService": true, "ValidatingWebhookConfiguration": true}
	m := meta.NewDefaultRESTMapper(nil)
	for _, o := range objs {
		scope := meta.RESTScopeNamespace
		if cluster[o.GetKind()] {
			scope = meta.RESTScopeRoot
		}
		m.Add(o.GroupVersionKind(), scope)
	}
	return m
}

func healthy() *cluster {
	return &cluster{available: map[string]bool{MetricsAPIService: true, ExternalMetricsAPIService: true}, nodeMetrics: []string{"150m"}, external: true}
}

func TestInstall(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        Options
		deploys  []string // Deployments waited for
		firstNS  string   // namespace of the first namespaced object applied
		hasKinds []string
	}{
		{"metrics-server", Options{MetricsServer: true, Images: Images{MetricsServer: testMS}},
			[]string{"kube-system/metrics-server"}, "kube-system", []string{"APIService", "Deployment", "Service"}},
		{"KEDA", Options{KEDA: true, Images: Images{KEDAOperator: testOperator, KEDAMetricsAPIServer: testAdapter}},
			[]string{"keda/keda-operator", "keda/keda-metrics-apiserver"}, "keda", []string{"CustomResourceDefinition", "Namespace", "APIService"}},
		{"both, KEDA with webhooks", Options{MetricsServer: true, KEDA: true, Images: Images{MetricsServer: testMS, KEDAOperator: testOperator, KEDAMetricsAPIServer: testAdapter, KEDAWebhooks: testWebhooks}},
			[]string{"kube-system/metrics-server", "keda/keda-operator", "keda/keda-metrics-apiserver", "keda/keda-admission"}, "kube-system", []string{"ValidatingWebhookConfiguration"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := tc.o.objects()
			if err != nil {
				t.Fatal(err)
			}
			f := healthy()
			f.readyAfter = 2
			tc.o.Clock, tc.o.Interval = &fakeClock{now: time.Unix(1000, 0)}, time.Second
			tm, err := install(context.Background(), f.clients(t, objs), tc.o, objs)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.applied) != len(objs) {
				t.Fatalf("%d objects applied, want %d", len(f.applied), len(objs))
			}
			kinds := map[string]bool{}
			first := ""
			for i, p := range f.applied {
				o := objs[i]
				kinds[o.GetKind()] = true
				if p.GetPatchType() != "application/apply-patch+yaml" || p.GetName() != o.GetName() || p.GetNamespace() != o.GetNamespace() {
					t.Errorf("apply %d: %s %s/%s type %s, want %s %s/%s server-side apply", i, p.GetResource().Resource, p.GetNamespace(), p.GetName(), p.GetPatchType(), o.GetKind(), o.GetNamespace(), o.GetName())
				}
				if first == "" && p.GetNamespace() != "" {
					first = p.GetNamespace()
				}
			}
			if first != tc.firstNS {
				t.Errorf("first namespaced object in %q, want %q", first, tc.firstNS)
			}
			for _, k := range tc.hasKinds {
				if !kinds[k] {
					t.Errorf("no %s applied", k)
				}
			}
			for _, d := range tc.deploys {
				if f.gets[d] != 3 {
					t.Errorf("Deployment %s read %d times, want 3 (ready at the third)", d, f.gets[d])
				}
			}
			if len(f.gets) != len(tc.deploys) {
				t.Errorf("Deployments waited for %v, want %v", f.gets, tc.deploys)
			}
			// each Deployment took 2 polls of 1 s on the fake clock; the
			// rest answered at once
			if want := time.Duration(2*len(tc.deploys)) * time.Second; tm.Rollout != want || tm.Apply != 0 || tm.APIServices != 0 || tm.Total != want {
				t.Errorf("timings %+v, want rollout %s and total %s, the rest 0", tm, want, want)
			}
		})
	}
}

func TestInstallNotReady(t *testing.T) {
	both := Options{MetricsServer: true, KEDA: true, Images: Images{MetricsServer: testMS, KEDAOperator: testOperator, KEDAMetricsAPIServer: testAdapter}}
	objs, err := both.objects() // rendered once: kustomize takes seconds under -race
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		breakIt func(f *cluster)
		want    []string // in the error
	}{
		{"image never pulled", func(f *cluster) {
			f.readyAfter = 1 << 30
			f.pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "metrics-server-abc", Namespace: "kube-system", Labels: map[string]string{"app": "x"}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "metrics-server",
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "image not present with pull policy of Never"}}}}}}
		}, []string{"rollout of Deployment kube-system/metrics-server", "not ready within 10s", "ready 0", "metrics-server-abc", "ErrImageNeverPull", "pull policy of Never"}},
		{"APIService unavailable", func(f *cluster) {
			f.available[MetricsAPIService] = false
			f.availMsg = "failing or missing response from https://10.96.0.20:443/apis/metrics.k8s.io/v1beta1: connection refused"
		}, []string{"APIService v1beta1.metrics.k8s.io", "Available=False FailedDiscoveryCheck", "connection refused", "within 10s"}},
		{"KEDA's APIService missing", func(f *cluster) { delete(f.available, ExternalMetricsAPIService) },
			[]string{"APIService v1beta1.external.metrics.k8s.io not found"}},
		{"no NodeMetrics yet", func(f *cluster) { f.nodeMetrics = []string{""} },
			[]string{"NodeMetrics from metrics.k8s.io/v1beta1", "1 NodeMetrics listed, none with a cpu usage", "Available=True"}},
		{"metrics.k8s.io failing", func(f *cluster) {
			f.listErr = apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
			f.availMsg = "all checks passed"
		}, []string{"list nodes.metrics.k8s.io", "unable to handle the request", "APIService v1beta1.metrics.k8s.io Available=True"}},
		{"external metrics not served", func(f *cluster) { f.external = false },
			[]string{"discovery of external.metrics.k8s.io/v1beta1", "APIService v1beta1.external.metrics.k8s.io Available=True"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy()
			tc.breakIt(f)
			o := both
			o.Clock, o.Interval, o.Timeout = &fakeClock{now: time.Unix(1000, 0)}, time.Second, 10*time.Second
			tm, err := install(context.Background(), f.clients(t, objs), o, objs)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			// one deadline for every wait: never past it by more than a poll
			if tm.Total > 11*time.Second {
				t.Errorf("waited %s, want at most the 10 s timeout and one poll", tm.Total)
			}
			for d, n := range f.gets {
				if n > 11 {
					t.Errorf("Deployment %s read %d times within 10 s at 1 s", d, n)
				}
			}
		})
	}
}

func TestInstallCancelled(t *testing.T) {
	o := Options{MetricsServer: true, Images: Images{MetricsServer: testMS}}
	objs, _ := o.objects()
	f := healthy()
	f.readyAfter = 1 << 30
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o.Clock = &fakeClock{now: time.Unix(1000, 0)}
	_, err := install(ctx, f.clients(t, objs), o, objs)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

// TestInstallBadOptions: nothing asked, or an add-on without exact image
// refs, is an error before the kubeconfig is read.
func TestInstallBadOptions(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "nothing to install"},
		{Options{MetricsServer: true}, "metrics-server: no image"},
		{Options{MetricsServer: true, Images: Images{MetricsServer: "scaleproof.local/metrics-server:latest"}}, "never :latest"},
		{Options{KEDA: true, Images: Images{KEDAOperator: testOperator}}, "metrics API server's images are both needed"},
		{Options{KEDA: true, Images: Images{KEDAOperator: testOperator, KEDAMetricsAPIServer: testAdapter, KEDAWebhooks: "x y"}}, "want an exact REPOSITORY:TAG"},
	} {
		_, err := Install(context.Background(), "/nonexistent/kubeconfig", tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "/nonexistent") {
			t.Errorf("Install(%+v): err %v, want %q (before the kubeconfig is read)", tc.o, err, tc.want)
		}
	}
	_, err := Install(context.Background(), "/nonexistent/kubeconfig", Options{MetricsServer: true, Images: Images{MetricsServer: testMS}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/kubeconfig") {
		t.Errorf("missing kubeconfig: err %v, want one naming it", err)
	}
}
