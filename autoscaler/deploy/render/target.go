package render

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/scheduler"
)

// The autoscalers a target run judges (TargetParams.Kind) and the
// workloads they scale (TargetParams.Workload).
const (
	KindHPA        = "hpa"    // the cluster's own HorizontalPodAutoscaler, CPU utilisation
	KindKEDA       = "keda"   // a KEDA ScaledObject with a Prometheus trigger
	WorkloadWorker = "worker" // the reference worker: Deployment scaleproof-target
	WorkloadQueue  = "queue"  // the scheduler and its queriers: Deployment scaleproof-querier
)

// TargetParams choose what Target renders.
type TargetParams struct {
	// Profile is "quick" or "published".
	Profile string
	// Namespace is the run's namespace, required: the trigger's query and
	// the ScaledObject's serverAddress name it.
	Namespace string
	// Image is the exact reference of the scaleproof-ref image; never :latest.
	Image string
	// Kind is KindHPA or KindKEDA; Workload WorkloadWorker or WorkloadQueue.
	Kind, Workload string
}

func (p TargetParams) check() error {
	if err := (Params{Profile: p.Profile, Namespace: p.Namespace, Image: p.Image}).check(); err != nil {
		return err
	}
	if p.Namespace == "" {
		return fmt.Errorf("render: target: no namespace")
	}
	if p.Kind != KindHPA && p.Kind != KindKEDA {
		return fmt.Errorf("render: target kind %q: want %s or %s", p.Kind, KindHPA, KindKEDA)
	}
	if p.Workload != WorkloadWorker && p.Workload != WorkloadQueue {
		return fmt.Errorf("render: target workload %q: want %s or %s", p.Workload, WorkloadWorker, WorkloadQueue)
	}
	return nil
}

// TargetDeployment is the scale target's Deployment for a workload:
// scaleproof-target (worker) or scaleproof-querier (queue).
func TargetDeployment(workload string) string {
	if workload == WorkloadQueue {
		return deploykube.QuerierName
	}
	return deploykube.TargetName
}

// TargetLoadService is the Service the load goes to (NodePort
// deploykube.TargetNodePort, port 80): scaleproof-target (worker) or
// scaleproof-scheduler (queue).
func TargetLoadService(workload string) string {
	if workload == WorkloadQueue {
		return deploykube.SchedulerName
	}
	return deploykube.TargetName
}

// PrometheusAddress is the run's Prometheus as KEDA's operator (in its own
// namespace) reaches it: http://prometheus.<namespace>.svc:9090.
func PrometheusAddress(namespace string) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", deploykube.PrometheusName, namespace, deploykube.PrometheusPort)
}

// TargetQuery is the ScaledObject's Prometheus query for a workload in
// namespace: the sum of the workers' in-flight gauge
// (sum(scaleproof_worker_inflight{namespace="NS"})) for the worker
// workload, the post's trigger on the scheduler's in-flight summary
// (scheduler.PostQuery) for the queue workload.
func TargetQuery(namespace, workload string) string {
	if workload == WorkloadQueue {
		return scheduler.PostQuery(namespace)
	}
	return fmt.Sprintf(`sum(scaleproof_worker_inflight{namespace=%q})`, namespace)
}

// Target returns the objects of a target run (autoscaler/deploy/kube's targets/):
// the Namespace, the two roles (ServiceAccounts, Roles, RoleBindings
// scaleproof-target-admin and -viewer), the workload (worker: Deployment
// and NodePort Service scaleproof-target; queue: components/queue with the
// scheduler's Service as that NodePort) and its autoscaler (hpa: the
// HorizontalPodAutoscaler scaleproof-target on CPU; keda: the ScaledObject
// scaleproof-target with a Prometheus trigger at PrometheusAddress and
// TargetQuery), at the profile's numbers. No Deployment carries the
// labels app.kubernetes.io/component: worker (the console deletes an HPA
// on those). The run's Prometheus is separate (TargetPrometheus). Bad
// params are an error naming the field.
func Target(p TargetParams) ([]*unstructured.Unstructured, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	comps := []string{"targets/rbac"}
	if p.Workload == WorkloadQueue {
		comps = append(comps, "components/queue", "targets/"+p.Kind, "targets/queue")
	} else {
		comps = append(comps, "targets/worker", "targets/"+p.Kind)
	}
	if p.Profile == "quick" {
		comps = append(comps, "targets/quick/"+p.Workload)
	}
	top := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"namespace: " + p.Namespace + "\n" +
		"resources:\n  - base/namespace.yaml\n" +
		"components:\n  - " + strings.Join(comps, "\n  - ") + "\n"
	i := strings.LastIndex(p.Image, ":")
	top += "images:\n  - name: " + deploykube.ImageName + "\n    newName: " + p.Image[:i] + "\n    newTag: \"" + p.Image[i+1:] + "\"\n"
	if p.Kind == KindKEDA {
		addr, _ := json.Marshal(PrometheusAddress(p.Namespace))
		query, _ := json.Marshal(TargetQuery(p.Namespace, p.Workload))
		top += "patches:\n  - target: {group: keda.sh, kind: ScaledObject, name: " + deploykube.TargetName + "}\n    patch: |-\n" +
			"      - op: replace\n        path: /spec/triggers/0/metadata/serverAddress\n        value: " + string(addr) + "\n" +
			"      - op: replace\n        path: /spec/triggers/0/metadata/query\n        value: " + string(query) + "\n"
	}
	return kustomize("target", top)
}

// TargetRBAC returns only the two roles (targets/rbac) in namespace: what
// an adopted target (the user's own, judged as it is) gets, and nothing
// else. An empty or invalid namespace is an error.
func TargetRBAC(namespace string) ([]*unstructured.Unstructured, error) {
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("render: target rbac: namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	top := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + namespace +
		"\ncomponents:\n  - targets/rbac\n"
	return kustomize("target rbac", top)
}

// TargetPrometheus returns Prometheus(p) with its Service prometheus of
// type NodePort at deploykube.PrometheusNodePort (kind maps it to
// 127.0.0.1, where the harness reads the trigger's metric as KEDA does).
func TargetPrometheus(p PrometheusParams) ([]*unstructured.Unstructured, error) {
	objs, err := Prometheus(p)
	if err != nil {
		return nil, err
	}
	return prometheusNodePort(objs)
}

// prometheusNodePort makes the Service prometheus among objs a NodePort at
// deploykube.PrometheusNodePort (kind maps it to 127.0.0.1, where the
// harness reads the metric the autoscaler reads). objs are copied first,
// with int64 numbers as kustomize() gives.
func prometheusNodePort(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		j, err := o.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out[i] = &unstructured.Unstructured{}
		if err := out[i].UnmarshalJSON(j); err != nil {
			return nil, err
		}
	}
	found := false
	for _, o := range out {
		if o.GetKind() != "Service" || o.GetName() != deploykube.PrometheusName {
			continue
		}
		ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
		if len(ports) != 1 {
			return nil, fmt.Errorf("render: prometheus: Service %s has %d ports, want 1", o.GetName(), len(ports))
		}
		port, _ := ports[0].(map[string]any)
		port["nodePort"] = int64(deploykube.PrometheusNodePort)
		if err := unstructured.SetNestedSlice(o.Object, ports, "spec", "ports"); err != nil {
			return nil, err
		}
		if err := unstructured.SetNestedField(o.Object, "NodePort", "spec", "type"); err != nil {
			return nil, err
		}
		found = true
	}
	if !found {
		return nil, fmt.Errorf("render: prometheus: no Service %s", deploykube.PrometheusName)
	}
	return out, nil
}

// kustomize builds top (a kustomization at the root of autoscaler/deploy/kube's
// whole tree) with krusty.
func kustomize(what, top string) ([]*unstructured.Unstructured, error) {
	mem := filesys.MakeFsInMemory()
	const root = "/scaleproof"
	err := fs.WalkDir(deploykube.Manifests, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(deploykube.Manifests, name)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join(root, name), b)
	})
	if err != nil {
		return nil, fmt.Errorf("render: %s: copy manifests: %w", what, err)
	}
	if err := mem.WriteFile(path.Join(root, "kustomization.yaml"), []byte(top)); err != nil {
		return nil, fmt.Errorf("render: %s: %w", what, err)
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, root)
	if err != nil {
		return nil, fmt.Errorf("render: kustomize %s: %w", what, err)
	}
	// Through JSON, so that numbers are int64 as the API machinery's
	// unstructured helpers (NestedInt64, DeepCopy) expect, not kyaml's int.
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		j, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("render: %s: %w", r.CurId(), err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("render: %s: %w", r.CurId(), err)
		}
		out = append(out, o)
	}
	return out, nil
}
