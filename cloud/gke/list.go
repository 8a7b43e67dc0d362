package gke

import (
	"context"
	"errors"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"
	"google.golang.org/api/iterator"

	"github.com/scaleproof/scaleproof/cloud"
)

// List returns every cluster in the location (each node pool beside it,
// with the cluster's labels) and every repository in its region, ours and
// foreign, with their labels.
func (p *Provider) List(ctx context.Context) ([]cloud.Resource, error) {
	_, cm, ar, err := p.clients(ctx)
	if err != nil {
		return nil, err
	}
	var out []cloud.Resource
	resp, err := cm.ListClusters(ctx, &containerpb.ListClustersRequest{Parent: p.parent()})
	if err != nil {
		return nil, cloudErr("list clusters in "+p.parent(), err)
	}
	for _, c := range resp.GetClusters() {
		id := p.parent() + "/clusters/" + c.GetName()
		out = append(out, cloud.Resource{Kind: "cluster", Name: c.GetName(), ID: id, Labels: c.GetResourceLabels()})
		for _, np := range c.GetNodePools() {
			l := np.GetConfig().GetResourceLabels()
			if len(l) == 0 {
				l = c.GetResourceLabels()
			}
			out = append(out, cloud.Resource{Kind: "node pool", Name: np.GetName(), ID: id + "/nodePools/" + np.GetName(), Labels: l})
		}
	}
	parent := "projects/" + p.o.Project + "/locations/" + p.region()
	it := ar.ListRepositories(ctx, &artifactregistrypb.ListRepositoriesRequest{Parent: parent})
	for {
		r, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return out, cloudErr("list repositories in "+parent, err)
		}
		out = append(out, cloud.Resource{Kind: "repository", Name: lastPart(r.GetName()), ID: r.GetName(), Labels: r.GetLabels()})
	}
	return out, nil
}

func lastPart(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return s[i+1:]
		}
	}
	return s
}
