package kubeconfig

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	ctlkube "github.com/scaleproof/scaleproof/autoscaler/controller/kube"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// listWorkersAction is Workers as Offers and NotOfferedError name it.
const listWorkersAction = "list a zone's workers"

// maxMetricsBytes bounds a worker's /metrics body read through the proxy
// (platform.MetricsReader).
const maxMetricsBytes = 4 << 20

var _ platform.MetricsReader = (*Platform)(nil)

// workersOffered is nil when Workers is offered: the reference system is
// deployed (a target run deploys none of its workers).
func (p *Platform) workersOffered() error {
	if p.cfg.Target != nil {
		return p.notOffered(listWorkersAction, "a target run deploys no reference workers")
	}
	return nil
}

// Workers lists the zone's worker pods, the ones the reference console's
// Deployment of the group × zone made (labels app.kubernetes.io/component=
// worker, scaleproof.dev/group, scaleproof.dev/zone; autoscaler/controller/
// kube), oldest first, leaving out pods being deleted. A pod is Ready by
// its Ready condition (the one a Service's endpoints follow), a canary by
// its scaleproof.dev/track label. The harness cannot reach a pod's address
// from outside the cluster, so each worker is Proxied: WorkerMetrics reads
// its /metrics through the API server.
func (p *Platform) Workers(ctx context.Context, group, zone string) ([]platform.Worker, error) {
	if err := p.workersOffered(); err != nil {
		return nil, err
	}
	sel := labels.Set{ctlkube.LabelComponent: ctlkube.ComponentWorker, ctlkube.LabelGroup: group, ctlkube.LabelZone: zone}
	list, err := p.kc.CoreV1().Pods(p.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("platform %s: list the workers of %s/%s: %w", p.cfg.Name, group, zone, err)
	}
	pods := list.Items
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return cmp.Or(a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	var out []platform.Worker
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil {
			continue
		}
		out = append(out, platform.Worker{ID: pod.Name, Proxied: true, Ready: podReady(pod),
			Canary: pod.Labels[ctlkube.LabelTrack] == ctlkube.TrackCanary})
	}
	return out, nil
}

// WorkerMetrics reads worker pod id's GET /metrics on its port
// (ctlkube.WorkerPort) through the API server's proxy to the pod, the
// pods/proxy subresource (GET /api/v1/namespaces/{ns}/pods/{name}:{port}/
// proxy/metrics; client-go's ProxyGet). Bounded by 3 s, or ctx's deadline
// when sooner. The pod's labels are checked the first time it is read. An
// identity the API server forbids to proxy, or an API server that cannot
// reach the pod (proxyUnreachable), gets a *platform.NotOfferedError: the
// harness cannot read the worker from where it stands, which says nothing of
// the system under test. A pod that is not in the zone, or a worker that
// answers an error of its own, is an error.
func (p *Platform) WorkerMetrics(ctx context.Context, group, zone, id string) ([]byte, error) {
	if err := p.workersOffered(); err != nil {
		return nil, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, metricsTimeout)
	defer cancel()
	pods := p.kc.CoreV1().Pods(p.cfg.Namespace)
	key := group + "/" + zone
	p.mu.Lock()
	known := p.workerZone[id] == key
	p.mu.Unlock()
	if !known {
		// once a pod: a worker pod's labels do not change, and the
		// in-flight watch reads every worker each second
		pod, err := pods.Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("platform %s: worker %s: %w", p.cfg.Name, id, err)
		}
		if pod.Labels[ctlkube.LabelGroup] != group || pod.Labels[ctlkube.LabelZone] != zone || pod.Labels[ctlkube.LabelComponent] != ctlkube.ComponentWorker {
			return nil, fmt.Errorf("platform %s: pod %s is not a worker of %s/%s", p.cfg.Name, id, group, zone)
		}
		p.mu.Lock()
		if p.workerZone == nil {
			p.workerZone = map[string]string{}
		}
		p.workerZone[id] = key
		p.mu.Unlock()
	}
	rc, err := pods.ProxyGet("http", id, strconv.Itoa(ctlkube.WorkerPort), "metrics", nil).Stream(ctx)
	switch {
	case apierrors.IsForbidden(err):
		return nil, &platform.NotOfferedError{Platform: p.cfg.Name, Action: "read a worker's /metrics",
			Reason: "the API server forbids this identity the pods/proxy subresource: " + err.Error()}
	case err != nil && parent.Err() == nil && proxyUnreachable(err):
		return nil, &platform.NotOfferedError{Platform: p.cfg.Name, Action: "read a worker's /metrics",
			Reason: fmt.Sprintf("the API server cannot reach worker pod %s on port %d through pods/proxy (%v); a firewall "+
				"between the control plane and the nodes allows only some ports (on GKE private clusters 443 and 10250; on EKS "+
				"the cluster security group's rules)", id, ctlkube.WorkerPort, err)}
	case err != nil:
		return nil, fmt.Errorf("platform %s: worker %s /metrics through the API server: %w", p.cfg.Name, id, err)
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, maxMetricsBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("platform %s: worker %s /metrics through the API server: %w", p.cfg.Name, id, err)
	case len(body) > maxMetricsBytes:
		return nil, fmt.Errorf("platform %s: worker %s /metrics: over %d bytes", p.cfg.Name, id, maxMetricsBytes)
	}
	return body, nil
}

// metricsTimeout bounds one WorkerMetrics read.
const metricsTimeout = 3 * time.Second

// proxyUnreachable reports a pods/proxy error that means the API server did
// not reach the pod, as opposed to the pod answering an error:
//   - 503 ServiceUnavailable "error trying to reach service: <dial error>",
//     which k8s.io/apimachinery's pkg/util/proxy/transport.go (RoundTrip,
//     v0.37.2) answers when its dial of the pod fails; a Konnectivity
//     tunnel's failure ("proxy error from … while dialing …", GKE) comes
//     inside the same message;
//   - no answer within metricsTimeout: a firewall that drops the API
//     server's packets to the pod's port leaves its dial waiting (GKE private
//     clusters open only 443 and 10250 from the control plane to the nodes:
//     cloud.google.com/kubernetes-engine/docs/how-to/private-clusters, "Adding
//     firewall rules for specific use cases"; EKS: the cluster security
//     group, docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html).
//
// A worker's own 503 reaches the harness without the message's prefix.
func proxyUnreachable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return apierrors.IsServiceUnavailable(err) && strings.Contains(err.Error(), "error trying to reach service")
}
