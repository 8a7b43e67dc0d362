package kube_test

import (
	"context"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleproof/scaleproof/autoscaler/controller/kube"
)

func workerTemplate() *corev1.PodTemplate {
	return &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "scaleproof-worker", Namespace: ns},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{
				Labels:      map[string]string{"app.kubernetes.io/name": "scaleproof", kube.LabelComponent: kube.ComponentWorker},
				Annotations: map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "scaleproof.local/scaleproof-ref:t"}}},
		},
	}
}

// TestScaleCreatesZoneWorkers: the first scale of a zone the API just
// created makes its Deployment and headless Service from the template.
func TestScaleCreatesZoneWorkers(t *testing.T) {
	c := newClient(workerTemplate())
	tg := kube.New(c, ns, kube.WithWorkerTemplate("scaleproof-worker"))
	ctx := context.Background()
	if err := tg.Scale(ctx, "g1", "fresh", 1, nil); err != nil {
		t.Fatal(err)
	}
	d, err := c.AppsV1().Deployments(ns).Get(ctx, "worker-g1-fresh", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pl := d.Spec.Template.Labels
	if *d.Spec.Replicas != 1 || d.Labels[kube.LabelGroup] != "g1" || pl[kube.LabelZone] != "fresh" || pl[kube.LabelComponent] != kube.ComponentWorker ||
		d.Spec.Template.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] != "false" ||
		d.Spec.Template.Spec.Containers[0].Image != "scaleproof.local/scaleproof-ref:t" ||
		d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("deployment = %+v", d)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if pl[k] != v {
			t.Errorf("selector %s=%s does not match the pod labels %v", k, v, pl)
		}
	}
	s, err := c.CoreV1().Services(ns).Get(ctx, "worker-g1-fresh", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.ClusterIP != corev1.ClusterIPNone || s.Spec.Ports[0].Name != kube.PortName || s.Labels[kube.LabelZone] != "fresh" ||
		s.Labels[kube.LabelComponent] != kube.ComponentWorker {
		t.Errorf("service = %+v", s)
	}
	// The next scale goes through the scale subresource of what exists.
	if err := tg.Scale(ctx, "g1", "fresh", 3, nil); err != nil {
		t.Fatal(err)
	}
	if d, _ := c.AppsV1().Deployments(ns).Get(ctx, "worker-g1-fresh", metav1.GetOptions{}); *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %d, want 3", *d.Spec.Replicas)
	}

	// Without a template a missing Deployment stays an error.
	if err := kube.New(c, ns).Scale(ctx, "g1", "other", 1, nil); err == nil {
		t.Error("scale of a missing deployment without a template succeeded")
	}
	// A template that does not exist is an error naming it.
	if err := kube.New(c, ns, kube.WithWorkerTemplate("nope")).Scale(ctx, "g1", "other", 1, nil); err == nil {
		t.Error("scale with a missing template succeeded")
	}
}

func TestRemoveWorkerHPAs(t *testing.T) {
	hpa := func(name, kind, target string) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: target}}}
	}
	other := deployment("g1", "a", 1)
	other.Name, other.Labels = "frontend", map[string]string{"app": "frontend"}
	c := newClient(deployment("g1", "a", 2), other,
		hpa("old-release", "Deployment", "worker-g1-a"),
		hpa("frontend", "Deployment", "frontend"),
		hpa("sts", "StatefulSet", "worker-g1-a"),
		hpa("dangling", "Deployment", "gone"))
	ctx := context.Background()
	got, err := kube.New(c, ns).RemoveWorkerHPAs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (kube.RemovedHPA{Name: "old-release", Deployment: "worker-g1-a", Group: "g1", Zone: "a"}) {
		t.Errorf("removed %+v, want only old-release", got)
	}
	left, _ := c.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	if len(left.Items) != 3 {
		t.Errorf("%d HPAs left, want 3 (frontend, sts, dangling)", len(left.Items))
	}
	if again, err := kube.New(c, ns).RemoveWorkerHPAs(ctx); err != nil || len(again) != 0 {
		t.Errorf("second sweep: %+v %v", again, err)
	}
}
