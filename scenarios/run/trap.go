package run

import (
	"context"
	"fmt"
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
		fmt.Fprintln(os.Stderr, "\nscaleproof: interrupted; tearing down (Ctrl-C again to exit now)")
		cancel()
		select {
		case <-sigc:
			if lastWords != "" {
				fmt.Fprintln(os.Stderr, lastWords)
			}
			os.Exit(ExitInterrupted)
		case <-time.After(grace):
		}
	}()
	return ctx, func() { signal.Stop(sigc); cancel() }, intr
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
