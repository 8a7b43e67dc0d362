// Package kube ships the Kubernetes manifests of the reference system as a
// kustomize tree (Manifests: base/ plus overlays/quick and
// overlays/published, rendered from Go by autoscaler/deploy/render) and, for the tests
// here, base/rbac.yaml on its own (RBAC): the console's ServiceAccount, Role
// and RoleBinding, which allow exactly what the console uses. The tests
// parse it into rbacv1 objects, check the rules are exactly the expected
// ones, and check that every API call autoscaler/controller/kube makes is
// allowed.
//
// LoadShardJob renders loadshard/job.yaml, a distributed load's objects (an
// Indexed Job of shards running `scaleproof load-shard`, a ConfigMap the
// harness sets to stop them, and the RBAC that lets the pods read exactly
// that ConfigMap), with text/template.
//
// Must not import anything but the standard library (tests excepted).
package kube
