package cloud

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPoll runs Poll against checks that count their calls. No case sleeps:
// a 1 ms ticker drives the repeats, an hour-long one proves a check that
// needs no tick, and the timeout cases end on Poll's own deadline.
func TestPoll(t *testing.T) {
	errCheck := errors.New("check failed")
	errStopped := errors.New("stopped")
	for _, tc := range []struct {
		name              string
		timeout, interval time.Duration
		// check answers call n (from 1); cancel cancels the caller's ctx.
		check     func(n int, ctx context.Context, cancel context.CancelFunc) (bool, error)
		want      error
		calls     int   // 0: at least one
		stopErr   error // ctx.Err() that stopped saw; nil: not called
		stopCause error
		deadline  bool // check's ctx has a deadline
	}{
		{name: "done at once, no tick waited", timeout: 50 * time.Millisecond, interval: time.Hour,
			check: func(int, context.Context, context.CancelFunc) (bool, error) { return true, nil },
			calls: 1, deadline: true},
		{name: "done on the third tick", timeout: time.Minute, interval: time.Millisecond,
			check: func(n int, _ context.Context, _ context.CancelFunc) (bool, error) { return n == 3, nil },
			calls: 3, deadline: true},
		{name: "check's error as it is", timeout: time.Minute, interval: time.Millisecond,
			check: func(n int, _ context.Context, _ context.CancelFunc) (bool, error) {
				if n == 2 {
					return false, errCheck
				}
				return false, nil
			},
			want: errCheck, calls: 2, deadline: true},
		{name: "check's error after a cancel, as it is", timeout: time.Minute, interval: time.Hour,
			check: func(_ int, _ context.Context, cancel context.CancelFunc) (bool, error) {
				cancel()
				return false, errCheck
			},
			want: errCheck, calls: 1, deadline: true},
		{name: "timeout", timeout: 20 * time.Millisecond, interval: time.Millisecond,
			check: func(int, context.Context, context.CancelFunc) (bool, error) { return false, nil },
			want:  errStopped, stopErr: context.DeadlineExceeded, stopCause: context.DeadlineExceeded, deadline: true},
		{name: "cancel seen before the next tick", timeout: time.Minute, interval: time.Millisecond,
			check: func(n int, _ context.Context, cancel context.CancelFunc) (bool, error) {
				if n == 2 {
					cancel()
				}
				return false, nil
			},
			want: errStopped, calls: 2, stopErr: context.Canceled, stopCause: context.Canceled, deadline: true},
		{name: "no timeout: only ctx bounds it", interval: time.Millisecond,
			check: func(n int, _ context.Context, _ context.CancelFunc) (bool, error) { return n == 3, nil },
			calls: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n, stopErr, stopCause := 0, error(nil), error(nil)
			err := Poll(ctx, tc.timeout, tc.interval, func(ctx context.Context) (bool, error) {
				n++
				if _, ok := ctx.Deadline(); ok != tc.deadline {
					t.Errorf("call %d: ctx has a deadline: %v, want %v", n, ok, tc.deadline)
				}
				return tc.check(n, ctx, cancel)
			}, func(ctx context.Context) error {
				stopErr, stopCause = ctx.Err(), context.Cause(ctx)
				return errStopped
			})
			if err != tc.want {
				t.Errorf("Poll = %v, want %v", err, tc.want)
			}
			if tc.calls > 0 && n != tc.calls || n == 0 {
				t.Errorf("%d checks, want %d", n, tc.calls)
			}
			if stopErr != tc.stopErr || stopCause != tc.stopCause {
				t.Errorf("stopped saw Err %v, Cause %v; want %v, %v", stopErr, stopCause, tc.stopErr, tc.stopCause)
			}
		})
	}
}
