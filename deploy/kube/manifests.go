package kube

import "embed"

// Manifests holds the kustomize tree of the reference system: base/ (the
// published settings of Ramen 0.7.5's autoscaling notes),
// overlays/quick, overlays/published, components/canary (the console
// runs a canary Deployment beside each zone's workers) and components/queue
// (the queue workload: a query scheduler and the queriers pulling from it). Render it with
// deploy/render, which sets the namespace and the image's exact tag.
//
//go:embed base overlays components
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
