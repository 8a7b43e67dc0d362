package kubeconfig

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// The fault actions of the kubeconfig platform: the console's restart, as
// a pod of a Deployment is restarted (its pod deleted: preStop, SIGTERM and
// the console's drain; the ReplicaSet starts another, which takes the
// Lease and reads the state the console keeps in the cluster), and the
// listing of a zone's workers (workers.go). The other worker actions need
// the node's process table or a probe the harness does not own, and are
// not offered.
var (
	_ platform.Faulter = (*Platform)(nil)
	_ platform.Offerer = (*Platform)(nil)
)

const workerActionsReason = "on Kubernetes the harness restarts only the console's pod and lists the workers; freezing, killing or failing the probe of a worker needs the node's processes"

// Offers says whether action is offered: the listing of a zone's workers
// (not in a target run), and the console's restart only when the console
// is reached through the node's ports (NodeHost, kind), where its Service
// leads to the new pod; a port-forward ends with the pod it was opened to,
// and a target run deploys no console.
func (p *Platform) Offers(action string) error {
	if action == listWorkersAction {
		return p.workersOffered()
	}
	if action != platform.RestartAction(platform.PartConsole) {
		return p.notOffered(action, workerActionsReason)
	}
	switch {
	case p.cfg.Target != nil:
		return p.notOffered(action, "a target run deploys no console")
	case p.cfg.NodeHost == "":
		return p.notOffered(action, "the console is reached through a port-forward to one pod, which its restart ends")
	}
	return nil
}

func (p *Platform) notOffered(action, reason string) error {
	return &platform.NotOfferedError{Platform: p.cfg.Name, Action: action, Reason: reason}
}

// Restart restarts the console: it deletes the console Deployment's pods
// (graceful: the pod's preStop and the console's drain run), waits until
// none of them is left and a new one is ready, then until the console's
// /readyz answers 200 through the node's port. Bounded by RolloutTimeout.
func (p *Platform) Restart(ctx context.Context, part platform.Part) error {
	if err := p.Offers(platform.RestartAction(part)); err != nil {
		return err
	}
	ns := p.cfg.Namespace
	d, err := p.kc.AppsV1().Deployments(ns).Get(ctx, deploykube.ConsoleName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("platform %s: restart the console: %w", p.cfg.Name, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("platform %s: restart the console: deployment %s: %w", p.cfg.Name, d.Name, err)
	}
	pods := p.kc.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return fmt.Errorf("platform %s: restart the console: %w", p.cfg.Name, err)
	}
	old := map[string]bool{}
	for _, pod := range list.Items {
		if pod.DeletionTimestamp != nil {
			continue
		}
		old[pod.Name] = true
		if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("platform %s: restart the console: delete pod %s: %w", p.cfg.Name, pod.Name, err)
		}
	}
	if len(old) == 0 {
		return fmt.Errorf("platform %s: restart the console: no console pod (selector %s) in %s", p.cfg.Name, sel, ns)
	}
	p.log.Info("console pods deleted", "pods", len(old))
	var last string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, p.cfg.RolloutTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var left, ready []string
		for _, pod := range l.Items {
			switch {
			case old[pod.Name]:
				left = append(left, pod.Name)
			case pod.DeletionTimestamp == nil && podReady(&pod):
				ready = append(ready, pod.Name)
			}
		}
		last = fmt.Sprintf("old pods left: %s; new pods ready: %s", orNone(left), orNone(ready))
		return len(left) == 0 && len(ready) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("platform %s: restart the console within %s: %s (%w)", p.cfg.Name, p.cfg.RolloutTimeout, last, err)
	}
	p.mu.Lock()
	url := p.endpoints.ConsoleURL
	p.mu.Unlock()
	if err := serve.WaitOK(ctx, url+"/readyz", p.cfg.RolloutTimeout, nil); err != nil {
		return fmt.Errorf("platform %s: restart the console: %w", p.cfg.Name, err)
	}
	return nil
}

// podReady is the pod's Ready condition (the one a Service's endpoints follow).
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Freeze is not offered (a *NotOfferedError).
func (p *Platform) Freeze(context.Context, string, string, string) error {
	return p.notOffered("freeze a worker", workerActionsReason)
}

// Thaw is not offered (a *NotOfferedError).
func (p *Platform) Thaw(context.Context, string, string, string) error {
	return p.notOffered("thaw a worker", workerActionsReason)
}

// Kill is not offered (a *NotOfferedError).
func (p *Platform) Kill(context.Context, string, string, string) error {
	return p.notOffered("kill a worker", workerActionsReason)
}

// FailReadiness is not offered (a *NotOfferedError).
func (p *Platform) FailReadiness(context.Context, string, string, string) (platform.Readiness, error) {
	return platform.Readiness{}, p.notOffered("fail a worker's readiness", workerActionsReason)
}

// PassReadiness is not offered (a *NotOfferedError).
func (p *Platform) PassReadiness(context.Context, string, string, string) error {
	return p.notOffered("pass a worker's readiness again", workerActionsReason)
}
