package kube

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Fakes shared by the hpa and keda tests: a Deployment, an HPA, Events, and
// clientsets whose deployments/scale subresource updates the Deployment as
// the API server does (the fake tracker does not).

const ns = "sp-1"

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func deployment(name string, replicas, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr(replicas)},
		Status:     appsv1.DeploymentStatus{ReadyReplicas: ready},
	}
}

func hpaObject(name, deploy string, min *int32, max, desired int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior, metrics ...autoscalingv2.MetricStatus) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: deploy},
			MinReplicas:    min, MaxReplicas: max, Behavior: b,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{DesiredReplicas: desired, CurrentMetrics: metrics},
	}
}

func cpuAt(pct int32) autoscalingv2.MetricStatus {
	return autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(pct), AverageValue: ptr(resource.MustParse("150m"))}}}
}

func externalAt(q string) autoscalingv2.MetricStatus {
	return autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType,
		External: &autoscalingv2.ExternalMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "s0-prometheus"},
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptr(resource.MustParse(q))}}}
}

// event is an Event about kind/name at first..last, count n.
func event(id, kind, name, reason, msg string, first, last time.Time, n int32) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: id, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: ns},
		Reason:         reason, Message: msg, Count: n,
		FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(last),
	}
}

// withScale makes cs's deployments/scale updates set the Deployment's
// spec.replicas.
func withScale(t *testing.T, cs *fake.Clientset) *fake.Clientset {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	cs.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u, ok := a.(k8stesting.UpdateAction)
		if !ok || a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		s := u.GetObject().(*autoscalingv1.Scale)
		o, err := cs.Tracker().Get(gvr, a.GetNamespace(), s.Name)
		if err != nil {
			return true, nil, err
		}
		d := o.(*appsv1.Deployment).DeepCopy()
		d.Spec.Replicas = ptr(s.Spec.Replicas)
		if err := cs.Tracker().Update(gvr, d, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, s, nil
	})
	return cs
}

// refuse makes every verb on resource of cs answer err.
func refuse(cs *fake.Clientset, verb, resource string, err error) *fake.Clientset {
	cs.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
	return cs
}

var (
	hpaGR  = schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}
	soGR   = schema.GroupResource{Group: "keda.sh", Resource: "scaledobjects"}
	depGR  = schema.GroupResource{Group: "apps", Resource: "deployments"}
	errNet = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
)

func forbidden(gr schema.GroupResource, name string) error {
	return apierrors.NewForbidden(gr, name, errors.New(`User "system:serviceaccount:sp-1:viewer" cannot patch resource`))
}

func invalid(kind, name string) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: kind}, name,
		field.ErrorList{field.Invalid(field.NewPath("spec", "maxReplicas"), 1, "must be greater than or equal to minReplicas")})
}
