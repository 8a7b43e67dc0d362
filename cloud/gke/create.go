package gke

import (
	"context"
	"errors"

	"cloud.google.com/go/container/apiv1/containerpb"

	"github.com/scaleproof/scaleproof/cloud"
)

// Create creates the cluster name, labelled, with one node pool of
// MachineType whose autoscaling (NodeMin..NodeMax nodes) the GKE cluster
// autoscaler uses, waits for the operation, and reads the endpoint and CA.
// Once the create call has been accepted the cluster (and its node pool)
// are in Created, whatever happens after.
func (p *Provider) Create(ctx context.Context, name string, labels map[string]string) (cloud.Cluster, error) {
	c := cloud.Cluster{Name: name}
	op := "create cluster " + name
	_, cm, _, err := p.clients(ctx)
	if err != nil {
		return c, err
	}
	min := int32(max(p.o.NodeMin, 1))
	req := &containerpb.CreateClusterRequest{
		Parent: p.parent(),
		Cluster: &containerpb.Cluster{
			Name:           name,
			Description:    "scaleproof run " + labels[cloud.LabelRunID] + "; deleted by the run's teardown or by `scaleproof cloud janitor` after " + cloud.LabelExpiresAt,
			ResourceLabels: labels,
			NodePools: []*containerpb.NodePool{{
				Name:             NodePoolName,
				InitialNodeCount: min,
				Config:           &containerpb.NodeConfig{MachineType: p.o.MachineType, ResourceLabels: labels, Labels: map[string]string{"scaleproof": "node"}},
				Autoscaling:      &containerpb.NodePoolAutoscaling{Enabled: true, MinNodeCount: int32(p.o.NodeMin), MaxNodeCount: int32(p.o.NodeMax)},
				Management:       &containerpb.NodeManagement{AutoRepair: true, AutoUpgrade: true},
			}},
		},
	}
	o, err := cm.CreateCluster(ctx, req)
	if err != nil {
		return c, cloudErr(op, err)
	}
	id := p.parent() + "/clusters/" + name
	c.Created = []cloud.Resource{
		{Kind: "cluster", Name: name, ID: id, Labels: labels},
		{Kind: "node pool", Name: NodePoolName, ID: id + "/nodePools/" + NodePoolName, Labels: labels},
	}
	fmtOut(p.o.Out, "GKE: creating cluster %s in %s (operation %s; usually 5 to 8 minutes)\n", name, p.o.Location, o.GetName())
	if err := p.waitOp(ctx, cm, op, o); err != nil {
		return c, err
	}
	got, err := p.get(ctx, name)
	if err != nil {
		return c, cloudErr("read cluster "+name, err)
	}
	if got.GetStatus() != containerpb.Cluster_RUNNING {
		return c, &cloud.Error{Op: op, Kind: "other", Msg: "cluster is " + got.GetStatus().String() + ": " + got.GetStatusMessage()}
	}
	c.Server, c.CAData, err = endpoint(got)
	return c, err
}

func (p *Provider) get(ctx context.Context, name string) (*containerpb.Cluster, error) {
	_, cm, _, err := p.clients(ctx)
	if err != nil {
		return nil, err
	}
	return cm.GetCluster(ctx, &containerpb.GetClusterRequest{Name: p.parent() + "/clusters/" + name})
}

var errNoEndpoint = errors.New("the cluster has no endpoint yet")
