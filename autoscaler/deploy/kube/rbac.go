package kube

import _ "embed"

// RBAC is rbac.yaml: the console's ServiceAccount, Role and RoleBinding
// (namespace "scaleproof"; the harness rewrites it for another one).
//
//go:embed base/rbac.yaml
var RBAC []byte
