package aks

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"

	"github.com/scaleproof/scaleproof/cloud"
)

// Delete deletes r (a cluster, registry, role assignment or resource group,
// by its Azure resource id, so a resource of any group of the subscription)
// and waits until it is gone; already gone is not an error. A resource
// group is deleted only when it carries our LabelManagedBy tag as Azure
// has it now: a group this run did not create is never deleted.
func (p *Provider) Delete(ctx context.Context, r cloud.Resource) error {
	op := "delete " + r.String()
	rg, name, err := p.locate(r)
	if err != nil {
		return &cloud.Error{Op: op, Kind: "other", Msg: err.Error(), Err: err}
	}
	p.progress("deleting %s", r)
	switch r.Kind {
	case KindCluster:
		poller, err := p.clusters.BeginDelete(ctx, rg, name, nil)
		if err == nil {
			_, err = wait(ctx, p, op, poller)
		}
		return gone(op, err)
	case KindRegistry:
		poller, err := p.registries.BeginDelete(ctx, rg, name, nil)
		if err == nil {
			_, err = wait(ctx, p, op, poller)
		}
		return gone(op, err)
	case KindRoleAssignment:
		_, err := p.roles.DeleteByID(ctx, r.ID, nil)
		return gone(op, err)
	case KindResourceGroup:
		got, err := p.groups.Get(ctx, name, nil)
		if err != nil {
			return gone(op, err)
		}
		if labelsOf(got.Tags)[cloud.LabelManagedBy] != cloud.ManagedByValue {
			return &cloud.Error{Op: op, Kind: "other", Msg: "the resource group has no " + cloud.LabelManagedBy + "=" + cloud.ManagedByValue + " tag: scaleproof did not create it and does not delete it"}
		}
		poller, err := p.groups.BeginDelete(ctx, name, nil)
		if err == nil {
			_, err = wait(ctx, p, op, poller)
		}
		return gone(op, err)
	}
	return &cloud.Error{Op: op, Kind: "other", Msg: fmt.Sprintf("aks does not delete a %q", r.Kind)}
}

// gone is err as the error of op, nil when the resource is not there.
func gone(op string, err error) error {
	if err == nil || isNotFound(err) {
		return nil
	}
	return asError(op, err)
}

// locate is r's resource group and name: from its id, else --resource-group
// and r.Name.
func (p *Provider) locate(r cloud.Resource) (group, name string, err error) {
	if r.ID == "" {
		if r.Kind == KindResourceGroup {
			return r.Name, r.Name, nil
		}
		return p.o.ResourceGroup, r.Name, nil
	}
	if r.Kind == KindRoleAssignment {
		return "", r.Name, nil
	}
	id, err := arm.ParseResourceID(r.ID)
	if err != nil {
		return "", "", fmt.Errorf("resource id %q: %w", r.ID, err)
	}
	if r.Kind == KindResourceGroup {
		return id.Name, id.Name, nil
	}
	if !strings.EqualFold(id.SubscriptionID, p.o.Subscription) {
		return "", "", fmt.Errorf("resource id %q is not in subscription %s", r.ID, p.o.Subscription)
	}
	return id.ResourceGroupName, id.Name, nil
}
