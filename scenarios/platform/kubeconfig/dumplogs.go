package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// maxLogBytes caps one container's log in the artifacts.
const maxLogBytes = 16 << 20

// DumpLogs writes into dir/kube: each container's log as
// <pod>_<container>.log (and .previous.log after a restart), the
// namespace's events oldest first as events.txt, and the pods as
// pods.yaml. It goes on past a failed pod and returns every error.
func (p *Platform) DumpLogs(ctx context.Context, dir string) error {
	out := filepath.Join(dir, "kube")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	ns := p.cfg.Namespace
	var errs []error
	pods, err := p.kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("platform kubeconfig: list pods in %s: %w", ns, err)
	}
	for _, po := range pods.Items {
		for _, cs := range po.Status.ContainerStatuses {
			errs = append(errs, p.dumpLog(ctx, out, po.Name, cs.Name, false))
			if cs.RestartCount > 0 {
				errs = append(errs, p.dumpLog(ctx, out, po.Name, cs.Name, true))
			}
		}
	}
	if b, err := yaml.Marshal(pods.Items); err == nil {
		errs = append(errs, os.WriteFile(filepath.Join(out, "pods.yaml"), b, 0o644))
	}
	evs, err := p.kc.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, fmt.Errorf("platform kubeconfig: list events in %s: %w", ns, err))
	} else {
		items := evs.Items
		sort.SliceStable(items, func(i, j int) bool { return evTime(items[i]).Time.Before(evTime(items[j]).Time) })
		var b strings.Builder
		for _, e := range items {
			fmt.Fprintf(&b, "%s %s %s/%s %s: %s (x%d)\n", evTime(e).UTC().Format("15:04:05.000"), e.Type,
				e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, strings.TrimSpace(e.Message), max(e.Count, 1))
		}
		errs = append(errs, os.WriteFile(filepath.Join(out, "events.txt"), []byte(b.String()), 0o644))
	}
	return errors.Join(errs...)
}

func evTime(e corev1.Event) metav1.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.NewTime(e.EventTime.Time)
	default:
		return e.CreationTimestamp
	}
}

func (p *Platform) dumpLog(ctx context.Context, dir, pod, container string, previous bool) error {
	limit := int64(maxLogBytes)
	rc, err := p.kc.CoreV1().Pods(p.cfg.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		return fmt.Errorf("platform kubeconfig: logs of %s/%s: %w", pod, container, err)
	}
	defer rc.Close()
	name := pod + "_" + container
	if previous {
		name += ".previous"
	}
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rc)
	return errors.Join(err, f.Close())
}
