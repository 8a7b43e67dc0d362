package render

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// MetricsServerNamespace is where components/metrics-server puts
// metrics-server (upstream's manifests keep it in kube-system; the
// APIService and the RBAC subjects name it).
const MetricsServerNamespace = "kube-system"

// MetricsServerImageName is the image name in metrics-server's own
// manifests (manifests/base), replaced with the exact tag of the image
// built here.
const MetricsServerImageName = "gcr.io/k8s-staging-metrics-server/metrics-server"

// MetricsServer returns the objects of components/metrics-server
// (metrics-server v0.8.0's manifests/base, as its release's components.yaml
// has them: the ServiceAccount, the ClusterRoles system:metrics-server and
// system:aggregated-metrics-reader, their bindings, the Service and the
// Deployment metrics-server in kube-system, the APIService
// v1beta1.metrics.k8s.io), the image at image with imagePullPolicy Never,
// and, for a kind node, --kubelet-insecure-tls and
// --kubelet-preferred-address-types=InternalIP. An image that is not an
// exact REPOSITORY:TAG (or is :latest) is an error.
func MetricsServer(image string) ([]*unstructured.Unstructured, error) {
	return renderComponents("metrics-server", "", []string{"components/metrics-server"}, map[string]string{MetricsServerImageName: image})
}
