package gke

import (
	"context"
	"fmt"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"

	"github.com/scaleproof/scaleproof/cloud"
)

// Delete deletes a cluster (its node pools with it), a node pool or a
// repository by its ID and waits until it is gone. Gone already is no
// error. A cluster still busy with an operation (a create cut short by
// Ctrl-C) is retried every PollInterval until OperationTimeout.
func (p *Provider) Delete(ctx context.Context, r cloud.Resource) error {
	_, cm, ar, err := p.clients(ctx)
	if err != nil {
		return err
	}
	op := "delete " + r.String()
	switch r.Kind {
	case "cluster", "node pool":
		call := func(ctx context.Context) (*containerpb.Operation, error) {
			if r.Kind == "cluster" {
				return cm.DeleteCluster(ctx, &containerpb.DeleteClusterRequest{Name: r.ID})
			}
			return cm.DeleteNodePool(ctx, &containerpb.DeleteNodePoolRequest{Name: r.ID})
		}
		deadline := p.now().Add(p.o.OperationTimeout)
		return cloud.Poll(ctx, 0, p.o.PollInterval, func(ctx context.Context) (bool, error) {
			o, err := call(ctx)
			switch {
			case err == nil:
				fmtOut(p.o.Out, "GKE: deleting %s (operation %s)\n", r, o.GetName())
				if err := p.waitOp(ctx, cm, op, o); err != nil && !isNotFound(err) {
					return true, err
				}
				return true, nil
			case isNotFound(err):
				return true, nil
			case isBusy(err) && p.now().Before(deadline):
				p.log.Info("busy; delete again", "resource", r.String(), "err", err)
				return false, nil
			default:
				return true, cloudErr(op, err)
			}
		}, func(ctx context.Context) error { return ctx.Err() })
	case "repository":
		dr, err := ar.DeleteRepository(ctx, &artifactregistrypb.DeleteRepositoryRequest{Name: r.ID})
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return cloudErr(op, err)
		}
		return p.pollLRO(ctx, op, dr.Done, func(ctx context.Context) error { return dr.Poll(ctx) })
	}
	return fmt.Errorf("gke: %s: no such kind of resource here", op)
}
