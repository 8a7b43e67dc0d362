package kubeconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
	"github.com/scaleproof/scaleproof/autoscaler/promserver"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
	"github.com/scaleproof/scaleproof/internal/kubeapply"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// FieldManager is the server-side apply manager of what Up applies.
const FieldManager = "scaleproof"

// Up waits until the cluster authorizes the run to create its namespace
// (authorized.go), renders and applies the manifests, makes the keys
// Secret, waits for
// the console and edge rollouts and their /readyz, and returns the
// endpoints. With Config.Target it deploys (or adopts) a scale target
// instead (upTarget, up_target.go).
func (p *Platform) Up(ctx context.Context) (platform.Endpoints, error) {
	if p.cfg.Target != nil {
		return p.upTarget(ctx)
	}
	// The reference system makes its namespace: wait until the run may.
	if err := waitAuthorized(ctx, p.kc, p.cfg.AuthorizeTimeout, nil, p.log); err != nil {
		return platform.Endpoints{}, err
	}
	c := p.cfg
	rollouts := []string{deploykube.ConsoleName, deploykube.EdgeName}
	if c.Prometheus {
		rollouts = append(rollouts, deploykube.PrometheusName)
	}
	objs, err := render.Render(c.renderParams())
	if err != nil {
		return platform.Endpoints{}, err
	}
	keys := platform.NewKeys(c.Group)
	start := time.Now()
	if err := p.apply(ctx, objs, keys); err != nil {
		return platform.Endpoints{}, err
	}
	p.Timings.Apply = time.Since(start)
	p.log.Info("applied", "objects", len(objs), "namespace", c.Namespace, "image", c.Image, "took", p.Timings.Apply.String())

	start = time.Now()
	for _, name := range rollouts {
		if err := p.waitRollout(ctx, name); err != nil {
			return platform.Endpoints{}, err
		}
	}
	p.Timings.Rollout = time.Since(start)
	p.log.Info("rolled out", "took", p.Timings.Rollout.String())

	start = time.Now()
	consoleURL, edgeURL, err := p.reach(ctx)
	if err != nil {
		return platform.Endpoints{}, err
	}
	for _, u := range []string{consoleURL, edgeURL} {
		if err := serve.WaitOK(ctx, u+"/readyz", 60*time.Second, nil); err != nil {
			return platform.Endpoints{}, fmt.Errorf("platform kubeconfig: %w", err)
		}
	}
	promURL, err := p.reachPrometheus(ctx)
	if err != nil {
		return platform.Endpoints{}, err
	}
	p.Timings.Ready = time.Since(start)
	ep := platform.Endpoints{ConsoleURL: consoleURL, EdgeURL: edgeURL, Group: c.Group, Keys: keys, Canary: c.Canary, PrometheusURL: promURL}
	p.mu.Lock()
	p.endpoints = ep
	p.mu.Unlock()
	return ep, nil
}

// apply server-side applies the namespace, then the keys Secret, then the
// rest in render order.
func (p *Platform) apply(ctx context.Context, objs []*unstructured.Unstructured, keys platform.Keys) error {
	one := p.applier()
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			if err := one(ctx, o); err != nil {
				return err
			}
		}
	}
	if err := p.applyKeys(ctx, keys); err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			if err := one(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// applier returns a function that server-side applies one object (as
// FieldManager, forcing conflicts), its resource found through discovery.
func (p *Platform) applier() func(ctx context.Context, o *unstructured.Unstructured) error {
	mapper := kubeapply.Mapper(p.kc.Discovery())
	return func(ctx context.Context, o *unstructured.Unstructured) error {
		if err := kubeapply.Apply(ctx, p.dyn, mapper, FieldManager, []*unstructured.Unstructured{o}); err != nil {
			return fmt.Errorf("platform kubeconfig: %w", err)
		}
		return nil
	}
}

// applyKeys writes the console's keys file into its Secret.
func (p *Platform) applyKeys(ctx context.Context, keys platform.Keys) error {
	b, err := json.Marshal(platform.KeysFile{Keys: keys.All()})
	if err != nil {
		return err
	}
	sec := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: deploykube.KeysSecretName, Namespace: p.cfg.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "scaleproof"}},
		Data:       map[string][]byte{deploykube.KeysSecretKey: b},
	}
	body, err := json.Marshal(sec)
	if err != nil {
		return err
	}
	force := true
	if _, err := p.kc.CoreV1().Secrets(p.cfg.Namespace).Patch(ctx, sec.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
		return fmt.Errorf("platform kubeconfig: apply secret %s/%s: %w", p.cfg.Namespace, sec.Name, err)
	}
	return nil
}

// waitRollout waits until the Deployment's newest ReplicaSet has all its
// replicas updated and ready (availability, which minReadySeconds delays,
// is not waited for: a ready pod already serves).
func (p *Platform) waitRollout(ctx context.Context, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, p.cfg.RolloutTimeout, true, func(ctx context.Context) (bool, error) {
		d, err := p.kc.AppsV1().Deployments(p.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			last = "not found"
			return false, nil
		}
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ok, status := kubeapply.RolledOut(d)
		last = status
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("platform kubeconfig: rollout of deployment %s/%s within %s: %s (%w)", p.cfg.Namespace, name, p.cfg.RolloutTimeout, last, err)
	}
	return nil
}

// reach returns the console's and edge's base URLs: the node host's ports
// when given, else port-forwards.
func (p *Platform) reach(ctx context.Context) (string, string, error) {
	c := p.cfg
	if c.NodeHost != "" {
		return "http://" + hostPort(c.NodeHost, c.ConsoleHostPort), "http://" + hostPort(c.NodeHost, c.EdgeHostPort), nil
	}
	cu, err := p.forward(ctx, deploykube.ConsoleName)
	if err != nil {
		return "", "", err
	}
	eu, err := p.forward(ctx, deploykube.EdgeName)
	if err != nil {
		return "", "", err
	}
	return cu, eu, nil
}

// reachPrometheus reaches the Prometheus deployed with the reference
// system (Config.Prometheus; "" without it), waits until it is ready, then
// until it scrapes the edge healthily: hpa zones read the edge's in-flight
// from it, and a Prometheus with no healthy target answers every query
// with no series, which a zone that reads empty as zero takes as no load.
// Its scrape Service selects the edge's pods alone
// (components/edge-metrics), so any healthy target is the edge.
func (p *Platform) reachPrometheus(ctx context.Context) (string, error) {
	c := p.cfg
	if !c.Prometheus {
		return "", nil
	}
	u, err := p.reachTarget(ctx, deploykube.PrometheusName, deploykube.PrometheusPort, c.PrometheusHostPort)
	if err != nil {
		return "", err
	}
	if err := serve.WaitOK(ctx, u+"/-/ready", 60*time.Second, nil); err != nil {
		return "", fmt.Errorf("platform kubeconfig: %w", err)
	}
	if err := promserver.WaitTargetUpFunc(ctx, u, "(the edge)", func(string) bool { return true }, c.PrometheusTimeout); err != nil {
		return "", fmt.Errorf("platform kubeconfig: Prometheus does not scrape the edge, so hpa zones would see no signal: %w", err)
	}
	p.log.Info("prometheus scrapes the edge", "url", u)
	return u, nil
}
