//go:build e2e

package targets

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/kubeconfig"
)

type ctxKey string

const deployedKey ctxKey = "deployed"

// deployed is what a feature's Setup deployed.
type deployed struct {
	pf  *kubeconfig.Platform
	ref *platform.TargetRef
	ep  platform.Endpoints
}

func fromCtx(ctx context.Context, t *testing.T) deployed {
	d, ok := ctx.Value(deployedKey).(deployed)
	if !ok || d.ref == nil {
		t.Fatal("the feature's Setup deployed no target")
	}
	return d
}

// deployTarget is a Setup: the kubeconfig platform's target mode deploys
// kind × workload into a namespace of its own on the suite's cluster.
func deployTarget(kindName, workload string) features.Func {
	return func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		ns := "sp-e2e-" + kindName + "-" + workload
		pf, err := kubeconfig.New(kubeconfig.Config{Name: "kind", Kubeconfig: cfg.KubeconfigFile(), Namespace: ns,
			Profile: "quick", Image: refImage, Target: &platform.TargetSpec{Kind: kindName, Workload: workload},
			NodeHost: cluster.NodeHost, TargetHostPort: cluster.HostPorts[targetNodePort], PrometheusHostPort: cluster.HostPorts[prometheusNodePort],
			PrometheusImage: images.Ref("prometheus"), Log: log.With("feature", ns)})
		if err != nil {
			t.Fatal(err)
		}
		ep, err := pf.Up(ctx)
		d := deployed{pf: pf, ep: ep, ref: ep.Target}
		ctx = context.WithValue(ctx, deployedKey, d)
		if err != nil {
			t.Fatalf("deploy %s/%s: %v", kindName, workload, err)
		}
		return ctx
	}
}

// undeploy is a Teardown: the namespace's logs, then the namespace goes.
func undeploy(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
	d, ok := ctx.Value(deployedKey).(deployed)
	if !ok || d.pf == nil {
		return ctx
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
	defer cancel()
	if err := d.pf.DumpLogs(dctx, filepath.Join(artifacts, "logs-"+d.ref.Namespace)); err != nil {
		t.Logf("dump logs: %v", err)
	}
	if err := d.pf.Down(dctx); err != nil {
		t.Errorf("down: %v", err)
	}
	return ctx
}

// withLoad runs 12 VUs of 200 ms work calls at the target's load URL
// while fn waits (bounded by the load's own 4 minutes); a load that
// failed (a bad profile, no calls answered) is the error, whatever fn saw.
func withLoad(ctx context.Context, url string, fn func() error) error {
	lp := load.ConstantVUs(12, 4*time.Minute)
	lp.GracefulStop = 5 * time.Second
	if err := lp.Validate(); err != nil {
		return fmt.Errorf("the load: %w", err)
	}
	hc := load.NewHTTPClient(16, 30*time.Second, nil)
	l := scenarios.EngineLoad(ctx, hc, url, lp, 200)
	err := fn()
	l.Stop()
	l.Wait()
	if lerr := l.Err(); lerr != nil {
		return fmt.Errorf("the load: %w (waiting: %v)", lerr, err)
	}
	return err
}

var (
	podMetrics   = schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}
	scaledObject = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}
)

func dynamicFor(t *testing.T, cfg *envconf.Config) dynamic.Interface {
	d, err := dynamic.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func clientFrom(t *testing.T, kubeconfigPath string) kubernetes.Interface {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// replicasAbove is a klient/wait condition: the Deployment's spec.replicas
// is above n.
func replicasAbove(cfg *envconf.Config, ns, name string, n int32) func(context.Context) (bool, error) {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	return conditions.New(cfg.Client().Resources(ns)).ResourceMatch(dep, func(o k8s.Object) bool {
		d := o.(*appsv1.Deployment)
		return d.Spec.Replicas != nil && *d.Spec.Replicas > n
	})
}

// atReplicas: the Deployment's spec.replicas is n (the autoscaler has
// brought it to its minimum before a load, so a count above it afterwards
// is the autoscaler's doing, not the manifest's initial replicas).
func atReplicas(cfg *envconf.Config, ns, name string, n int32) func(context.Context) (bool, error) {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	return conditions.New(cfg.Client().Resources(ns)).ResourceMatch(dep, func(o k8s.Object) bool {
		d := o.(*appsv1.Deployment)
		return d.Spec.Replicas != nil && *d.Spec.Replicas == n
	})
}

func hpaOf(ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
}

// scalingActive: the HPA's ScalingActive condition is True and it shows a
// current metric (it reads its metric).
func scalingActive(cfg *envconf.Config, ns, name string) func(context.Context) (bool, error) {
	return conditions.New(cfg.Client().Resources(ns)).ResourceMatch(hpaOf(ns, name), func(o k8s.Object) bool {
		h := o.(*autoscalingv2.HorizontalPodAutoscaler)
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionTrue {
				return len(h.Status.CurrentMetrics) > 0
			}
		}
		return false
	})
}

// rbacAssessment: the viewer's patch of the HPA (or ScaledObject) and of
// deployments/scale is refused by the API server with 403, the admin's
// patch of the same max is accepted.
func rbacAssessment(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
	d := fromCtx(ctx, t)
	viewer, admin := clientFrom(t, d.ref.ViewerKubeconfig), clientFrom(t, d.ref.AdminKubeconfig)
	ns := d.ref.Namespace
	h, err := admin.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, d.ref.HPA, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("admin get hpa: %v", err)
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"maxReplicas":%d}}`, h.Spec.MaxReplicas))
	if _, err := viewer.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(ctx, d.ref.HPA, types.MergePatchType, patch, metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("viewer patch of hpa %s: %v, want 403 Forbidden", d.ref.HPA, err)
	}
	if _, err := viewer.AppsV1().Deployments(ns).UpdateScale(ctx, d.ref.Deployment, scaleOf(ns, d.ref.Deployment, 2), metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("viewer update of deployments/scale %s: %v, want 403 Forbidden", d.ref.Deployment, err)
	}
	if _, err := viewer.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, d.ref.HPA, metav1.GetOptions{}); err != nil {
		t.Errorf("viewer get hpa: %v, want allowed", err)
	}
	if d.ref.ScaledObject == "" {
		if _, err := admin.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(ctx, d.ref.HPA, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Errorf("admin patch of hpa %s: %v, want accepted", d.ref.HPA, err)
		}
	}
	return ctx
}

func scaleOf(ns, name string, n int32) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
}

func TestHPAOnWorkers(t *testing.T) {
	f := features.New("the cluster's HPA on the worker workload (CPU from metrics-server)").
		WithLabel("target", "hpa").
		Setup(deployTarget("hpa", "worker")).
		Assess("metrics.k8s.io serves the scale target's pods' CPU", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := fromCtx(ctx, t)
			dy := dynamicFor(t, cfg)
			err := wait.For(func(ctx context.Context) (bool, error) {
				l, err := dy.Resource(podMetrics).Namespace(d.ref.Namespace).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, nil // the aggregated API may answer 503 until the first scrape
				}
				return len(l.Items) > 0, nil
			}, wait.WithContext(ctx), wait.WithTimeout(2*time.Minute), wait.WithInterval(2*time.Second))
			if err != nil {
				t.Fatalf("no PodMetrics in %s within 2 min: %v", d.ref.Namespace, err)
			}
			return ctx
		}).
		Assess("the HPA reads its metric (ScalingActive, a current metric)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := fromCtx(ctx, t)
			if err := wait.For(scalingActive(cfg, d.ref.Namespace, d.ref.HPA), wait.WithContext(ctx), wait.WithTimeout(2*time.Minute), wait.WithInterval(2*time.Second)); err != nil {
				t.Fatalf("hpa %s never ScalingActive with a current metric: %v", d.ref.HPA, err)
			}
			return ctx
		}).
		Assess("RBAC: the viewer is refused (403), the admin may", rbacAssessment).
		Assess("under load the HPA scales the Deployment above minReplicas", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := fromCtx(ctx, t)
			if err := wait.For(atReplicas(cfg, d.ref.Namespace, d.ref.Deployment, 1), wait.WithContext(ctx), wait.WithTimeout(3*time.Minute), wait.WithInterval(time.Second)); err != nil {
				t.Fatalf("deployment %s not at minReplicas 1 within 3 min at rest: %v", d.ref.Deployment, err)
			}
			err := withLoad(ctx, d.ref.LoadURL, func() error {
				return wait.For(replicasAbove(cfg, d.ref.Namespace, d.ref.Deployment, 1), wait.WithContext(ctx), wait.WithTimeout(3*time.Minute), wait.WithInterval(time.Second))
			})
			if err != nil {
				t.Fatalf("deployment %s not above 1 replica within 3 min of load: %v", d.ref.Deployment, err)
			}
			return ctx
		}).
		Teardown(undeploy).
		Feature()
	testenv.Test(t, f)
}

func TestKEDAOnQueue(t *testing.T) {
	f := features.New("KEDA on the queue workload (the post's trigger on the scheduler's in-flight summary)").
		WithLabel("target", "keda").
		Setup(deployTarget("keda", "queue")).
		Assess("the ScaledObject is Ready and KEDA made its HPA", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := fromCtx(ctx, t)
			dy := dynamicFor(t, cfg)
			err := wait.For(func(ctx context.Context) (bool, error) {
				so, err := dy.Resource(scaledObject).Namespace(d.ref.Namespace).Get(ctx, d.ref.ScaledObject, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				return conditionTrue(so, "Ready"), nil
			}, wait.WithContext(ctx), wait.WithTimeout(2*time.Minute), wait.WithInterval(2*time.Second))
			if err != nil {
				t.Fatalf("scaledobject %s never Ready: %v", d.ref.ScaledObject, err)
			}
			if err := wait.For(conditions.New(cfg.Client().Resources(d.ref.Namespace)).ResourceMatch(hpaOf(d.ref.Namespace, d.ref.HPA), func(o k8s.Object) bool {
				h := o.(*autoscalingv2.HorizontalPodAutoscaler)
				return h.Spec.ScaleTargetRef.Name == d.ref.Deployment && len(h.Spec.Metrics) > 0 && h.Spec.Metrics[0].External != nil
			}), wait.WithContext(ctx), wait.WithTimeout(time.Minute)); err != nil {
				t.Fatalf("no HPA %s on %s with an external metric: %v", d.ref.HPA, d.ref.Deployment, err)
			}
			return ctx
		}).
		Assess("external.metrics.k8s.io serves the trigger's value", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := fromCtx(ctx, t)
			var h autoscalingv2.HorizontalPodAutoscaler
			if err := cfg.Client().Resources(d.ref.Namespace).Get(ctx, d.ref.HPA, d.ref.Namespace, &h); err != nil {
				t.Fatal(err)
			}
			m := h.Spec.Metrics[0].External.Metric
			sel := metav1.FormatLabelSelector(m.Selector)
			cs := clientFrom(t, d.ref.Kubeconfig)
			var body []byte
			err := wait.For(func(ctx context.Context) (bool, error) {
				b, err := cs.Discovery().RESTClient().Get().AbsPath("/apis/external.metrics.k8s.io/v1beta1/namespaces", d.ref.Namespace, m.Name).
					Param("labelSelector", sel).DoRaw(ctx)
				body = b
				return err == nil && bytes.Contains(b, []byte(`"value"`)), nil
			}, wait.WithContext(ctx), wait.WithTimeout(2*time.Minute), wait.WithInterval(2*time.Second))
			if err != nil {
				t.Fatalf("external metric %s (%s) not served: %v (last answer %s)", m.Name, sel, err, body)
			}
			t.Logf("external metric %s: %s", m.Name, body)
			return ctx
		}).
		Assess("RBAC: the viewer is refused (403), the admin may", rbacAssessment).
		Assess("under load KEDA scales the queriers above minReplicaCount", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := fromCtx(ctx, t)
			// the queue's manifest starts 2 queriers: first KEDA's HPA
			// brings them to 1 (the 60 s window and a sync)
			if err := wait.For(atReplicas(cfg, d.ref.Namespace, deploykube.QuerierName, 1), wait.WithContext(ctx), wait.WithTimeout(3*time.Minute), wait.WithInterval(time.Second)); err != nil {
				t.Fatalf("queriers not at minReplicaCount 1 within 3 min at rest: %v", err)
			}
			err := withLoad(ctx, d.ref.LoadURL, func() error {
				return wait.For(replicasAbove(cfg, d.ref.Namespace, deploykube.QuerierName, 1), wait.WithContext(ctx), wait.WithTimeout(3*time.Minute), wait.WithInterval(time.Second))
			})
			if err != nil {
				t.Fatalf("queriers not above 1 replica within 3 min of load: %v", err)
			}
			return ctx
		}).
		Assess("recommend-bounds computes min and max from the queue's summary, unchanged", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			d := fromCtx(ctx, t)
			if d.ep.PrometheusURL == "" {
				t.Fatal("the keda target has no Prometheus URL")
			}
			ns := d.ref.Namespace
			cmd := exec.CommandContext(ctx, filepath.Join(bin, "scaleproof"), "recommend-bounds", "--prometheus", d.ep.PrometheusURL, "--group", ns,
				"--query-min", `loki_query_scheduler_inflight_requests{namespace="%s",quantile="0.75"}`,
				"--query-max", `loki_query_scheduler_inflight_requests{namespace="%s",quantile="0.5"}`,
				"--replicas-query", `scaleproof_scheduler_connected_queriers{namespace="%s"}`,
				"--workers", "6", "--range", "10m", "--json")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("recommend-bounds: %v\n%s", err, out)
			}
			var res struct {
				Bounds []struct {
					Name   string `json:"name"`
					Value  int    `json:"value"`
					Inputs []struct {
						What  string   `json:"what"`
						Value *float64 `json:"value"`
					} `json:"inputs"`
				} `json:"bounds"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("recommend-bounds --json: %v\n%s", err, out)
			}
			if len(res.Bounds) != 2 {
				t.Fatalf("recommend-bounds gave %d bounds, want min and max:\n%s", len(res.Bounds), out)
			}
			for _, b := range res.Bounds {
				for _, in := range b.Inputs {
					if in.Value == nil {
						t.Errorf("%s: input %q had no data", b.Name, in.What)
					}
				}
			}
			t.Logf("recommend-bounds on the queue: %s", strings.TrimSpace(string(out)))
			return ctx
		}).
		Teardown(undeploy).
		Feature()
	testenv.Test(t, f)
}

func conditionTrue(o *unstructured.Unstructured, typ string) bool {
	cs, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range cs {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}
