// Package kube ships the Kubernetes manifests of the reference system that
// are written by hand rather than rendered: rbac.yaml, the console's
// ServiceAccount, Role and RoleBinding (issue 5, "RBAC for the console's
// ServiceAccount that allows exactly what it uses"). RBAC holds the file for
// the harness to apply; the tests parse it into rbacv1 objects, check the
// rules are exactly the expected ones, and check that every API call
// autoscaler/controller/kube makes is allowed.
//
// Must not import anything but the standard library (tests excepted).
package kube
