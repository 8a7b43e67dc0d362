package kind

import "path/filepath"

func kubeconfigPath(artifacts string) string {
	if artifacts == "" {
		return ""
	}
	p, err := filepath.Abs(filepath.Join(artifacts, "kubeconfig"))
	if err != nil {
		return filepath.Join(artifacts, "kubeconfig")
	}
	return p
}

// Kubeconfig is the path of the cluster's kubeconfig (in the artifacts
// folder; written by Up). kubectl --kubeconfig PATH reaches the cluster
// while it is up (and after a run with --keep).
func (k *Kind) Kubeconfig() string { return k.kubeconfig }
