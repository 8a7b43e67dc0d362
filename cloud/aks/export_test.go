package aks

// Actions is exported to the package's tests only (aks_test checks a run
// needs no action it leaves out): nothing in the product reads it.

// Actions is the Azure RBAC actions (and the ACR push data action) the
// calls need, in order, without repeats: a custom role of these, plus
// "Azure Kubernetes Service RBAC Cluster Admin" on the cluster for the
// deploy, is enough for a run.
func Actions() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range calls {
		if c.action != "" && !seen[c.action] {
			seen[c.action] = true
			out = append(out, c.action)
		}
	}
	return out
}
