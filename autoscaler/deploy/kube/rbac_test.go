package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/yaml"

	ctrlkube "github.com/scaleproof/scaleproof/autoscaler/controller/kube"
	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

const (
	ns   = "scaleproof"
	name = "scaleproof-console"
)

type manifests struct {
	sa       []corev1.ServiceAccount
	roles    []rbacv1.Role
	bindings []rbacv1.RoleBinding
}

// parse splits rbac.yaml into its documents and decodes each, strictly, by
// kind; any other kind (a ClusterRole above all) fails the test.
func parse(t *testing.T) manifests {
	t.Helper()
	var m manifests
	for i, doc := range bytes.Split(deploykube.RBAC, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var err error
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ServiceAccount":
			var o corev1.ServiceAccount
			err = yaml.UnmarshalStrict(doc, &o)
			m.sa = append(m.sa, o)
		case "rbac.authorization.k8s.io/v1 Role":
			var o rbacv1.Role
			err = yaml.UnmarshalStrict(doc, &o)
			m.roles = append(m.roles, o)
		case "rbac.authorization.k8s.io/v1 RoleBinding":
			var o rbacv1.RoleBinding
			err = yaml.UnmarshalStrict(doc, &o)
			m.bindings = append(m.bindings, o)
		default:
			t.Fatalf("document %d: unexpected %q %q", i, tm.APIVersion, tm.Kind)
		}
		if err != nil {
			t.Fatalf("document %d (%s): %v", i, tm.Kind, err)
		}
	}
	if len(m.sa) != 1 || len(m.roles) != 1 || len(m.bindings) != 1 {
		t.Fatalf("want one ServiceAccount, Role and RoleBinding; got %d, %d, %d", len(m.sa), len(m.roles), len(m.bindings))
	}
	return m
}

// permission is one (API group, resource[/subresource], verb) the Role grants.
type permission struct{ group, resource, verb string }

func (p permission) String() string {
	g := p.group
	if g == "" {
		g = "core"
	}
	return fmt.Sprintf("%s %s/%s", p.verb, g, p.resource)
}

// grants expands the Role's rules into single permissions.
func grants(t *testing.T, r rbacv1.Role) map[permission]bool {
	t.Helper()
	out := map[permission]bool{}
	for i, rule := range r.Rules {
		if len(rule.ResourceNames) > 0 || len(rule.NonResourceURLs) > 0 {
			t.Errorf("rule %d: resourceNames/nonResourceURLs are not expected: %+v", i, rule)
		}
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					for _, s := range []string{g, res, v} {
						if strings.Contains(s, "*") {
							t.Errorf("rule %d: wildcard %q", i, s)
						}
					}
					out[permission{g, res, v}] = true
				}
			}
		}
	}
	return out
}

func TestRBACObjects(t *testing.T) {
	m := parse(t)
	sa, role, rb := m.sa[0], m.roles[0], m.bindings[0]
	for _, om := range []metav1.ObjectMeta{sa.ObjectMeta, role.ObjectMeta, rb.ObjectMeta} {
		if om.Name != name || om.Namespace != ns {
			t.Errorf("object %s/%s, want %s/%s", om.Namespace, om.Name, ns, name)
		}
	}
	wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
	if rb.RoleRef != wantRef {
		t.Errorf("roleRef = %+v, want %+v", rb.RoleRef, wantRef)
	}
	wantSubj := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}
	if !slices.Equal(rb.Subjects, wantSubj) {
		t.Errorf("subjects = %+v, want %+v", rb.Subjects, wantSubj)
	}
}

func TestRoleIsExactly(t *testing.T) {
	want := map[permission]bool{}
	for _, p := range []struct {
		group, resource string
		verbs           []string
	}{
		{"apps", "deployments/scale", []string{"get", "update"}},
		{"apps", "deployments", []string{"get", "create"}},
		{"", "services", []string{"create"}},
		{"", "podtemplates", []string{"get"}},
		{"", "configmaps", []string{"get", "watch", "create", "update"}},
		{"coordination.k8s.io", "leases", []string{"get", "create", "update"}},
		{"autoscaling", "horizontalpodautoscalers", []string{"list", "delete"}},
		{"", "pods", []string{"get", "patch"}},
		{"discovery.k8s.io", "endpointslices", []string{"list"}},
	} {
		for _, v := range p.verbs {
			want[permission{p.group, p.resource, v}] = true
		}
	}
	got := grants(t, parse(t).roles[0])
	for p := range got {
		if !want[p] {
			t.Errorf("the Role grants %s, which the console does not need", p)
		}
	}
	for p := range want {
		if !got[p] {
			t.Errorf("the Role does not grant %s", p)
		}
	}
	if t.Failed() {
		t.Logf("granted: %v", sorted(got))
	}
}

// TestRoleCoversTarget runs every operation the console makes in the
// cluster (the ScaleTarget and Discovery, worker creation from the
// template, the HPA sweep, the ConfigMap state, the Lease) against a fake
// clientset and checks that the Role allows each API call made, and that
// every permission the Role grants was used.
func TestRoleCoversTarget(t *testing.T) {
	replicas := int32(3)
	labels := map[string]string{ctrlkube.LabelGroup: "g1", ctrlkube.LabelZone: "a", ctrlkube.LabelComponent: ctrlkube.ComponentWorker}
	svc := maps.Clone(labels)
	svc[discoveryv1.LabelServiceName] = "worker-g1-a"
	port, portName := int32(8080), ctrlkube.PortName
	c := fake.NewClientset(
		&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: deploykube.WorkerTemplateName, Namespace: ns},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker"}}}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "worker-g1-a", Namespace: ns, Labels: labels},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: ns, UID: "u1", Labels: labels}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s1", Namespace: ns, Labels: svc},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "p1", UID: "u1"}}}},
	)
	scale := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "worker-g1-a", Namespace: ns},
			Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}, nil
	}
	c.PrependReactor("get", "deployments", scale)
	c.PrependReactor("update", "deployments", scale)

	ctx := context.Background()
	tg := ctrlkube.New(c, ns)
	if err := tg.Scale(ctx, "g1", "a", 2, []string{"p1"}); err != nil {
		t.Fatal(err)
	}
	if err := tg.Scale(ctx, "g1", "a", 4, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Endpoints(ctx, "g1", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrlkube.New(c, ns).Zones(ctx); err != nil {
		t.Fatal(err)
	}
	// A zone created through the API: its workers come from the template.
	withTemplate := ctrlkube.New(c, ns, ctrlkube.WithWorkerTemplate(deploykube.WorkerTemplateName))
	if err := withTemplate.Scale(ctx, "g1", "fresh", 1, nil); err != nil {
		t.Fatal(err)
	}
	// The HPA sweep.
	if err := c.Tracker().Add(&autoscalingv2.HorizontalPodAutoscaler{ // set up behind the API: not a console call
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "worker-g1-a"}},
	}); err != nil {
		t.Fatal(err)
	}
	if removed, err := tg.RemoveWorkerHPAs(ctx); err != nil || len(removed) != 1 {
		t.Fatalf("hpa sweep: %v %v", removed, err)
	}
	// The state: open (create), write, watch.
	st, err := ctrlkube.OpenConfigMapStore(ctx, c, ns, deploykube.StateConfigMapName, ctrlkube.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(nil, []store.AuditEntry{{Action: "x"}}); err != nil {
		t.Fatal(err)
	}
	watched := make(chan struct{})
	var once sync.Once
	c.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		once.Do(func() { close(watched) })
		return false, nil, nil
	})
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); st.Run(wctx, time.Minute, nil) }()
	select {
	case <-watched:
	case <-time.After(30 * time.Second):
		t.Error("the state store never watched its ConfigMap")
	}
	cancel()
	<-done
	// The Lease, as client-go's leader election uses it.
	lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Name: deploykube.LeaseName, Namespace: ns},
		Client: c.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: "pod-a"}}
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: "pod-a", LeaseDurationSeconds: 15}
	if _, _, err := lock.Get(ctx); err == nil {
		t.Fatal("lease exists before the first election")
	}
	if err := lock.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lock.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lock.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}

	allowed := grants(t, parse(t).roles[0])
	used := map[permission]bool{}
	for _, a := range c.Actions() {
		res := a.GetResource().Resource
		if s := a.GetSubresource(); s != "" {
			res += "/" + s
		}
		p := permission{a.GetResource().Group, res, a.GetVerb()}
		used[p] = true
		if a.GetNamespace() != ns {
			t.Errorf("%s outside namespace %s (%q)", p, ns, a.GetNamespace())
		}
		if !allowed[p] {
			t.Errorf("the target calls %s, which the Role does not allow", p)
		}
	}
	for p := range allowed {
		if !used[p] {
			t.Errorf("the Role grants %s, which no console operation used", p)
		}
	}
	t.Logf("calls made: %v", sorted(used))
}

func sorted(ps map[permission]bool) []permission {
	return slices.SortedFunc(maps.Keys(ps), func(a, b permission) int { return strings.Compare(a.String(), b.String()) })
}

// TestEdgeRoleIsExactly: the edge's Role (base/edge.yaml) grants what its
// discovery calls (Target.Zones) use, nothing more.
func TestEdgeRoleIsExactly(t *testing.T) {
	b, err := deploykube.Manifests.ReadFile("base/edge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.Role
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatal(err)
		}
		if tm.Kind == "Role" {
			role = &rbacv1.Role{}
			if err := yaml.UnmarshalStrict(doc, role); err != nil {
				t.Fatal(err)
			}
		}
	}
	if role == nil {
		t.Fatal("no Role in base/edge.yaml")
	}
	labels := map[string]string{ctrlkube.LabelGroup: "g1", ctrlkube.LabelZone: "a", ctrlkube.LabelComponent: ctrlkube.ComponentWorker}
	svc := maps.Clone(labels)
	svc[discoveryv1.LabelServiceName] = "worker-g1-a"
	port, portName := int32(8080), ctrlkube.PortName
	c := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: ns, UID: "u1", Labels: labels}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s1", Namespace: ns, Labels: svc},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "p1", UID: "u1"}}}},
	)
	zs, err := ctrlkube.New(c, ns).Zones(context.Background())
	if err != nil || len(zs) != 1 {
		t.Fatalf("Zones = %v, %v", zs, err)
	}
	allowed := grants(t, *role)
	used := map[permission]bool{}
	for _, a := range c.Actions() {
		p := permission{a.GetResource().Group, a.GetResource().Resource, a.GetVerb()}
		used[p] = true
		if !allowed[p] {
			t.Errorf("the edge calls %s, which its Role does not allow", p)
		}
	}
	for p := range allowed {
		if !used[p] {
			t.Errorf("the edge's Role grants %s, which its discovery does not use", p)
		}
	}
}
