package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/autoscaler/querier"
	"github.com/scaleproof/scaleproof/autoscaler/scheduler"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
	"github.com/scaleproof/scaleproof/autoscaler/worker"
)

type querierFlags struct {
	listen, schedulerURL, id string
	workers, workMS          int
	cpuPerCall               int
	drain                    time.Duration
}

func newQuerierCmd() *cobra.Command {
	var o querierFlags
	cmd := &cobra.Command{
		Use:   "querier",
		Short: "The queue workload's querier: pulls calls from a scheduler with a fixed number of workers",
		Long: `querier connects to a scheduler (--scheduler URL) and pulls the MCP calls of its
queue with --workers workers (default 6, as each querier in Grafana's post on
autoscaling Loki queries with KEDA): it never runs more calls at once, the rest
wait in the scheduler's queue and count in its in-flight requests. Each call is
the reference worker's work tool {"ms": N}: it holds the call N ms (default
--work-ms, at most 60000) and answers "worked N ms on ID". With --cpu-per-call M
a running call also burns about M millicores, so that CPU use follows the busy
workers (for a HorizontalPodAutoscaler on the CPU resource metric).

If the querier dies while running calls, the scheduler re-queues them once.
On SIGTERM it stops pulling, finishes and answers the calls it runs (up to
--drain), leaves the scheduler and exits 0.

Its own port (--listen) serves GET /readyz (200 while connected to the scheduler,
503 before and while draining), /livez and /metrics (` + querier.MetricWorkers + `,
` + querier.MetricBusy + `, ` + querier.MetricCallsTotal + `, ` + querier.MetricConnected + `).`,
		Args: noArgs("querier"),
		RunE: checkedRun(&o, func(*cobra.Command) error { return o.check() }, runQuerier),
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:0", "listen address of /readyz, /livez and /metrics (port 0 picks a free port; announced on stdout)")
	f.StringVar(&o.schedulerURL, "scheduler", "", "the scheduler's base URL, e.g. http://scaleproof-scheduler:8080 (required)")
	f.StringVar(&o.id, "id", "", "querier name in the scheduler's per-querier calls, answers and logs (default hostname-pid)")
	f.IntVar(&o.workers, "workers", querier.DefaultWorkers, "workers pulling calls: the most calls this querier runs at once")
	f.IntVar(&o.workMS, "work-ms", int(worker.DefaultWork.Milliseconds()), "milliseconds a work call lasts when it names no ms (0..60000)")
	f.IntVar(&o.cpuPerCall, "cpu-per-call", 0, "CPU cost of a work call in millicores (0..1000): while a call is held it spins for that share of each 10 ms and sleeps the rest, so this pod's CPU use follows its busy workers and the HPA's CPU resource metric sees the load (n calls at m use about n*m millicores); 0 = the call only sleeps")
	f.DurationVar(&o.drain, "drain", 40*time.Second, "on SIGTERM, the running calls finish for up to this")
	return cmd
}

func (o *querierFlags) check() error {
	var errs []error
	if u, err := url.Parse(o.schedulerURL); o.schedulerURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--scheduler %q: want the scheduler's http:// URL", o.schedulerURL))
	}
	if o.workers < 1 || o.workers > querier.MaxWorkers {
		errs = append(errs, fmt.Errorf("--workers %d: want 1..%d", o.workers, querier.MaxWorkers))
	}
	if o.workMS < 0 || o.workMS > int(worker.MaxWork.Milliseconds()) {
		errs = append(errs, fmt.Errorf("--work-ms %d: want 0..%d", o.workMS, worker.MaxWork.Milliseconds()))
	}
	if o.cpuPerCall < 0 || o.cpuPerCall > worker.MaxCPUPerCall {
		errs = append(errs, fmt.Errorf("--cpu-per-call %d: want 0..%d millicores", o.cpuPerCall, worker.MaxCPUPerCall))
	}
	if o.id != "" && !versionRE.MatchString(o.id) {
		errs = append(errs, fmt.Errorf("--id %q: want 1 to 63 letters, digits, '.', '_' or '-'", o.id))
	}
	errs = append(errs, wantPositive("--drain", o.drain))
	return usageErrors(errs)
}

func runQuerier(ctx context.Context, o querierFlags) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("server", "querier")
	work := time.Duration(o.workMS) * time.Millisecond
	if o.workMS == 0 {
		work = time.Nanosecond // --work-ms 0 means calls return at once, not the package default
	}
	q, err := querier.New(querier.Config{Scheduler: o.schedulerURL, ID: o.id, Workers: o.workers, Work: work, CPUPerCall: o.cpuPerCall, Logger: log})
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	ln, err := serve.Listen(o.listen)
	if err != nil {
		return err
	}
	log = log.With("querier", q.ID())
	log.Info("querier starting", "listen", ln.Addr().String(), "scheduler", o.schedulerURL, "workers", q.Workers(),
		"work_ms", o.workMS, "cpu_per_call_millicores", q.CPUPerCall(), "drain", o.drain.String(), "threshold_per_querier", scheduler.PostThreshold)
	// Run's context is the hard stop: it ends only when the drain overruns.
	rctx, hardStop := context.WithCancel(context.Background())
	defer hardStop()
	ran := make(chan error, 1)
	go func() { ran <- q.Run(rctx) }()
	serr := serve.Run(ctx, ln, q.Handler(), q.Health(), serve.Options{Addr: o.listen, Drain: o.drain, Logger: log, OnDrain: q.Drain})
	q.Drain()
	t := time.NewTimer(o.drain)
	defer t.Stop()
	select {
	case err := <-ran:
		if err != nil && serr == nil {
			serr = err
		}
	case <-t.C:
		hardStop()
		<-ran
		if serr == nil {
			serr = fmt.Errorf("drain did not finish within %s: running calls cut (the scheduler re-queues them)", o.drain)
		}
	}
	return serr
}
