package eks

import (
	"context"
	"fmt"

	"github.com/scaleproof/scaleproof/cloud"
)

// poll calls check every PollInterval until it reports done or fails, for at
// most OperationTimeout; op names the operation ("create cluster x") and
// check returns the state it saw ("CREATING"), which the timeout error
// quotes.
func (p *Provider) poll(ctx context.Context, op string, check func(ctx context.Context) (done bool, state string, err error)) error {
	state := "not yet read"
	return cloud.Poll(ctx, p.o.OperationTimeout, p.o.PollInterval, func(ctx context.Context) (bool, error) {
		done, s, err := check(ctx)
		if s != "" {
			state = s
		}
		if err != nil && ctx.Err() != nil {
			return false, nil // the end of ctx is the answer
		}
		return done, err
	}, func(ctx context.Context) error {
		if ctx.Err() == context.Canceled { // the caller's cancel, whatever its cause; else a deadline (ours, or the caller's)
			return &cloud.Error{Op: op, Kind: "other", Msg: "cancelled while " + state, Err: ctx.Err()}
		}
		return &cloud.Error{Op: op, Kind: "timeout",
			Msg: fmt.Sprintf("not finished after %s (last state %s)", p.o.OperationTimeout, state), Err: ctx.Err()}
	})
}
