package kind

import (
	"fmt"
	"maps"
	"net"
	"slices"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// ClusterConfigOptions shape the kind cluster config.
type ClusterConfigOptions struct {
	Name  string
	Image string
	// StaticCNI: the node image ships its own CNI config (ours does: kindnetd
	// cannot be fetched), so kind's default CNI is off.
	StaticCNI bool
	// HostPorts maps node NodePorts to host ports, all on 127.0.0.1.
	HostPorts map[int]int
}

// The cluster's own address ranges: kind's defaults, set explicitly so
// the Service range Up confines (ConfineRules) is the one the cluster has.
const (
	PodSubnet     = "10.244.0.0/16"
	ServiceSubnet = "10.96.0.0/16"
)

// ClusterConfig is the tested single-node config: one control-plane node;
// kubelet allowed on cgroup v1 (failCgroupV1: false; kubelet >= 1.35
// otherwise crash-loops "kubelet is configured to not run on a host using
// cgroup v1"); each NodePort mapped to a host port on 127.0.0.1 only.
func ClusterConfig(o ClusterConfigOptions) *v1alpha4.Cluster {
	c := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Name:     o.Name,
		Networking: v1alpha4.Networking{
			DisableDefaultCNI: o.StaticCNI,
			PodSubnet:         PodSubnet,
			ServiceSubnet:     ServiceSubnet,
		},
		KubeadmConfigPatches: []string{"kind: KubeletConfiguration\nfailCgroupV1: false\n"},
	}
	node := v1alpha4.Node{Role: v1alpha4.ControlPlaneRole, Image: o.Image}
	for _, p := range slices.Sorted(maps.Keys(o.HostPorts)) {
		node.ExtraPortMappings = append(node.ExtraPortMappings, v1alpha4.PortMapping{
			ContainerPort: int32(p), HostPort: int32(o.HostPorts[p]), ListenAddress: "127.0.0.1", Protocol: v1alpha4.PortMappingProtocolTCP,
		})
	}
	c.Nodes = []v1alpha4.Node{node}
	return c
}

// RenderClusterConfig is the config as YAML (written to the artifacts).
func RenderClusterConfig(c *v1alpha4.Cluster) ([]byte, error) { return yaml.Marshal(c) }

// freeHostPorts finds n free TCP ports on 127.0.0.1, one per NodePort, so
// two runs at once do not collide (the OS picks; the listeners are closed
// just before kind binds them).
func freeHostPorts(nodePorts []int) (map[int]int, error) {
	out := map[int]int{}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for _, np := range nodePorts {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free host port for NodePort %d: %w", np, err)
		}
		ls = append(ls, l)
		out[np] = l.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}
