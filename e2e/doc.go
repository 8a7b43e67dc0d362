// Package e2e holds the Kubernetes end-to-end specs (ginkgo v2 + gomega):
// the reference system deployed with the kubeconfig platform onto a real
// cluster (kind's, from `make e2e`), then the five-scenario load test of Ramen 0.7.5's autoscaling notes with
// their facts as assertions and the cluster-side promises: the viewer key
// refused, the console's ServiceAccount denied what it does not need
// (SubjectAccessReview), a worker pod deleted under load replaced with the
// count unchanged, the policy's victim the pod that goes on scale-in, an HPA
// on a worker Deployment removed, and a console rollout under load that
// drops neither /readyz nor a call nor any state.
//
// The specs build only with -tags e2e (so `make test` never runs them) and
// need, in the environment, either
//
//	SCALEPROOF_E2E_KIND=1      make a kind cluster of their own (kind/, podman or Docker; the node image
//	                           built once and cached), load the image built from this checkout, delete it after
//	SCALEPROOF_E2E_KIND_PROVIDER  auto (default), docker or podman
//
// or an existing cluster:
//
//	SCALEPROOF_E2E_KUBECONFIG  the cluster's kubeconfig
//	SCALEPROOF_E2E_IMAGE       the exact scaleproof-ref image already on its nodes
//	SCALEPROOF_E2E_NODE_HOST   optional loopback address the NodePorts are mapped to (kind: 127.0.0.1),
//	SCALEPROOF_E2E_CONSOLE_PORT, SCALEPROOF_E2E_EDGE_PORT  the host ports mapped to 30081 and 30080
//	ARTIFACTS                  where junit_e2e.xml and the pods' logs go (default: a temp folder)
package e2e
