package kube

import "embed"

// Manifests holds the kustomize tree of the reference system: base/ (the
// published settings of Ramen 0.7.5's autoscaling notes),
// overlays/quick, overlays/published, components/canary (the console
// runs a canary Deployment beside each zone's workers) and components/queue
// (the queue workload: a query scheduler and the queriers pulling from it),
// and targets/ (a scale target an autoscaler not ours scales: the worker or
// the queue workload with the cluster's HPA or a KEDA ScaledObject, and the
// admin and viewer roles). Render it with autoscaler/deploy/render, which sets the
// namespace and the image's exact tag.
//
//go:embed base overlays components targets
var Manifests embed.FS

// Names of the objects the harness and the console look up.
const (
	Namespace          = "scaleproof"           // the base's namespace
	ConsoleName        = "scaleproof-console"   // Deployment, Service, ServiceAccount, Role, PDB
	EdgeName           = "scaleproof-edge"      // Deployment, Service, ServiceAccount, Role
	WorkerTemplateName = "scaleproof-worker"    // the PodTemplate new zones' workers are made from
	KeysSecretName     = "scaleproof-keys"      // the console's API keys (keys.json), made per run
	KeysSecretKey      = "keys.json"            // its one key
	StateConfigMapName = "scaleproof-state"     // the console's state on Kubernetes
	LeaseName          = "scaleproof-console"   // the Lease that picks the scheduler's pod
	ImageName          = "scaleproof-ref"       // the image name in the manifests, replaced by the exact tag
	EdgeNodePort       = 30080                  // the edge Service's NodePort (kind maps it to 127.0.0.1)
	ConsoleNodePort    = 30081                  // the console Service's NodePort
	SchedulerName      = "scaleproof-scheduler" // components/queue: the scheduler's Deployment and Service
	QuerierName        = "scaleproof-querier"   // components/queue: the queriers' Deployment (the scale target)
)

// Names in targets/ (a target run: --target hpa|keda).
const (
	// TargetName names the worker workload's Deployment and Service, and
	// the HorizontalPodAutoscaler or ScaledObject (whatever the workload).
	TargetName = "scaleproof-target"
	// TargetAdminName and TargetViewerName name the two roles'
	// ServiceAccount, Role and RoleBinding.
	TargetAdminName  = "scaleproof-target-admin"
	TargetViewerName = "scaleproof-target-viewer"
	// TargetNodePort is the load Service's NodePort: scaleproof-target,
	// or scaleproof-scheduler for the queue workload.
	TargetNodePort = 30082
	// PrometheusNodePort is the run's Prometheus Service's NodePort (keda).
	PrometheusNodePort = 30083
	// PrometheusName is the run's Prometheus Deployment and Service (port 9090).
	PrometheusName = "prometheus"
	// PrometheusPort is its Service's port.
	PrometheusPort = 9090
)
