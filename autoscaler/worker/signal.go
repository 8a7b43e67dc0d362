package worker

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// The signals a worker process (scaleproof-ref worker) takes from the
// harness's own local platform, which owns the process: its fault action
// "a worker whose readiness fails while it still answers calls"
// (platform.Faulter's FailReadiness). Nothing else sends them; a cluster
// platform would need an exec into the pod.
const (
	// SignalFailReadiness turns FailReadiness on: /readyz 503, /mcp served.
	SignalFailReadiness = syscall.SIGUSR1
	// SignalPassReadiness turns it off again (PassReadiness).
	SignalPassReadiness = syscall.SIGUSR2
)

// HandleReadinessSignals applies SignalFailReadiness and
// SignalPassReadiness to w until ctx ends. It listens before it returns, so
// a signal sent after the call is never the default action (which would end
// the process).
func (w *Worker) HandleReadinessSignals(ctx context.Context) {
	c := make(chan os.Signal, 4)
	signal.Notify(c, SignalFailReadiness, SignalPassReadiness)
	go func() {
		defer signal.Stop(c)
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-c:
				if s == SignalFailReadiness {
					w.FailReadiness()
					w.log.Warn("readiness failing on purpose (harness fault action): /readyz 503, calls still served")
				} else {
					w.PassReadiness()
					w.log.Info("readiness passing again (harness fault action ended)")
				}
			}
		}
	}()
}
