package eks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/cloud"
)

// TestPollEnds: poll's end says why it ended. A cancel by the caller is
// "cancelled while <last state>" whatever cause the cancel carries (a
// signal's, a second Ctrl-C's), and only the operation's own timeout is
// Kind "timeout".
func TestPollEnds(t *testing.T) {
	notYet := func(ctx context.Context) (bool, string, error) { return false, "CREATING", nil }
	for _, tc := range []struct {
		name     string
		timeout  time.Duration
		cancel   func(context.CancelCauseFunc)
		wantKind string
		wantMsg  string
	}{
		{"cancel", time.Hour, func(c context.CancelCauseFunc) { c(nil) }, "other", "cancelled while CREATING"},
		{"cancel with a cause", time.Hour, func(c context.CancelCauseFunc) { c(errors.New("interrupted twice")) }, "other", "cancelled while CREATING"},
		{"own timeout", 20 * time.Millisecond, nil, "timeout", "not finished after 20ms (last state CREATING)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Provider{o: cloud.Options{OperationTimeout: tc.timeout, PollInterval: time.Millisecond}}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			check := notYet
			if tc.cancel != nil {
				check = func(ctx context.Context) (bool, string, error) {
					tc.cancel(cancel) // the caller cancels during the first look
					return notYet(ctx)
				}
			}
			err := p.poll(ctx, "create cluster x", check)
			var ce *cloud.Error
			if !errors.As(err, &ce) || ce.Kind != tc.wantKind || !strings.Contains(ce.Msg, tc.wantMsg) {
				t.Fatalf("poll: %v (%#v), want Kind %q and %q", err, ce, tc.wantKind, tc.wantMsg)
			}
		})
	}
}
