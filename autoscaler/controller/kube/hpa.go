package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RemovedHPA is a HorizontalPodAutoscaler RemoveWorkerHPAs deleted.
type RemovedHPA struct {
	Name        string // the HPA
	Deployment  string // the worker Deployment it targeted
	Group, Zone string // that Deployment's group and zone
}

// RemoveWorkerHPAs deletes every HorizontalPodAutoscaler in the namespace
// whose scale target is a worker Deployment (component=worker with group
// and zone labels): the console owns the count, so an HPA left on a worker
// Deployment (by an older release, or by hand) would fight it. HPAs on
// other targets are left alone. It returns what it deleted.
func (t *Target) RemoveWorkerHPAs(ctx context.Context) ([]RemovedHPA, error) {
	list, err := t.client.AutoscalingV2().HorizontalPodAutoscalers(t.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube: list horizontalpodautoscalers in %s: %w", t.ns, err)
	}
	var out []RemovedHPA
	for _, h := range list.Items {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || (ref.APIVersion != "apps/v1" && ref.APIVersion != "") {
			continue
		}
		dep, err := t.client.AppsV1().Deployments(t.ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("kube: get deployment %s/%s of hpa %s: %w", t.ns, ref.Name, h.Name, err)
		}
		l := dep.Labels
		if l[LabelComponent] != ComponentWorker || l[LabelGroup] == "" || l[LabelZone] == "" {
			continue
		}
		err = t.client.AutoscalingV2().HorizontalPodAutoscalers(t.ns).Delete(ctx, h.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return out, fmt.Errorf("kube: delete hpa %s/%s on worker deployment %s: %w", t.ns, h.Name, ref.Name, err)
		}
		t.log.Warn("horizontalpodautoscaler on a worker deployment deleted: the console owns the count",
			"hpa", h.Name, "deployment", ref.Name, "group", l[LabelGroup], "zone", l[LabelZone])
		out = append(out, RemovedHPA{Name: h.Name, Deployment: ref.Name, Group: l[LabelGroup], Zone: l[LabelZone]})
	}
	return out, nil
}
