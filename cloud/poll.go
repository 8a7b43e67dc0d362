package cloud

import (
	"context"
	"time"
)

// Poll is every provider's wait loop: it calls check at once and then on
// each tick of interval (a ticker: after a check slower than interval the
// next comes at once; interval must be > 0, as the providers' Options
// default it) until check reports done or an error, for timeout at the
// most (0 or less: only ctx bounds it). check gets ctx bounded by timeout.
//
// It returns nil when check reports done, and check's error as it is even
// when ctx has ended (a check that would rather have the end of ctx answer
// returns false, nil then). When ctx ends first (the timeout, or the
// caller's cancel; an end is seen before a tick) it returns stopped(ctx) of
// that bounded ctx: its Err is context.DeadlineExceeded after timeout, and
// context.Cause says why a cancel came.
func Poll(ctx context.Context, timeout, interval time.Duration, check func(ctx context.Context) (done bool, err error), stopped func(ctx context.Context) error) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		done, err := check(ctx)
		if err != nil || done {
			return err
		}
		if ctx.Err() != nil {
			return stopped(ctx)
		}
		select {
		case <-ctx.Done():
			return stopped(ctx)
		case <-t.C:
		}
	}
}
