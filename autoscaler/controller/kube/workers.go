package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
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
	if replicas > 0 {
		return t.ensureCanary(ctx, group, zone, dep)
	}
	return nil
}

// CanaryVersion is the --version a canary worker runs with.
const CanaryVersion = "canary"

// WithCanary makes Scale run a canary beside each zone's workers: a
// Deployment of one replica (CanaryName), made from the zone's worker
// Deployment's pod template with LabelTrack=TrackCanary and the worker's
// --version=canary, created when the zone is first scaled to one or more
// (and, for a zone made before, at its next scale). Its pods carry the
// zone's labels, so the zone's Service lists them and the edge routes to
// them like any worker; Scale never changes its replicas, never marks its
// pod as a victim and never deletes it (Ramen 0.7.5: "The canary counts as
// capacity"; the count is the stable workers).
func WithCanary() Option { return func(t *Target) { t.canary = true } }

// CanaryName returns the name of group × zone's canary Deployment:
// DeploymentName with "-canary", or, when that would pass 63 characters,
// the name cut to fit with "-canary" (DeploymentName's hash keeps distinct
// zones distinct only when the plain name fits; a cut name ends in the same
// hash as DeploymentName's hashed form).
func CanaryName(group, zone string) (string, error) {
	name, err := DeploymentName(group, zone)
	if err != nil {
		return "", err
	}
	const suffix = "-" + TrackCanary
	if len(name)+len(suffix) > validation.DNS1123LabelMaxLength {
		sum := sha256.Sum256([]byte(group + "\x00" + zone))
		h := "-" + hex.EncodeToString(sum[:])[:hashLen]
		base := name[:validation.DNS1123LabelMaxLength-len(suffix)-len(h)]
		name = strings.TrimRight(base, "-") + h
	}
	return name + suffix, nil
}

// ensureCanary creates the zone's canary Deployment from dep's pod template
// when WithCanary is on and it does not exist yet.
func (t *Target) ensureCanary(ctx context.Context, group, zone string, dep *appsv1.Deployment) error {
	if !t.canary {
		return nil
	}
	name, err := CanaryName(group, zone)
	if err != nil {
		return err
	}
	got, err := t.client.AppsV1().Deployments(t.ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		if err := checkLabels(got.Labels, group, zone); err != nil {
			return fmt.Errorf("kube: canary deployment %s/%s: %w", t.ns, name, err)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("kube: get canary deployment %s/%s: %w", t.ns, name, err)
	}
	sel := map[string]string{}
	if dep.Spec.Selector != nil {
		maps.Copy(sel, dep.Spec.Selector.MatchLabels)
	}
	sel[LabelGroup], sel[LabelZone], sel[LabelTrack] = group, zone, TrackCanary
	tmpl := *dep.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	maps.Copy(tmpl.Labels, sel)
	delete(tmpl.Labels, "pod-template-hash")
	setVersionArg(&tmpl.Spec, CanaryVersion)
	labels := maps.Clone(dep.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelTrack] = TrackCanary
	one, hist := int32(1), int32(1)
	zero, surge := intstr.FromInt32(0), intstr.FromInt32(1)
	c := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.ns, Labels: labels,
			Annotations: map[string]string{"scaleproof.dev/created-by": "console"}},
		Spec: appsv1.DeploymentSpec{
			Replicas:             &one,
			Selector:             &metav1.LabelSelector{MatchLabels: sel},
			Template:             tmpl,
			RevisionHistoryLimit: &hist,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &surge}},
		},
	}
	if _, err := t.client.AppsV1().Deployments(t.ns).Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kube: create canary deployment %s/%s: %w", t.ns, name, err)
	}
	t.log.Info("canary deployment created", "group", group, "zone", zone, "deployment", name, "version", CanaryVersion)
	return nil
}

// setVersionArg sets --version=v on the worker container (named "worker",
// else the first), replacing a --version it already has.
func setVersionArg(spec *corev1.PodSpec, v string) {
	if len(spec.Containers) == 0 {
		return
	}
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == "worker" })
	if i < 0 {
		i = 0
	}
	args := slices.DeleteFunc(slices.Clone(spec.Containers[i].Args), func(a string) bool {
		return a == "--version" || strings.HasPrefix(a, "--version=")
	})
	spec.Containers[i].Args = append(args, "--version="+v)
}
