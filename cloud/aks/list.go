package aks

import (
	"context"

	"github.com/scaleproof/scaleproof/cloud"
)

// List is every managed cluster, container registry and resource group of
// the subscription, ours and foreign, with their tags (the janitor keeps
// only expired ones of ours). Role assignments carry no tags and are not
// listed: deleting the registry removes the scope they grant. Node resource
// groups (managedBy a cluster) are left out.
func (p *Provider) List(ctx context.Context) ([]cloud.Resource, error) {
	var out []cloud.Resource
	cl := p.clusters.NewListPager(nil)
	for cl.More() {
		page, err := cl.NextPage(ctx)
		if err != nil {
			return out, asError("list managed clusters", err)
		}
		for _, c := range page.Value {
			if c != nil {
				out = append(out, cloud.Resource{Kind: KindCluster, Name: deref(c.Name), ID: deref(c.ID), Labels: labelsOf(c.Tags)})
			}
		}
	}
	rl := p.registries.NewListPager(nil)
	for rl.More() {
		page, err := rl.NextPage(ctx)
		if err != nil {
			return out, asError("list container registries", err)
		}
		for _, r := range page.Value {
			if r != nil {
				out = append(out, cloud.Resource{Kind: KindRegistry, Name: deref(r.Name), ID: deref(r.ID), Labels: labelsOf(r.Tags)})
			}
		}
	}
	gl := p.groups.NewListPager(nil)
	for gl.More() {
		page, err := gl.NextPage(ctx)
		if err != nil {
			return out, asError("list resource groups", err)
		}
		for _, g := range page.Value {
			// A group another resource manages (managedBy: a cluster's
			// node resource group, which AKS tags with the cluster's tags
			// and deletes with it) is not ours to list or delete.
			if g != nil && deref(g.ManagedBy) == "" {
				out = append(out, cloud.Resource{Kind: KindResourceGroup, Name: deref(g.Name), ID: deref(g.ID), Labels: labelsOf(g.Tags)})
			}
		}
	}
	return out, nil
}
