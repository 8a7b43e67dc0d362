package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/autoscaler/scheduler"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

type schedulerFlags struct {
	listen                     string
	maxQueue                   int
	window, maxCallTime, drain time.Duration
}

func newSchedulerCmd() *cobra.Command {
	var o schedulerFlags
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "The queue workload's query scheduler: a bounded FIFO of MCP calls that queriers pull",
		Long: `scheduler holds the MCP calls it gets on POST /mcp in one FIFO queue (at most
--max-queue waiting; beyond it 429, Retry-After: 1: the back-pressure) until a
querier's worker pulls one ("scaleproof-ref querier --scheduler URL"); the
querier's answer comes back to the caller as the worker gave it. A bare
tools/call of the work tool, as "scaleproof load --tool work" sends it, works.

As Loki's read path in Grafana's post on autoscaling Loki queries with KEDA: the
in-flight requests (enqueued + running) are sampled every 250 ms into the summary
` + scheduler.MetricInflightRequests + `{quantile="0.5"|"0.75"|"0.99"} over the last
--window, the metric of the post's trigger:
  ` + scheduler.PostQuery("NAMESPACE") + `
with threshold 4 (75 % of a querier's 6 workers, floored). Also on GET /metrics:
` + scheduler.MetricInflight + `, ` + scheduler.MetricQueueLength + `, ` + scheduler.MetricConnectedQueriers + `,
` + scheduler.MetricQuerierCallsTotal + `{querier}, ` + scheduler.MetricRefusedTotal + `,
` + scheduler.MetricRequeuedTotal + ` and ` + scheduler.MetricFailedTotal + `.

A querier that goes away while running a call (killed, cut off) does not lose it:
the call goes back to the front of the queue once; if a second querier goes away
with it too, the caller gets 503 with a JSON-RPC error naming both.

On SIGTERM /readyz turns 503, new calls get 503 (Retry-After: 1), the queued and
running calls are answered for up to --drain, then the querier sessions end.`,
		Args: noArgs("scheduler"),
		RunE: checkedRun(&o, func(*cobra.Command) error { return o.check() }, runScheduler),
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:0", "listen address (port 0 picks a free port; the bound address is announced on stdout)")
	f.IntVar(&o.maxQueue, "max-queue", scheduler.DefaultMaxQueue, "calls waiting for a querier at most; more get 429")
	f.DurationVar(&o.window, "window", scheduler.DefaultWindow, "the span the in-flight summary's quantiles cover (Loki's scheduler: 1m)")
	f.DurationVar(&o.maxCallTime, "max-call-time", scheduler.DefaultMaxCallTime, "a call not answered this long after it arrived gets 504")
	f.DurationVar(&o.drain, "drain", 40*time.Second, "on SIGTERM, queued and running calls are answered for up to this")
	return cmd
}

func (o *schedulerFlags) check() error {
	var errs []error
	if o.maxQueue < 1 {
		errs = append(errs, fmt.Errorf("--max-queue %d: want >= 1", o.maxQueue))
	}
	if o.window < time.Second {
		errs = append(errs, fmt.Errorf("--window %s: want >= 1s", o.window))
	}
	if o.maxCallTime < time.Second {
		errs = append(errs, fmt.Errorf("--max-call-time %s: want >= 1s", o.maxCallTime))
	}
	errs = append(errs, wantPositive("--drain", o.drain))
	return usageErrors(errs)
}

func runScheduler(ctx context.Context, o schedulerFlags) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("server", "scheduler")
	s := scheduler.New(scheduler.Config{MaxQueue: o.maxQueue, Window: o.window, MaxCallTime: o.maxCallTime, Logger: log})
	ln, err := serve.Listen(o.listen)
	if err != nil {
		return err
	}
	log.Info("scheduler starting", "listen", ln.Addr().String(), "max_queue", o.maxQueue, "window", o.window.String(),
		"max_call_time", o.maxCallTime.String(), "drain", o.drain.String())
	sctx, stop := context.WithCancel(context.Background())
	defer stop()
	go s.Run(sctx)
	defer s.Close()
	return serve.Run(ctx, ln, s.Handler(), s.Health(), serve.Options{
		Addr: o.listen, Drain: o.drain, Logger: log,
		OnDrain: func() {
			dctx, cancel := context.WithTimeout(context.Background(), o.drain)
			defer cancel()
			if err := s.Drain(dctx); err != nil {
				log.Info("drain cut short", "err", err.Error())
			}
		},
		WriteTimeout: o.maxCallTime + time.Minute, // above the longest call
	})
}
