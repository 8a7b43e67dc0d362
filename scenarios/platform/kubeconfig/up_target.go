package kubeconfig

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// upTarget is Up with Config.Target: a scale target that an autoscaler
// not ours scales, and no console or edge (the console would delete an HPA
// on its own workers; none runs here).
//
// Deployed (Target.Adopt nil): render.Target is applied (the namespace,
// the roles, the workload, the HPA or the ScaledObject) and, for keda,
// render.TargetPrometheus (the trigger's Prometheus, NodePort 30083); Up
// waits for the rollouts of the scale target's Deployment, the scheduler
// (queue workload) and Prometheus (keda), and for the load Service's
// /readyz; a ScaledObject is applied last, once its Prometheus answers
// and the Prometheus Service has a ready endpoint. The load goes to http://NodeHost:TargetHostPort (kind maps
// NodePort 30082 there) and Prometheus is read at
// http://NodeHost:PrometheusHostPort; without NodeHost both are
// port-forwards to one pod each, so a port-forwarded load reaches one pod
// of the Service only, whatever the replicas (use a NodeHost to spread it).
//
// Adopted (Target.Adopt set, the user's own target): nothing is deployed
// and the namespace is neither created nor deleted; only the two roles'
// ServiceAccounts, Roles and RoleBindings are made (labelled
// app.kubernetes.io/name: scaleproof, removed by Down). The load goes to
// Adopt.LoadURL.
//
// Either way Up asks a 1 h token of each role's ServiceAccount
// (TokenRequest), writes three kubeconfig files into a private
// temporary folder (the run's own, the admin's, the viewer's; mode 0600 in
// a 0700 folder that Down removes, never under the published artifacts) and returns Endpoints
// with Target set and the console's fields empty.
func (p *Platform) upTarget(ctx context.Context) (platform.Endpoints, error) {
	c, t := p.cfg, p.cfg.Target
	ref := &platform.TargetRef{Kind: t.Kind, Workload: t.Workload, Namespace: c.Namespace}
	var promURL string
	start := time.Now()
	if a := t.Adopt; a != nil {
		if ref.Workload == "" {
			ref.Workload = render.WorkloadWorker
		}
		ref.Deployment, ref.HPA, ref.ScaledObject, ref.LoadURL = a.Deployment, a.HPA, a.ScaledObject, trimSlash(a.LoadURL)
		if t.Kind == render.KindKEDA && ref.HPA == "" {
			ref.HPA = kedaHPA(a.ScaledObject)
		}
		if _, err := p.kc.CoreV1().Namespaces().Get(ctx, c.Namespace, metav1.GetOptions{}); err != nil {
			return platform.Endpoints{}, fmt.Errorf("platform kubeconfig: adopted target's namespace %s: %w", c.Namespace, err)
		}
		objs, err := render.TargetRBAC(c.Namespace)
		if err != nil {
			return platform.Endpoints{}, err
		}
		if err := p.applyAll(ctx, objs); err != nil {
			return platform.Endpoints{}, err
		}
		p.Timings.Apply = time.Since(start)
		p.log.Info("adopted target: roles made", "namespace", c.Namespace, "deployment", a.Deployment, "objects", len(objs))
	} else {
		ref.Deployment = render.TargetDeployment(t.Workload)
		objs, err := render.Target(render.TargetParams{Profile: c.Profile, Namespace: c.Namespace, Image: c.Image, Kind: t.Kind, Workload: t.Workload})
		if err != nil {
			return platform.Endpoints{}, err
		}
		rollouts := []string{ref.Deployment}
		if t.Workload == render.WorkloadQueue {
			rollouts = append(rollouts, deploykube.SchedulerName)
		}
		if t.Kind == render.KindKEDA {
			prom, err := render.TargetPrometheus(render.PrometheusParams{Namespace: c.Namespace, Image: c.PrometheusImage})
			if err != nil {
				return platform.Endpoints{}, err
			}
			objs = append(objs, prom...)
			rollouts = append(rollouts, deploykube.PrometheusName)
		}
		// The ScaledObject waits for its Prometheus: KEDA queries at once
		// and keeps the connection alive, so a first query sent before
		// kube-proxy routes the Service's ClusterIP leaves the cluster
		// (seen on kind: the host's network answered 404 to every later
		// query on that one connection).
		objs, late := splitKind(objs, "ScaledObject")
		if err := p.applyAll(ctx, objs); err != nil {
			return platform.Endpoints{}, err
		}
		p.Timings.Apply = time.Since(start)
		p.log.Info("applied target", "kind", t.Kind, "workload", t.Workload, "objects", len(objs), "namespace", c.Namespace, "image", c.Image, "took", p.Timings.Apply.String())

		start = time.Now()
		for _, name := range rollouts {
			if err := p.waitRollout(ctx, name); err != nil {
				return platform.Endpoints{}, err
			}
		}
		p.Timings.Rollout = time.Since(start)
		p.log.Info("rolled out", "deployments", rollouts, "took", p.Timings.Rollout.String())

		start = time.Now()
		if ref.LoadURL, err = p.reachTarget(ctx, render.TargetLoadService(t.Workload), 8080, c.TargetHostPort); err != nil {
			return platform.Endpoints{}, err
		}
		if err := serve.WaitOK(ctx, ref.LoadURL+"/readyz", 60*time.Second, nil); err != nil {
			return platform.Endpoints{}, fmt.Errorf("platform kubeconfig: %w", err)
		}
		if t.Kind == render.KindKEDA {
			if promURL, err = p.reachTarget(ctx, deploykube.PrometheusName, deploykube.PrometheusPort, c.PrometheusHostPort); err != nil {
				return platform.Endpoints{}, err
			}
			if err := serve.WaitOK(ctx, promURL+"/-/ready", 60*time.Second, nil); err != nil {
				return platform.Endpoints{}, fmt.Errorf("platform kubeconfig: %w", err)
			}
			if err := p.waitServiceReady(ctx, deploykube.PrometheusName); err != nil {
				return platform.Endpoints{}, err
			}
			if err := p.applyAll(ctx, late); err != nil {
				return platform.Endpoints{}, err
			}
			p.log.Info("applied the ScaledObject after its Prometheus answered", "objects", len(late))
		}
		p.Timings.Ready = time.Since(start)
		ref.HPA = deploykube.TargetName
		if t.Kind == render.KindKEDA {
			ref.ScaledObject, ref.HPA = deploykube.TargetName, kedaHPA(deploykube.TargetName)
		}
	}
	var err error
	if ref.Kubeconfig, ref.AdminKubeconfig, ref.ViewerKubeconfig, err = p.writeKubeconfigs(ctx); err != nil {
		return platform.Endpoints{}, err
	}
	ep := platform.Endpoints{Target: ref, PrometheusURL: promURL}
	p.mu.Lock()
	p.endpoints = ep
	p.mu.Unlock()
	return ep, nil
}

// applyAll server-side applies objs, the Namespace first.
func (p *Platform) applyAll(ctx context.Context, objs []*unstructured.Unstructured) error {
	one := p.applier()
	for _, first := range []bool{true, false} {
		for _, o := range objs {
			if (o.GetKind() == "Namespace") == first {
				if err := one(ctx, o); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// splitKind returns objs without the objects of kind, and those.
func splitKind(objs []*unstructured.Unstructured, kind string) (rest, of []*unstructured.Unstructured) {
	for _, o := range objs {
		if o.GetKind() == kind {
			of = append(of, o)
		} else {
			rest = append(rest, o)
		}
	}
	return rest, of
}

// waitServiceReady waits (up to RolloutTimeout) until an EndpointSlice
// of the Service name holds a ready endpoint: what kube-proxy needs to
// route the Service's ClusterIP to a pod. With a NodeHost, the /-/ready
// that came back through the NodePort already showed kube-proxy has
// synced the Service (NodePort and ClusterIP rules are written together).
func (p *Platform) waitServiceReady(ctx context.Context, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, p.cfg.RolloutTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := p.kc.DiscoveryV1().EndpointSlices(p.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%d EndpointSlices, no ready endpoint", len(list.Items))
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("platform kubeconfig: Service %s/%s has no ready endpoint within %s: %s (%w)", p.cfg.Namespace, name, p.cfg.RolloutTimeout, last, err)
	}
	return nil
}

// reachTarget is the base URL of a Service of the target run: the node
// host's port when given, else a port-forward to podPort of one ready pod
// of the Deployment of the same name (one pod only).
func (p *Platform) reachTarget(ctx context.Context, name string, podPort, port int) (string, error) {
	if p.cfg.NodeHost != "" {
		return "http://" + hostPort(p.cfg.NodeHost, port), nil
	}
	return p.forwardPort(ctx, name, podPort)
}

// kedaHPA is the name of the HPA KEDA makes for a ScaledObject.
func kedaHPA(scaledObject string) string { return "keda-hpa-" + scaledObject }
