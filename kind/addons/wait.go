package addons

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/scaleproof/scaleproof/internal/kubeapply"
)

// Clock is the time Install polls on.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// The resources read through the dynamic client (no aggregator or metrics
// clientset is needed for two reads).
var (
	apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	nodeMetricsGVR = schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "nodes"}
)

// waiter polls conditions every interval until one shared deadline.
type waiter struct {
	clk      Clock
	interval time.Duration
	deadline time.Time
	timeout  time.Duration
}

// poll calls cond until it reports done, the deadline passes or ctx ends;
// cond's last status goes into the error. At most timeout/interval+1 calls.
func (w *waiter) poll(ctx context.Context, what string, cond func(ctx context.Context) (bool, string)) error {
	for {
		done, status := cond(ctx)
		if done {
			return nil
		}
		if !w.clk.Now().Before(w.deadline) {
			return fmt.Errorf("addons: %s: not ready within %s: %s", what, w.timeout, status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("addons: %s: %w (last: %s)", what, ctx.Err(), status)
		case <-w.clk.After(w.interval):
		}
	}
}

// rollout waits for the Deployment to roll out (kubeapply.RolledOut); the
// error adds its pods' waiting reasons (ErrImageNeverPull, CrashLoopBackOff...).
func (w *waiter) rollout(ctx context.Context, kc kubernetes.Interface, ns, name string) error {
	return w.poll(ctx, "rollout of Deployment "+ns+"/"+name, func(ctx context.Context) (bool, string) {
		d, err := kc.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not found"
		}
		if err != nil {
			return false, err.Error()
		}
		done, status := kubeapply.RolledOut(d)
		if !done {
			status += podsStatus(ctx, kc, ns, d.Spec.Selector)
		}
		return done, status
	})
}

// podsStatus describes the pods of selector that are not ready: phase and
// each container's waiting or terminated reason and message.
func podsStatus(ctx context.Context, kc kubernetes.Interface, ns string, sel *metav1.LabelSelector) string {
	if sel == nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return ""
	}
	pods, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: s.String()})
	if err != nil {
		return "; pods: " + err.Error()
	}
	var parts []string
	for _, p := range pods.Items {
		var why []string
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			switch {
			case cs.State.Waiting != nil:
				why = append(why, cs.Name+" waiting "+cs.State.Waiting.Reason+": "+cs.State.Waiting.Message)
			case cs.State.Terminated != nil:
				why = append(why, cs.Name+" terminated "+cs.State.Terminated.Reason+": "+cs.State.Terminated.Message)
			case !cs.Ready:
				why = append(why, cs.Name+" not ready (restarts "+fmt.Sprint(cs.RestartCount)+")")
			}
		}
		if len(why) == 0 && p.Status.Phase != corev1.PodRunning {
			why = append(why, string(p.Status.Phase)+" "+p.Status.Reason+" "+p.Status.Message)
			for _, c := range p.Status.Conditions {
				if c.Status != corev1.ConditionTrue && c.Message != "" {
					why = append(why, string(c.Type)+": "+c.Message)
				}
			}
		}
		if len(why) > 0 {
			parts = append(parts, p.Name+": "+strings.Join(why, ", "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; pods: " + strings.Join(parts, "; ")
}

// apiServiceStatus reads the APIService's Available condition: whether it
// is True, and "Available=STATUS REASON: MESSAGE" (or why it could not be read).
func apiServiceStatus(ctx context.Context, dyn dynamic.Interface, name string) (bool, string) {
	u, err := dyn.Resource(apiServicesGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "APIService " + name + " not found"
	}
	if err != nil {
		return false, "APIService " + name + ": " + err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Available" {
			continue
		}
		st := fmt.Sprint(m["status"])
		return st == "True", fmt.Sprintf("APIService %s Available=%s %v: %v", name, st, m["reason"], m["message"])
	}
	return false, "APIService " + name + " has no Available condition yet"
}

// apiService waits for the APIService to be Available.
func (w *waiter) apiService(ctx context.Context, dyn dynamic.Interface, name string) error {
	return w.poll(ctx, "APIService "+name, func(ctx context.Context) (bool, string) {
		return apiServiceStatus(ctx, dyn, name)
	})
}

// nodeMetrics waits for metrics.k8s.io to list a NodeMetrics with a cpu
// usage (metrics-server has scraped a kubelet once).
func (w *waiter) nodeMetrics(ctx context.Context, dyn dynamic.Interface) error {
	return w.poll(ctx, "NodeMetrics from "+MetricsGroupVersion, func(ctx context.Context) (bool, string) {
		l, err := dyn.Resource(nodeMetricsGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			_, as := apiServiceStatus(ctx, dyn, MetricsAPIService)
			return false, "list nodes.metrics.k8s.io: " + err.Error() + "; " + as
		}
		for _, it := range l.Items {
			if cpu, _, _ := unstructured.NestedString(it.Object, "usage", "cpu"); cpu != "" {
				return true, ""
			}
		}
		_, as := apiServiceStatus(ctx, dyn, MetricsAPIService)
		return false, fmt.Sprintf("%d NodeMetrics listed, none with a cpu usage yet (metrics-server scrapes every 15 s); %s", len(l.Items), as)
	})
}

// discovery waits for the aggregated group version gv to answer discovery.
func (w *waiter) discovery(ctx context.Context, disc discovery.DiscoveryInterface, dyn dynamic.Interface, gv, apiService string) error {
	return w.poll(ctx, "discovery of "+gv, func(ctx context.Context) (bool, string) {
		if _, err := disc.ServerResourcesForGroupVersion(gv); err != nil {
			_, as := apiServiceStatus(ctx, dyn, apiService)
			return false, err.Error() + "; " + as
		}
		return true, ""
	})
}
