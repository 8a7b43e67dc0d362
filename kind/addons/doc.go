// Package addons installs into a kind cluster the cluster add-ons an
// autoscaler that is not ours needs: metrics-server (kube-system), which the
// cluster's own HorizontalPodAutoscaler reads CPU utilisation from, and
// KEDA's operator and metrics API server (namespace keda), which serve
// external.metrics.k8s.io to that HPA. Images are the ones kind/kedaimage
// built and the kind platform loaded; manifests are autoscaler/deploy/render's.
// Install applies them and waits until they serve, so a --target run never
// starts against an HPA that cannot read its metric.
//
// It imports autoscaler/deploy/render and internal/kubeapply and client-go, never
// scenarios/ or cmd/.
package addons
