package kind

import (
	"fmt"
	"os"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
)

// clusters is the part of kind's Go API the platform uses (a fake in the
// unit tests; kind's *cluster.Provider in a real run).
type clusters interface {
	Create(name string, cfg *v1alpha4.Cluster, kubeconfig string) error
	Delete(name, kubeconfig string) error
	List() ([]string, error)
	CollectLogs(name, dir string) error
	LoadImageArchive(name, archive string) error
}

// kindClusters is kind's own provider.
type kindClusters struct{ p *kindcluster.Provider }

func (k kindClusters) Create(name string, cfg *v1alpha4.Cluster, kubeconfig string) error {
	return k.p.Create(name,
		kindcluster.CreateWithV1Alpha4Config(cfg),
		kindcluster.CreateWithKubeconfigPath(kubeconfig),
		kindcluster.CreateWithWaitForReady(0),
		kindcluster.CreateWithDisplayUsage(false),
		kindcluster.CreateWithDisplaySalutation(false))
}

func (k kindClusters) Delete(name, kubeconfig string) error { return k.p.Delete(name, kubeconfig) }
func (k kindClusters) List() ([]string, error)              { return k.p.List() }
func (k kindClusters) CollectLogs(name, dir string) error   { return k.p.CollectLogs(name, dir) }

// LoadImageArchive loads one docker-archive into every node with kind's
// image-archive loading (ctr import inside the node).
func (k kindClusters) LoadImageArchive(name, archive string) error {
	nodes, err := k.p.ListNodes(name)
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		return fmt.Errorf("cluster %s has no nodes", name)
	}
	for _, n := range nodes {
		f, err := os.Open(archive)
		if err != nil {
			return err
		}
		err = nodeutils.LoadImageArchive(n, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("load %s into %s: %w", archive, n.String(), err)
		}
	}
	return nil
}
