package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Trap is the Ctrl-C handling of a run, as k6 and kubetest2 users expect
// it: the first SIGINT or SIGTERM cancels the returned ctx (the caller
// tears down and writes what was measured) and closes interrupted; a
// second one within grace exits the process at once with ExitInterrupted
// (130), after printing lastWords to stderr when it is not "". stop
// releases the signals and ends the watcher; call it when done.
func Trap(parent context.Context, grace time.Duration, lastWords string) (ctx context.Context, stop func(), interrupted <-chan struct{}) {
	ctx, cancel := context.WithCancel(parent)
	intr, release := OnSignal(ctx, os.Stderr, "\nscaleproof: interrupted; tearing down (Ctrl-C again to exit now)", func(sigc <-chan os.Signal) {
		cancel()
		select {
		case <-sigc:
			if lastWords != "" {
				fmt.Fprintln(os.Stderr, lastWords)
			}
			os.Exit(ExitInterrupted)
		case <-time.After(grace):
		}
	})
	return ctx, func() { release(); cancel() }, intr
}

// OnSignal watches SIGINT and SIGTERM until ctx is done: the first one
// closes interrupted, prints note to w and calls then with the channel
// further signals arrive on. release stops the delivery of the signals.
func OnSignal(ctx context.Context, w io.Writer, note string, then func(sigc <-chan os.Signal)) (interrupted <-chan struct{}, release func()) {
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	intr := make(chan struct{})
	go func() {
		select {
		case <-sigc:
		case <-ctx.Done():
			return
		}
		close(intr)
		fmt.Fprintln(w, note)
		then(sigc)
	}()
	return intr, func() { signal.Stop(sigc) }
}

// Interrupted reports whether the channel of Trap is closed.
func Interrupted(interrupted <-chan struct{}) bool {
	select {
	case <-interrupted:
		return true
	default:
		return false
	}
}
