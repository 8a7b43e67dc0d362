package kubeapply

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}}
	if ns != "" {
		u.SetNamespace(ns)
	}
	return u
}

func TestApply(t *testing.T) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	objs := []*unstructured.Unstructured{obj("v1", "Namespace", "", "keda"), obj("apps/v1", "Deployment", "keda", "keda-operator")}

	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	var got []string
	fail := ""
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchActionImpl)
		if p.GetName() == fail {
			return true, nil, errors.New("admission webhook denied")
		}
		force := p.GetPatchOptions().Force
		got = append(got, p.GetResource().Resource+" "+p.GetNamespace()+"/"+p.GetName()+" "+string(p.GetPatchType())+" "+p.GetPatchOptions().FieldManager+" "+map[bool]string{true: "force", false: ""}[force != nil && *force])
		return true, objs[0], nil
	})
	if err := Apply(context.Background(), dyn, m, "me", objs); err != nil {
		t.Fatal(err)
	}
	want := []string{"namespaces /keda application/apply-patch+yaml me force", "deployments keda/keda-operator application/apply-patch+yaml me force"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("applied\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	fail = "keda-operator"
	if err := Apply(context.Background(), dyn, m, "me", objs); err == nil || !strings.Contains(err.Error(), "Deployment keda/keda-operator") || !strings.Contains(err.Error(), "denied") {
		t.Errorf("failed apply: err %v, want one naming the Deployment and the API's error", err)
	}
	if err := Apply(context.Background(), dyn, m, "me", []*unstructured.Unstructured{obj("x.io/v1", "Widget", "", "w")}); err == nil || !strings.Contains(err.Error(), "Widget w") {
		t.Errorf("unknown kind: err %v, want one naming it", err)
	}
}

func TestRolledOut(t *testing.T) {
	two := int32(2)
	for _, tc := range []struct {
		name string
		d    appsv1.Deployment
		want bool
		has  string
	}{
		{"default one replica, ready", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}}, true, "ready 1, replicas 1 of 1"},
		{"not ready", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "no"}}}},
			false, "Available=False MinimumReplicasUnavailable: no"},
		{"new spec not seen", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}}, false, "observed generation 1/2"},
		{"old pod left", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.DeploymentSpec{Replicas: &two},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 2, ReadyReplicas: 2}}, false, "replicas 3 of 2"},
	} {
		ok, s := RolledOut(&tc.d)
		if ok != tc.want || !strings.Contains(s, tc.has) {
			t.Errorf("%s: %v %q, want %v and %q", tc.name, ok, s, tc.want, tc.has)
		}
	}
}
