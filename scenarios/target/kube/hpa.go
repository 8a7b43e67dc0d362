package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/scaleproof/scaleproof/scenarios/target"
)

// HPAConfig names a Deployment scaled by the cluster's own
// HorizontalPodAutoscaler (autoscaling/v2) and the clients of the run and
// of the two roles.
type HPAConfig struct {
	// Run reads (the run's own credentials); Admin and Viewer change in
	// the roles' names (ServiceAccount tokens bound by RBAC).
	Run, Admin, Viewer kubernetes.Interface
	// Namespace, Deployment (the scale target) and HPA (its autoscaler).
	Namespace, Deployment, HPA string
	// SyncPeriod is kube-controller-manager's
	// --horizontal-pod-autoscaler-sync-period (0: DefaultSyncPeriod, 15 s).
	SyncPeriod time.Duration
	// DownscaleStabilization is kube-controller-manager's
	// --horizontal-pod-autoscaler-downscale-stabilization, the scale-down
	// window of an HPA whose behavior does not set one (0:
	// DefaultDownscaleStabilization, 300 s).
	DownscaleStabilization time.Duration
	// Now stamps readings (nil: time.Now).
	Now func() time.Time
}

// hpaTarget is Target over an HPA on a Deployment.
type hpaTarget struct {
	kube
	hpa       string
	contracts target.Contracts
}

var _ target.Target = (*hpaTarget)(nil)

// NewHPA reads the HPA once with cfg.Run, checks that it scales
// Deployment cfg.Deployment, and returns its Target, whose Contracts follow
// that HPA's spec (minReplicas, maxReplicas, behavior) as read then. It is
// an error when a client or name is missing, the HPA cannot be read, or it
// scales something else.
func NewHPA(ctx context.Context, cfg HPAConfig) (target.Target, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	h, err := cfg.Run.AutoscalingV2().HorizontalPodAutoscalers(cfg.Namespace).Get(ctx, cfg.HPA, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("target hpa: read hpa %s/%s: %w", cfg.Namespace, cfg.HPA, err)
	}
	if ref := h.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != cfg.Deployment {
		return nil, fmt.Errorf("target hpa: hpa %s/%s scales %s %q, not Deployment %q", cfg.Namespace, cfg.HPA, ref.Kind, ref.Name, cfg.Deployment)
	}
	p := hpaParamsOf(h, cfg.SyncPeriod, cfg.DownscaleStabilization, "the HPA's")
	return &hpaTarget{kube: newKube(cfg.Run, cfg.Admin, cfg.Viewer, cfg.Namespace, cfg.Deployment, cfg.Now), hpa: cfg.HPA, contracts: hpaContracts(p)}, nil
}

func (cfg HPAConfig) check() error {
	var errs []error
	if cfg.Run == nil || cfg.Admin == nil || cfg.Viewer == nil {
		errs = append(errs, errors.New("the run's, the admin's and the viewer's clients are all needed"))
	}
	for _, f := range []struct{ name, v string }{{"namespace", cfg.Namespace}, {"deployment", cfg.Deployment}, {"hpa", cfg.HPA}} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("no %s", f.name))
		}
	}
	if cfg.SyncPeriod < 0 || cfg.DownscaleStabilization < 0 {
		errs = append(errs, errors.New("negative sync period or downscale stabilization"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("target hpa: %w", err)
	}
	return nil
}

func hpaParamsOf(h *autoscalingv2.HorizontalPodAutoscaler, sync, downDefault time.Duration, where string) hpaParams {
	if sync == 0 {
		sync = DefaultSyncPeriod
	}
	if downDefault == 0 {
		downDefault = DefaultDownscaleStabilization
	}
	r := readHPA(h)
	return hpaParams{sync: sync, min: r.min, max: r.max, b: behaviorOf(h.Spec.Behavior, downDefault), where: where}
}

func (t *hpaTarget) Kind() target.Kind           { return target.HPA }
func (t *hpaTarget) Name() string                { return "hpa " + t.ns + "/" + t.hpa }
func (t *hpaTarget) Contracts() target.Contracts { return t.contracts }

// State reads the Deployment (spec.replicas, status.readyReplicas) and the
// HPA (status.desiredReplicas, spec.minReplicas (1 when unset) and
// maxReplicas, status.currentMetrics) with the run's client.
func (t *hpaTarget) State(ctx context.Context) (target.State, error) {
	at := t.now()
	count, ready, err := t.deploymentState(ctx)
	if err != nil {
		return target.State{}, err
	}
	h, err := t.run.AutoscalingV2().HorizontalPodAutoscalers(t.ns).Get(ctx, t.hpa, metav1.GetOptions{})
	if err != nil {
		return target.State{}, fmt.Errorf("read hpa %s/%s: %w", t.ns, t.hpa, err)
	}
	r := readHPA(h)
	return target.State{At: at, Count: count, Ready: ready, Desired: r.desired, Min: r.min, Max: r.max,
		Metric: r.metric, HasMetric: r.hasMetric, MetricTarget: r.metricTarget}, nil
}

// SetBounds merge-patches the HPA's spec.minReplicas and maxReplicas in
// role's name; the API server's refusal (403, 422 ...) is the Outcome.
func (t *hpaTarget) SetBounds(ctx context.Context, role target.Role, min, max int) (target.Outcome, error) {
	c, err := t.client(role)
	if err != nil {
		return target.Outcome{}, err
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"minReplicas": min, "maxReplicas": max}})
	if err != nil {
		return target.Outcome{}, err
	}
	_, err = c.AutoscalingV2().HorizontalPodAutoscalers(t.ns).Patch(ctx, t.hpa, types.MergePatchType, patch, metav1.PatchOptions{})
	return outcome(err, fmt.Sprintf("patch hpa %s/%s bounds to %d..%d", t.ns, t.hpa, min, max))
}

// Trail reads the HPA's SuccessfulRescale Events (RescaleEvent) with the
// run's client, at or after since, oldest first. Other Events of the HPA
// and messages that do not parse are left out.
func (t *hpaTarget) Trail(ctx context.Context, since time.Time) ([]target.Change, error) {
	cs, err := hpaTrail(ctx, t.run, t.ns, t.hpa)
	if err != nil {
		return nil, err
	}
	return target.SinceSorted(cs, since), nil
}
