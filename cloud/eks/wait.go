package eks

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/cloud"
)

// poll calls check every PollInterval until it reports done or fails, for at
// most OperationTimeout; op names the operation ("create cluster x") and
// check returns the state it saw ("CREATING"), which the timeout error
// quotes.
func (p *Provider) poll(ctx context.Context, op string, check func(ctx context.Context) (done bool, state string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, p.o.OperationTimeout)
	defer cancel()
	t := time.NewTicker(p.o.PollInterval)
	defer t.Stop()
	state := "not yet read"
	for {
		done, s, err := check(ctx)
		if s != "" {
			state = s
		}
		if err != nil {
			if ctx.Err() == nil {
				return err
			}
		} else if done {
			return nil
		}
		select {
		case <-ctx.Done():
			if parent := context.Cause(ctx); parent == context.Canceled {
				return &cloud.Error{Op: op, Kind: "other", Msg: "cancelled while " + state, Err: ctx.Err()}
			}
			return &cloud.Error{Op: op, Kind: "timeout",
				Msg: fmt.Sprintf("not finished after %s (last state %s)", p.o.OperationTimeout, state), Err: ctx.Err()}
		case <-t.C:
		}
	}
}
