package kube

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/scaleproof/scaleproof/scenarios/target"
)

// What the hpa and keda targets share: the Deployment's count, its scale
// subresource, the API server's answers as Outcomes, and the Events of an
// object as trail entries.

// DefaultSyncPeriod is kube-controller-manager's
// --horizontal-pod-autoscaler-sync-period: how often the HPA controller
// reconciles every HPA.
const DefaultSyncPeriod = 15 * time.Second

// DefaultDownscaleStabilization is kube-controller-manager's
// --horizontal-pod-autoscaler-downscale-stabilization: the scale-down
// stabilization window of an HPA whose behavior.scaleDown does not set
// stabilizationWindowSeconds.
const DefaultDownscaleStabilization = 300 * time.Second

// maxEventPages bounds a listing of Events (500 a page).
const maxEventPages = 20

// HPA docs: where the hpa and keda targets' contracts are written.
const (
	hpaDoc    = "Kubernetes docs, Horizontal Pod Autoscaling"
	rbacDoc   = "Kubernetes docs, Using RBAC Authorization"
	eventsDoc = "Kubernetes API, Event (core/v1)"
)

// kube is the Deployment side of an hpa or keda target.
type kube struct {
	run, admin, viewer kubernetes.Interface
	ns, deployment     string
	now                func() time.Time
}

// newKube is the kube of Deployment ns/deployment read by run and changed
// by admin and viewer; now stamps readings (nil: time.Now).
func newKube(run, admin, viewer kubernetes.Interface, ns, deployment string, now func() time.Time) kube {
	if now == nil {
		now = time.Now
	}
	return kube{run: run, admin: admin, viewer: viewer, ns: ns, deployment: deployment, now: now}
}

func (k kube) client(role target.Role) (kubernetes.Interface, error) {
	return target.ByRole(role, k.admin, k.viewer)
}

// deploymentState reads the Deployment's spec.replicas (1 when unset, the
// API's default) and status.readyReplicas with the run's client.
func (k kube) deploymentState(ctx context.Context) (count, ready int, err error) {
	d, err := k.run.AppsV1().Deployments(k.ns).Get(ctx, k.deployment, metav1.GetOptions{})
	if err != nil {
		return 0, 0, fmt.Errorf("read deployment %s/%s: %w", k.ns, k.deployment, err)
	}
	return deploymentCount(d), int(d.Status.ReadyReplicas), nil
}

func deploymentCount(d *appsv1.Deployment) int {
	if d.Spec.Replicas == nil {
		return 1
	}
	return int(*d.Spec.Replicas)
}

// SetCount updates the Deployment's scale subresource in role's name (an
// unconditional update: no resourceVersion, so the API server applies it
// to the Deployment as it is): the hpa and keda targets' SetCount.
func (k kube) SetCount(ctx context.Context, role target.Role, count int) (target.Outcome, error) {
	c, err := k.client(role)
	if err != nil {
		return target.Outcome{}, err
	}
	s := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: k.deployment, Namespace: k.ns},
		Spec:       autoscalingv1.ScaleSpec{Replicas: int32(count)},
	}
	_, err = c.AppsV1().Deployments(k.ns).UpdateScale(ctx, k.deployment, s, metav1.UpdateOptions{})
	return outcome(err, fmt.Sprintf("scale deployment %s/%s to %d", k.ns, k.deployment, count))
}

// outcome maps the API server's answer to an Outcome: nil is 200, an API
// status (403 Forbidden, 404 NotFound, 422 Invalid, 409 Conflict ...) is its
// code and message; anything else (no answer: transport, context, a
// client-side rate limit) is an error naming what.
func outcome(err error, what string) (target.Outcome, error) {
	if err == nil {
		return target.Outcome{Status: 200}, nil
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code != 0 {
		return target.Outcome{Status: int(st.Status().Code), Message: st.Status().Message}, nil
	}
	return target.Outcome{}, fmt.Errorf("%s: %w", what, err)
}

// hpaReading is what State takes from an HPA.
type hpaReading struct {
	desired, min, max int
	metric            float64
	hasMetric         bool
	metricTarget      float64 // the spec's target of the metric read, 0 when unknown
}

func readHPA(h *autoscalingv2.HorizontalPodAutoscaler) hpaReading {
	r := hpaReading{desired: int(h.Status.DesiredReplicas), min: 1, max: int(h.Spec.MaxReplicas)}
	if h.Spec.MinReplicas != nil {
		r.min = int(*h.Spec.MinReplicas)
	}
	var typ autoscalingv2.MetricSourceType
	r.metric, typ, r.hasMetric = currentMetric(h.Status.CurrentMetrics)
	if r.hasMetric {
		r.metricTarget = metricTarget(h.Spec.Metrics, typ)
	}
	return r
}

// metricTarget is the target the spec sets for the first metric of type
// typ, in the unit currentMetric reads (averageUtilization in percent, else
// averageValue, else value); 0 when the spec names none.
func metricTarget(ms []autoscalingv2.MetricSpec, typ autoscalingv2.MetricSourceType) float64 {
	for _, m := range ms {
		if m.Type != typ {
			continue
		}
		var t *autoscalingv2.MetricTarget
		switch typ {
		case autoscalingv2.ResourceMetricSourceType:
			if m.Resource != nil {
				t = &m.Resource.Target
			}
		case autoscalingv2.ContainerResourceMetricSourceType:
			if m.ContainerResource != nil {
				t = &m.ContainerResource.Target
			}
		case autoscalingv2.PodsMetricSourceType:
			if m.Pods != nil {
				t = &m.Pods.Target
			}
		case autoscalingv2.ObjectMetricSourceType:
			if m.Object != nil {
				t = &m.Object.Target
			}
		case autoscalingv2.ExternalMetricSourceType:
			if m.External != nil {
				t = &m.External.Target
			}
		}
		if t == nil {
			continue
		}
		switch {
		case t.AverageUtilization != nil:
			return float64(*t.AverageUtilization)
		case t.AverageValue != nil:
			return t.AverageValue.AsApproximateFloat64()
		case t.Value != nil:
			return t.Value.AsApproximateFloat64()
		}
	}
	return 0
}

// currentMetric is the first of an HPA's status.currentMetrics that has a
// value: a Resource or ContainerResource metric's averageUtilization (percent
// of the request) or else its averageValue; a Pods metric's averageValue; an
// Object or External metric's averageValue or else its value. Quantities
// are read as float64 in their base unit (cores for cpu, bytes for memory,
// the metric's own unit otherwise).
func currentMetric(ms []autoscalingv2.MetricStatus) (float64, autoscalingv2.MetricSourceType, bool) {
	for _, m := range ms {
		var cur *autoscalingv2.MetricValueStatus
		switch m.Type {
		case autoscalingv2.ResourceMetricSourceType:
			if m.Resource != nil {
				cur = &m.Resource.Current
			}
		case autoscalingv2.ContainerResourceMetricSourceType:
			if m.ContainerResource != nil {
				cur = &m.ContainerResource.Current
			}
		case autoscalingv2.PodsMetricSourceType:
			if m.Pods != nil {
				cur = &m.Pods.Current
			}
		case autoscalingv2.ObjectMetricSourceType:
			if m.Object != nil {
				cur = &m.Object.Current
			}
		case autoscalingv2.ExternalMetricSourceType:
			if m.External != nil {
				cur = &m.External.Current
			}
		}
		if cur == nil {
			continue
		}
		switch {
		case cur.AverageUtilization != nil:
			return float64(*cur.AverageUtilization), m.Type, true
		case cur.AverageValue != nil:
			return cur.AverageValue.AsApproximateFloat64(), m.Type, true
		case cur.Value != nil:
			return cur.Value.AsApproximateFloat64(), m.Type, true
		}
	}
	return 0, "", false
}

// listEvents lists the namespace's Events about one object (a field
// selector on involvedObject.kind and .name, checked again here: a fake
// clientset ignores field selectors), at most maxEventPages pages of 500.
func listEvents(ctx context.Context, c kubernetes.Interface, ns, kind, name string) ([]corev1.Event, error) {
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}.AsSelector().String()
	var out []corev1.Event
	cont := ""
	for range maxEventPages {
		l, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel, Limit: 500, Continue: cont})
		if err != nil {
			return nil, fmt.Errorf("list events of %s %s/%s: %w", kind, ns, name, err)
		}
		for _, e := range l.Items {
			if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
				out = append(out, e)
			}
		}
		if l.Continue == "" {
			return out, nil
		}
		cont = l.Continue
	}
	return nil, fmt.Errorf("list events of %s %s/%s: more than %d pages", kind, ns, name, maxEventPages)
}

// eventSpan is when an Event happened and how often: first is
// firstTimestamp (else eventTime, the events.k8s.io field), last is
// lastTimestamp (else series.lastObservedTime, else first), n is count
// (else series.count; at least 1). The API server's event recorder folds
// repeats of the same reason and message into one Event and keeps only
// the first and last time.
func eventSpan(e corev1.Event) (first, last time.Time, n int) {
	first, last, n = e.FirstTimestamp.Time, e.LastTimestamp.Time, int(e.Count)
	if first.IsZero() {
		first = e.EventTime.Time
	}
	if e.Series != nil {
		if last.IsZero() {
			last = e.Series.LastObservedTime.Time
		}
		n = max(n, int(e.Series.Count))
	}
	if last.IsZero() {
		last = first
	}
	if first.IsZero() {
		first = last
	}
	return first, last, max(n, 1)
}

// newSize reads an HPA SuccessfulRescale message, "New size: 4; reason: cpu
// resource utilization (percentage of request) above target" (also behind
// the recorder's "(combined from similar events): " prefix).
var newSize = regexp.MustCompile(`New size: (\d+)(?:; reason: (.*))?`)

// RescaleEvent reads one HPA Event as trail entries. Only reason
// SuccessfulRescale is a change; its message gives the new size (To) and
// the reason, never the size before (From -1) nor who asked (no Actor).
// An Event that stands for n > 1 rescales (count or series.count) gives two
// entries, at its first and its last time: the rescales in between went to
// the same size at times the Event does not keep. ok is false for any other
// reason and for a message that does not parse (skipped from the trail).
func RescaleEvent(e corev1.Event) (cs []target.Change, ok bool) {
	if e.Reason != "SuccessfulRescale" {
		return nil, false
	}
	m := newSize.FindStringSubmatch(e.Message)
	if m == nil {
		return nil, false
	}
	to, err := strconv.Atoi(m[1])
	if err != nil {
		return nil, false
	}
	return spanChanges(e, -1, to, strings.TrimSpace(m[2])), true
}

func spanChanges(e corev1.Event, from, to int, reason string) []target.Change {
	first, last, n := eventSpan(e)
	c := target.Change{At: first, From: from, To: to, Reason: reason, Source: "event"}
	out := []target.Change{c}
	if n > 1 && !last.Equal(first) {
		c.At = last
		out = append(out, c)
	}
	return out
}

// hpaTrail reads the SuccessfulRescale Events of HPA name.
func hpaTrail(ctx context.Context, c kubernetes.Interface, ns, name string) ([]target.Change, error) {
	evs, err := listEvents(ctx, c, ns, "HorizontalPodAutoscaler", name)
	if err != nil {
		return nil, err
	}
	var out []target.Change
	for _, e := range evs {
		if cs, ok := RescaleEvent(e); ok {
			out = append(out, cs...)
		}
	}
	return out, nil
}
