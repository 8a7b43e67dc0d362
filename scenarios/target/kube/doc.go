// Package kube holds the targets that live in a Kubernetes cluster, read and
// changed with client-go: the cluster's own HorizontalPodAutoscaler on a
// Deployment (hpa.go: autoscaling/v2 HPA, apps/v1 Deployment scale, core/v1
// Events), KEDA's ScaledObject and the HPA it makes (keda.go, through the
// dynamic client), the contracts their behaviour promises (behavior.go), the
// shared reads (kube.go), and FromRef, which builds one from a platform's
// target reference. They implement scenarios/target's Target, which stays
// free of client-go so the engine and the simulator link none of it.
//
// Must not import scenarios/ (the target scenarios import target).
package kube
