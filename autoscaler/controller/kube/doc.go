// Package kube is the in-cluster platform of the reference autoscaler: a
// controller.ScaleTarget, a controller.Discovery and an edge.Discovery over
// client-go.
//
// The objects it expects, in one namespace (deploy/ renders them):
//
//   - one worker Deployment per group × zone, named DeploymentName(group,
//     zone) ("worker-<group>-<zone>"), labelled scaleproof.dev/group,
//     scaleproof.dev/zone and app.kubernetes.io/component=worker;
//   - one headless Service per group × zone with the same name and labels and
//     a port named "http"; the EndpointSlice controller copies its labels onto
//     its EndpointSlices, which carry kubernetes.io/service-name=<name>.
//
// Scale goes through the Deployment's scale subresource; before a scale-in it
// sets controller.kubernetes.io/pod-deletion-cost to -1000 on the victims
// the policy chose, so the ReplicaSet removes those pods first. Endpoints and
// Zones read EndpointSlices (ready and not-ready endpoints) and each pod's
// creation time (cached per pod UID).
//
// The API calls it makes are exactly what autoscaler/deploy/kube/rbac.yaml grants.
//
// Must not import: scenarios/, the console package, or anything that opens
// its own connection to the cluster (the caller passes the client).
package kube
