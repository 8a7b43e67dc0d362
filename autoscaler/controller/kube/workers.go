package kube

import (
	"context"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// WorkerPort is the workers' container port, named PortName.
const WorkerPort = 8080

// WithWorkerTemplate makes Scale create a group × zone's worker Deployment
// and its headless Service when they do not exist yet (a zone created
// through the console API while a scenario runs), from the PodTemplate
// named template in the namespace: its pod labels, annotations and spec are
// copied, and the group and zone labels are added.
func WithWorkerTemplate(template string) Option {
	return func(t *Target) { t.template = template }
}

// createWorkers creates the zone's Deployment (at replicas) and Service.
func (t *Target) createWorkers(ctx context.Context, group, zone, name string, replicas int) error {
	pt, err := t.client.CoreV1().PodTemplates(t.ns).Get(ctx, t.template, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kube: get worker template %s/%s: %w", t.ns, t.template, err)
	}
	sel := map[string]string{
		"app.kubernetes.io/name": "scaleproof", LabelComponent: ComponentWorker,
		LabelGroup: group, LabelZone: zone,
	}
	podLabels := maps.Clone(pt.Template.Labels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	maps.Copy(podLabels, sel)
	tmpl := *pt.Template.DeepCopy()
	tmpl.Labels = podLabels
	r := int32(replicas)
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	hist := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.ns, Labels: maps.Clone(sel),
			Annotations: map[string]string{"scaleproof.dev/created-by": "console"}},
		Spec: appsv1.DeploymentSpec{
			Replicas:             &r,
			Selector:             &metav1.LabelSelector{MatchLabels: maps.Clone(sel)},
			Template:             tmpl,
			RevisionHistoryLimit: &hist,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &one}},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.ns, Labels: maps.Clone(sel)},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  maps.Clone(sel),
			Ports: []corev1.ServicePort{{Name: PortName, Port: WorkerPort, TargetPort: intstr.FromString(PortName),
				Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := t.client.CoreV1().Services(t.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kube: create worker service %s/%s: %w", t.ns, name, err)
	}
	if _, err := t.client.AppsV1().Deployments(t.ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return errAlreadyExists
		}
		return fmt.Errorf("kube: create worker deployment %s/%s: %w", t.ns, name, err)
	}
	t.log.Info("worker deployment created", "group", group, "zone", zone, "deployment", name, "replicas", replicas)
	return nil
}
