package gke

import (
	"context"
	"fmt"
	"time"

	container "cloud.google.com/go/container/apiv1"
	"cloud.google.com/go/container/apiv1/containerpb"

	"github.com/scaleproof/scaleproof/cloud"
)

// waitOp polls a Kubernetes Engine operation every PollInterval until it
// is DONE, at most OperationTimeout; op names the step ("create cluster
// x"). A timeout is a *cloud.Error of Kind "timeout" naming op and the
// operation.
func (p *Provider) waitOp(ctx context.Context, cm *container.ClusterManagerClient, op string, o *containerpb.Operation) error {
	ctx, cancel := context.WithTimeout(ctx, p.o.OperationTimeout)
	defer cancel()
	name := p.parent() + "/operations/" + o.GetName()
	start := p.now()
	t := time.NewTicker(p.o.PollInterval)
	defer t.Stop()
	for o.GetStatus() != containerpb.Operation_DONE {
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return &cloud.Error{Op: op, Kind: "timeout",
					Msg: fmt.Sprintf("operation %s not done after %s (status %s): raise --operation-timeout or look in the console", o.GetName(), p.o.OperationTimeout, o.GetStatus()),
					Err: ctx.Err()}
			}
			return ctx.Err()
		case <-t.C:
		}
		got, err := cm.GetOperation(ctx, &containerpb.GetOperationRequest{Name: name})
		if err != nil {
			if ctx.Err() != nil {
				continue // the select above says which
			}
			return cloudErr(op+": poll operation "+o.GetName(), err)
		}
		o = got
	}
	p.log.Info("operation done", "op", op, "operation", o.GetName(), "took", p.now().Sub(start).String())
	return opErr(op, o.GetError())
}
