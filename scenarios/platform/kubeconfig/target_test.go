package kubeconfig

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

const promImg = "scaleproof.local/prometheus:v2.42.0-0123456789ab"

// testCA is a PEM certificate for the kubeconfigs' cluster (httptest's).
var testCA = func() []byte {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	defer ts.Close()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
}()

// kubeconfigFor writes a kubeconfig for a server nothing listens on.
func kubeconfigFor(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(p, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", certificate-authority-data: "`+base64.StdEncoding.EncodeToString(testCA)+`"}}]
users: [{name: u, user: {token: run-token}}]
contexts: [{name: kind-x, context: {cluster: c, user: u}}]
current-context: kind-x
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var discoveryResources = []*metav1.APIResourceList{
	{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "namespaces", Kind: "Namespace"},
		{Name: "serviceaccounts", Kind: "ServiceAccount", Namespaced: true},
		{Name: "services", Kind: "Service", Namespaced: true},
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true},
	}},
	{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true}}},
	{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "roles", Kind: "Role", Namespaced: true}, {Name: "rolebindings", Kind: "RoleBinding", Namespaced: true}}},
	{GroupVersion: "autoscaling/v2", APIResources: []metav1.APIResource{{Name: "horizontalpodautoscalers", Kind: "HorizontalPodAutoscaler", Namespaced: true}}},
	{GroupVersion: "keda.sh/v1alpha1", APIResources: []metav1.APIResource{{Name: "scaledobjects", Kind: "ScaledObject", Namespaced: true}}},
}

var listKinds = map[schema.GroupVersionResource]string{
	{Version: "v1", Resource: "namespaces"}:                                       "NamespaceList",
	{Version: "v1", Resource: "serviceaccounts"}:                                  "ServiceAccountList",
	{Version: "v1", Resource: "services"}:                                         "ServiceList",
	{Version: "v1", Resource: "configmaps"}:                                       "ConfigMapList",
	{Group: "apps", Version: "v1", Resource: "deployments"}:                       "DeploymentList",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}:        "RoleList",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}: "RoleBindingList",
	{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}:   "HorizontalPodAutoscalerList",
	{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}:            "ScaledObjectList",
}

// readyDeployment is a Deployment whose rollout is over, as the
// Deployment controller would leave it.
func readyDeployment(ns, name string) *appsv1.Deployment {
	one := int32(1)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1},
		Spec:   appsv1.DeploymentSpec{Replicas: &one},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}}
}

// targetPlatform is New(cfg) with fake clients: kc holds objs; tokens are
// "tok-<serviceaccount>".
func targetPlatform(t *testing.T, cfg Config, objs ...runtime.Object) (*Platform, *fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	kc := fake.NewClientset(objs...)
	kc.Resources = discoveryResources
	allowAll(kc)
	kc.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateActionImpl)
		if !ok || ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := ca.GetObject().(*authv1.TokenRequest)
		if tr.Spec.ExpirationSeconds == nil || *tr.Spec.ExpirationSeconds != TokenSeconds {
			t.Errorf("token of %s asked for %v s, want %d", ca.Name, tr.Spec.ExpirationSeconds, TokenSeconds)
		}
		return true, &authv1.TokenRequest{Status: authv1.TokenRequestStatus{Token: "tok-" + ca.Name}}, nil
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	// Server-side apply as the API server does it for one manager: create,
	// or replace what this manager applied before.
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa, ok := a.(k8stesting.PatchActionImpl)
		if !ok || pa.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(pa.GetPatch()); err != nil {
			return true, nil, err
		}
		err := dyn.Tracker().Create(pa.GetResource(), o, pa.GetNamespace())
		if apierrors.IsAlreadyExists(err) {
			err = dyn.Tracker().Update(pa.GetResource(), o, pa.GetNamespace())
		}
		return true, o, err
	})
	p.kc, p.dyn = kc, dyn
	return p, kc, dyn
}

// loopbackReady serves /readyz and /-/ready with 200 on 127.0.0.1 and
// returns its port.
func loopbackReady(t *testing.T) int {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" || r.URL.Path == "/-/ready" {
			_, _ = w.Write([]byte("ok"))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)
	port, _ := strconv.Atoi(u.Port())
	return port
}

func dynNames(t *testing.T, dyn *dynamicfake.FakeDynamicClient, gvr schema.GroupVersionResource, ns string) []string {
	t.Helper()
	l, err := dyn.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list %s: %v", gvr.Resource, err)
	}
	var out []string
	for _, o := range l.Items {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out
}

var (
	gvrDeploy = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrHPA    = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	gvrSO     = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}
	gvrRB     = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// checkKubeconfigs: the three files exist with mode 0600 in one private
// folder (0700) outside the artifacts folder; the run's keeps its own user;
// each role's has its ServiceAccount's token, the run's cluster and the
// target's namespace. It returns the folder.
func checkKubeconfigs(t *testing.T, ref *platform.TargetRef, artifacts string) string {
	t.Helper()
	dir := filepath.Dir(ref.Kubeconfig)
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("kubeconfig folder %s: %v, want mode 0700", dir, err)
	}
	if rel, err := filepath.Rel(artifacts, dir); err == nil && !strings.HasPrefix(rel, "..") {
		t.Errorf("kubeconfig folder %s is under the artifacts %s, which are published", dir, artifacts)
	}
	for _, tc := range []struct{ path, file, token string }{
		{ref.Kubeconfig, RunKubeconfigFile, "run-token"},
		{ref.AdminKubeconfig, AdminKubeconfigFile, "tok-" + deploykube.TargetAdminName},
		{ref.ViewerKubeconfig, ViewerKubeconfigFile, "tok-" + deploykube.TargetViewerName},
	} {
		if tc.path != filepath.Join(dir, tc.file) {
			t.Errorf("kubeconfig %q, want %s in the private folder %s", tc.path, tc.file, dir)
			continue
		}
		st, err := os.Stat(tc.path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", tc.file, err, st.Mode().Perm())
			continue
		}
		c, err := clientcmd.LoadFromFile(tc.path)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		kctx := c.Contexts[c.CurrentContext]
		if kctx == nil || c.AuthInfos[kctx.AuthInfo] == nil || c.Clusters[kctx.Cluster] == nil {
			t.Fatalf("%s: no current context with a user and a cluster", tc.file)
		}
		if got := c.AuthInfos[kctx.AuthInfo].Token; got != tc.token {
			t.Errorf("%s: token %q, want %q", tc.file, got, tc.token)
		}
		if cl := c.Clusters[kctx.Cluster]; cl.Server != "https://127.0.0.1:1" || string(cl.CertificateAuthorityData) != string(testCA) {
			t.Errorf("%s: cluster %s CA %q, want the run's", tc.file, cl.Server, cl.CertificateAuthorityData)
		}
		if tc.file != RunKubeconfigFile && kctx.Namespace != ref.Namespace {
			t.Errorf("%s: namespace %q, want %s", tc.file, kctx.Namespace, ref.Namespace)
		}
	}
	return dir
}

// TestUpTargetDeployed: a deployed target applies the workload and its
// autoscaler (and Prometheus for keda) and no console or edge, waits for
// the rollouts, writes the kubeconfigs and fills Endpoints.Target; Down
// deletes the namespace.
func TestUpTargetDeployed(t *testing.T) {
	for _, tc := range []struct {
		kind, workload  string
		deployment, hpa string
		scaledObject    string
		deploys         []string
	}{
		{render.KindHPA, render.WorkloadWorker, "scaleproof-target", "scaleproof-target", "", []string{"scaleproof-target"}},
		{render.KindKEDA, render.WorkloadWorker, "scaleproof-target", "keda-hpa-scaleproof-target", "scaleproof-target", []string{"prometheus", "scaleproof-target"}},
		{render.KindHPA, render.WorkloadQueue, deploykube.QuerierName, "scaleproof-target", "", []string{deploykube.QuerierName, deploykube.SchedulerName}},
		{render.KindKEDA, render.WorkloadQueue, deploykube.QuerierName, "keda-hpa-scaleproof-target", "scaleproof-target", []string{"prometheus", deploykube.QuerierName, deploykube.SchedulerName}},
	} {
		t.Run(tc.kind+"/"+tc.workload, func(t *testing.T) {
			dir := t.TempDir()
			loadPort, promPort := loopbackReady(t), loopbackReady(t)
			cfg := Config{Kubeconfig: kubeconfigFor(t), Namespace: testNS, Profile: "quick", Image: testImg, PrometheusImage: promImg,
				Target:   &platform.TargetSpec{Kind: tc.kind, Workload: tc.workload},
				NodeHost: "127.0.0.1", TargetHostPort: loadPort, PrometheusHostPort: promPort}
			var objs []runtime.Object
			for _, d := range tc.deploys {
				objs = append(objs, readyDeployment(testNS, d))
			}
			if tc.kind == render.KindKEDA {
				objs = append(objs, endpointSlice(testNS, deploykube.PrometheusName, true))
			}
			p, kc, dyn := targetPlatform(t, cfg, objs...)
			ep, err := p.Up(context.Background())
			if err != nil {
				t.Fatalf("Up: %v", err)
			}
			if ep.ConsoleURL != "" || ep.EdgeURL != "" || ep.Keys.SuperAdmin.Key != "" {
				t.Errorf("console endpoints set in a target run: %+v", ep)
			}
			ref := ep.Target
			if ref == nil {
				t.Fatal("Endpoints.Target nil")
			}
			want := platform.TargetRef{Kind: tc.kind, Workload: tc.workload, Namespace: testNS, Deployment: tc.deployment, HPA: tc.hpa,
				ScaledObject: tc.scaledObject, LoadURL: "http://127.0.0.1:" + strconv.Itoa(loadPort),
				Kubeconfig: ref.Kubeconfig, AdminKubeconfig: ref.AdminKubeconfig, ViewerKubeconfig: ref.ViewerKubeconfig}
			if *ref != want {
				t.Errorf("TargetRef\n %+v\nwant\n %+v", *ref, want)
			}
			wantProm := ""
			if tc.kind == render.KindKEDA {
				wantProm = "http://127.0.0.1:" + strconv.Itoa(promPort)
			}
			if ep.PrometheusURL != wantProm {
				t.Errorf("PrometheusURL %q, want %q", ep.PrometheusURL, wantProm)
			}
			secrets := checkKubeconfigs(t, ref, dir)
			if got := dynNames(t, dyn, gvrDeploy, testNS); !slices.Equal(got, tc.deploys) {
				t.Errorf("deployments applied %v, want %v (never the console or edge)", got, tc.deploys)
			}
			wantHPA, wantSO := []string{"scaleproof-target"}, []string(nil)
			if tc.kind == render.KindKEDA {
				wantHPA, wantSO = nil, []string{"scaleproof-target"}
			}
			if got := dynNames(t, dyn, gvrHPA, testNS); !slices.Equal(got, wantHPA) {
				t.Errorf("HPAs applied %v, want %v", got, wantHPA)
			}
			if got := dynNames(t, dyn, gvrSO, testNS); !slices.Equal(got, wantSO) {
				t.Errorf("ScaledObjects applied %v, want %v", got, wantSO)
			}
			if tc.kind == render.KindKEDA {
				if last := lastApplied(dyn); last != "scaledobjects/scaleproof-target" {
					t.Errorf("last object applied %s, want the ScaledObject (after its Prometheus answered)", last)
				}
			}
			if up, _ := p.IsUp(context.Background()); !up {
				t.Error("IsUp = false with the scale target ready")
			}

			if _, err := kc.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := p.Down(context.Background()); err != nil {
				t.Fatalf("Down: %v", err)
			}
			if _, err := os.Stat(secrets); !os.IsNotExist(err) {
				t.Errorf("kubeconfig folder after Down: %v, want it removed", err)
			}
			if _, err := kc.CoreV1().Namespaces().Get(context.Background(), testNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace after Down: %v, want NotFound", err)
			}
		})
	}
}

// TestUpTargetKEDAWaitsForPrometheus: with no ready endpoint behind the
// Prometheus Service, Up fails naming it and never applies the
// ScaledObject (KEDA would query a ClusterIP nothing routes yet).
func TestUpTargetKEDAWaitsForPrometheus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		slice *discoveryv1.EndpointSlice
	}{
		{"no EndpointSlice", nil},
		{"endpoint not ready", endpointSlice(testNS, deploykube.PrometheusName, false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loadPort, promPort := loopbackReady(t), loopbackReady(t)
			cfg := Config{Kubeconfig: kubeconfigFor(t), Namespace: testNS, Profile: "quick", Image: testImg, PrometheusImage: promImg,
				Target:   &platform.TargetSpec{Kind: render.KindKEDA, Workload: render.WorkloadQueue},
				NodeHost: "127.0.0.1", TargetHostPort: loadPort, PrometheusHostPort: promPort, RolloutTimeout: time.Second}
			objs := []runtime.Object{readyDeployment(testNS, "prometheus"), readyDeployment(testNS, deploykube.QuerierName), readyDeployment(testNS, deploykube.SchedulerName)}
			if tc.slice != nil {
				objs = append(objs, tc.slice)
			}
			p, _, dyn := targetPlatform(t, cfg, objs...)
			_, err := p.Up(context.Background())
			if err == nil || !strings.Contains(err.Error(), "no ready endpoint") || !strings.Contains(err.Error(), "prometheus") {
				t.Fatalf("Up: %v, want the Prometheus Service's missing ready endpoint", err)
			}
			if got := dynNames(t, dyn, gvrSO, testNS); len(got) != 0 {
				t.Errorf("ScaledObjects applied %v before Prometheus was routable", got)
			}
		})
	}
}

// endpointSlice is the EndpointSlice of Service name with one endpoint.
func endpointSlice(ns, name string, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-abcde", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
}

// lastApplied is "resource/name" of the last server-side apply on dyn.
func lastApplied(dyn *dynamicfake.FakeDynamicClient) string {
	last := ""
	for _, a := range dyn.Actions() {
		if pa, ok := a.(k8stesting.PatchActionImpl); ok && pa.GetPatchType() == types.ApplyPatchType {
			last = pa.GetResource().Resource + "/" + pa.GetName()
		}
	}
	return last
}

// TestUpTargetAdopted: an adopted target gets only the two roles; Up
// neither creates nor Down deletes its namespace or anything of the user's.
func TestUpTargetAdopted(t *testing.T) {
	dir := t.TempDir()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}
	cfg := Config{Kubeconfig: kubeconfigFor(t), Profile: "quick", Image: testImg,
		Target: &platform.TargetSpec{Kind: render.KindKEDA, Adopt: &platform.Adopt{Namespace: "theirs", Deployment: "api",
			ScaledObject: "api-so", LoadURL: "http://127.0.0.1:18080/"}}}
	p, kc, dyn := targetPlatform(t, cfg, ns, readyDeployment("theirs", "api"))
	if p.Namespace() != "theirs" {
		t.Fatalf("namespace %q, want the adopted one", p.Namespace())
	}
	ep, err := p.Up(context.Background())
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	ref := ep.Target
	want := platform.TargetRef{Kind: render.KindKEDA, Workload: render.WorkloadWorker, Namespace: "theirs", Deployment: "api",
		HPA: "keda-hpa-api-so", ScaledObject: "api-so", LoadURL: "http://127.0.0.1:18080",
		Kubeconfig: ref.Kubeconfig, AdminKubeconfig: ref.AdminKubeconfig, ViewerKubeconfig: ref.ViewerKubeconfig}
	if *ref != want {
		t.Errorf("TargetRef\n %+v\nwant\n %+v", *ref, want)
	}
	secrets := checkKubeconfigs(t, ref, dir)
	if got := dynNames(t, dyn, gvrDeploy, "theirs"); len(got) != 0 {
		t.Errorf("deployments applied in an adopted namespace: %v", got)
	}
	if got := dynNames(t, dyn, gvrRB, "theirs"); !slices.Equal(got, []string{deploykube.TargetAdminName, deploykube.TargetViewerName}) {
		t.Errorf("role bindings %v, want the two roles'", got)
	}
	for _, a := range dyn.Actions() {
		if a.GetResource().Resource == "namespaces" {
			t.Errorf("adopt mode touched the namespace: %s", a.GetVerb())
		}
	}

	kc.ClearActions()
	if err := p.Down(context.Background()); err != nil {
		t.Fatalf("Down: %v", err)
	}
	if _, err := os.Stat(secrets); !os.IsNotExist(err) {
		t.Errorf("kubeconfig folder after Down: %v, want it removed", err)
	}
	if _, err := kc.CoreV1().Namespaces().Get(context.Background(), "theirs", metav1.GetOptions{}); err != nil {
		t.Errorf("adopted namespace after Down: %v, want it kept", err)
	}
	if _, err := kc.AppsV1().Deployments("theirs").Get(context.Background(), "api", metav1.GetOptions{}); err != nil {
		t.Errorf("adopted Deployment after Down: %v, want it kept", err)
	}
	var deleted []string
	for _, a := range kc.Actions() {
		if a.GetVerb() == "delete" {
			deleted = append(deleted, a.GetResource().Resource+"/"+a.(k8stesting.DeleteAction).GetName())
		}
	}
	slices.Sort(deleted)
	wantDel := []string{"rolebindings/" + deploykube.TargetAdminName, "rolebindings/" + deploykube.TargetViewerName,
		"roles/" + deploykube.TargetAdminName, "roles/" + deploykube.TargetViewerName,
		"serviceaccounts/" + deploykube.TargetAdminName, "serviceaccounts/" + deploykube.TargetViewerName}
	if !slices.Equal(deleted, wantDel) {
		t.Errorf("Down deleted %v, want only %v", deleted, wantDel)
	}
}

// TestUpTargetAdoptedNoNamespace: adopting a namespace that does not exist
// is an error naming it, and nothing is made.
func TestUpTargetAdoptedNoNamespace(t *testing.T) {
	cfg := Config{Kubeconfig: kubeconfigFor(t), Profile: "quick", Image: testImg,
		Target: &platform.TargetSpec{Kind: render.KindHPA, Adopt: &platform.Adopt{Namespace: "ghost", Deployment: "api", HPA: "api", LoadURL: "http://127.0.0.1:1"}}}
	p, _, dyn := targetPlatform(t, cfg)
	if _, err := p.Up(context.Background()); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Errorf("Up = %v, want an error naming the namespace", err)
	}
	if n := len(dyn.Actions()); n != 0 {
		t.Errorf("%d objects applied", n)
	}
}

func TestNewTargetBadInput(t *testing.T) {
	kc := kubeconfigFor(t)
	good := Config{Kubeconfig: kc, Profile: "quick", Image: testImg, PrometheusImage: promImg,
		Target: &platform.TargetSpec{Kind: render.KindKEDA, Workload: render.WorkloadQueue}, NodeHost: "127.0.0.1", TargetHostPort: 1, PrometheusHostPort: 2}
	adopt := func(c *Config) *platform.Adopt {
		c.Target = &platform.TargetSpec{Kind: render.KindHPA, Adopt: &platform.Adopt{Namespace: "n", Deployment: "d", HPA: "h", LoadURL: "http://127.0.0.1:8080"}}
		return c.Target.Adopt
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"kind", func(c *Config) { c.Target = &platform.TargetSpec{Kind: "vpa", Workload: "worker"} }, `target "vpa"`},
		{"workload", func(c *Config) { c.Target = &platform.TargetSpec{Kind: "hpa", Workload: "batch"} }, `workload "batch"`},
		{"keda without prometheus image", func(c *Config) { c.PrometheusImage = "" }, "prometheus"},
		{"no target port", func(c *Config) { c.TargetHostPort = 0 }, "target host port"},
		{"no prometheus port", func(c *Config) { c.PrometheusHostPort = 0 }, "prometheus host port"},
		{"non-loopback node", func(c *Config) { c.NodeHost = "10.1.1.1" }, "loopback"},
		{"latest", func(c *Config) { c.Image = "scaleproof.local/scaleproof-ref:latest" }, "never :latest"},
		{"adopt no deployment", func(c *Config) { adopt(c).Deployment = "" }, "deployment"},
		{"adopt hpa without hpa", func(c *Config) { adopt(c).HPA = "" }, "HorizontalPodAutoscaler"},
		{"adopt keda without scaledobject", func(c *Config) { adopt(c); c.Target.Kind = "keda" }, "ScaledObject"},
		{"adopt remote load", func(c *Config) { adopt(c).LoadURL = "http://10.0.0.5:80" }, "loopback"},
		{"adopt load not a URL", func(c *Config) { adopt(c).LoadURL = "api:80" }, "--load-url"},
		{"adopt no load URL", func(c *Config) { adopt(c).LoadURL = "" }, "--load-url: needed when adopting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error naming %q", err, tc.want)
			}
		})
	}
	if _, err := New(good); err != nil {
		t.Errorf("New(good) = %v", err)
	}
	c := good
	adopt(&c)
	if p, err := New(c); err != nil || p.Namespace() != "n" {
		t.Errorf("New(adopt) = %v; the namespace must be the adopted one", err)
	}
	// A target run has no group: the console's keys are not made.
	c = good
	c.Group = ""
	if _, err := New(c); err != nil {
		t.Errorf("New(target, no group) = %v", err)
	}
}
