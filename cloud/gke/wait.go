package gke

import (
	"context"
	"fmt"

	container "cloud.google.com/go/container/apiv1"
	"cloud.google.com/go/container/apiv1/containerpb"

	"github.com/scaleproof/scaleproof/cloud"
)

// waitOp polls a Kubernetes Engine operation every PollInterval until it
// is DONE, at most OperationTimeout; op names the step ("create cluster
// x"). A timeout is a *cloud.Error of Kind "timeout" naming op and the
// operation.
func (p *Provider) waitOp(ctx context.Context, cm *container.ClusterManagerClient, op string, o *containerpb.Operation) error {
	name := p.parent() + "/operations/" + o.GetName()
	start := p.now()
	if err := p.pollOp(ctx, op, func() bool { return o.GetStatus() == containerpb.Operation_DONE }, func(ctx context.Context) error {
		got, err := cm.GetOperation(ctx, &containerpb.GetOperationRequest{Name: name})
		if err != nil {
			return cloudErr(op+": poll operation "+o.GetName(), err)
		}
		o = got
		return nil
	}, func() string {
		return fmt.Sprintf("operation %s not done after %s (status %s): raise --operation-timeout or look in the console", o.GetName(), p.o.OperationTimeout, o.GetStatus())
	}); err != nil {
		return err
	}
	p.log.Info("operation done", "op", op, "operation", o.GetName(), "took", p.now().Sub(start).String())
	return opErr(op, o.GetError())
}

// pollLRO polls a google.longrunning operation (Artifact Registry's) every
// PollInterval until done(), at most OperationTimeout.
func (p *Provider) pollLRO(ctx context.Context, op string, done func() bool, poll func(context.Context) error) error {
	return p.pollOp(ctx, op, done, poll, func() string { return "operation not done after " + p.o.OperationTimeout.String() })
}

// pollOp calls poll every PollInterval until done() (asked first) reports
// true, for OperationTimeout at the most. A failed poll ends it with
// cloudErr(op, err) unless ctx has ended; the timeout is a *cloud.Error of
// Kind "timeout" for op, its Msg timeoutMsg() (asked then); a cancel, ctx.Err().
func (p *Provider) pollOp(ctx context.Context, op string, done func() bool, poll func(context.Context) error, timeoutMsg func() string) error {
	asked := false
	return cloud.Poll(ctx, p.o.OperationTimeout, p.o.PollInterval, func(ctx context.Context) (bool, error) {
		if asked {
			if err := poll(ctx); err != nil && ctx.Err() == nil {
				return false, cloudErr(op, err) // as it is if poll classified it
			}
		}
		asked = true
		return done(), nil
	}, func(ctx context.Context) error {
		if ctx.Err() == context.DeadlineExceeded {
			return &cloud.Error{Op: op, Kind: "timeout", Msg: timeoutMsg(), Err: ctx.Err()}
		}
		return ctx.Err()
	})
}
