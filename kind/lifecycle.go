package kind

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	"sigs.k8s.io/kind/pkg/exec"
)

// clusters is the part of kind's Go API the platform uses (a fake in the
// unit tests; kind's *cluster.Provider in a real run).
type clusters interface {
	Create(name string, cfg *v1alpha4.Cluster, kubeconfig string) error
	Delete(name, kubeconfig string) error
	List() ([]string, error)
	CollectLogs(name, dir string) error
	LoadImageArchive(name, archive string) error
	Confine(name string, cidrs []string) error
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

// ConfineRules are the iptables rules (as arguments after "iptables")
// Confine inserts in a node for the cluster's Service range: a packet
// still addressed to a ClusterIP after kube-proxy's NAT is refused, from a
// pod (FORWARD) or from the node itself (OUTPUT). kube-proxy translates
// every ClusterIP it has written rules for to a pod or the API server, so
// only a packet nothing in the cluster routes matches: a ClusterIP no
// Service holds, or one dialled in the second before kube-proxy wrote its
// rules. Without them such a packet leaves the node for the host's
// network, and whatever answers there (seen here: an HTTP 404 from the
// host's own egress) is taken for the Service, on a kept-alive connection.
// (An out-interface match would be wrong in OUTPUT: there it is the
// interface routed before the NAT.)
func ConfineRules(cidr string) [][]string {
	return [][]string{
		{"-I", "FORWARD", "1", "-d", cidr, "-j", "REJECT"},
		{"-I", "OUTPUT", "1", "-d", cidr, "-j", "REJECT"},
	}
}

// Confine inserts ConfineRules for each CIDR into every node.
func (k kindClusters) Confine(name string, cidrs []string) error {
	nodes, err := k.p.ListNodes(name)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		for _, c := range cidrs {
			for _, r := range ConfineRules(c) {
				if out, err := exec.CombinedOutputLines(n.Command("iptables", r...)); err != nil {
					return fmt.Errorf("confine %s on %s: iptables %s: %w: %s", c, n.String(), strings.Join(r, " "), err, strings.Join(out, " "))
				}
			}
		}
	}
	return nil
}
