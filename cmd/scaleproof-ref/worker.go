package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
	"github.com/scaleproof/scaleproof/autoscaler/worker"
)

// versionRE is what a worker's --version may be (a label value).
var versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

type workerFlags struct {
	listen, id       string
	version          string
	maxInflight      int
	workMS           int
	cpuPerCall       int
	drain, bootDelay time.Duration
	drainDelay       time.Duration
	fault            string
	faults           faults.Set
}

func newWorkerCmd() *cobra.Command {
	var o workerFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "An MCP server with one tool, work, and an in-flight limit (429 beyond it)",
		Long: `worker serves MCP (streamable HTTP, stateless, JSON responses) on POST /mcp with
one tool, "work" {"ms": N}, that holds the call N ms (default --work-ms, at most
60000) and answers "worked N ms on ID". A bare tools/call with no initialize works.
With --cpu-per-call M each held call also burns about M millicores (a duty
cycle of spin and sleep), so that CPU use follows in-flight calls: the signal
of a HorizontalPodAutoscaler on the CPU resource metric.

As Ramen 0.7.5's autoscaling notes have it ("How it decides"): each worker reports its in-flight calls, the in-flight
limit it runs with (` + worker.EnvMaxInflight + `, default 32) and its total call count, on
GET /metrics as ` + worker.MetricInflight + `, ` + worker.MetricInflightLimit + `,
` + worker.MetricCallsTotal + ` (also ` + worker.MetricReady + ` and ` + worker.MetricRefusedTotal + `).
A POST beyond the limit is refused with 429, Retry-After: 1 and a JSON-RPC error:
the node refusing calls until the next worker is ready, the intended back-pressure.

Also GET /readyz (503 during --boot-delay and while draining) and GET /livez.

Signals (sent only by scaleproof's local platform, which owns the process, for
its fault action "a worker whose readiness fails while it still answers calls"):
SIGUSR1 turns /readyz to 503 while /mcp keeps serving; SIGUSR2 turns it back.

Environment (used when --max-inflight is not given):
  ` + worker.EnvMaxInflight + `  the in-flight limit`,
		Args: noArgs("worker"),
		RunE: checkedRun(&o, o.resolve, runWorker),
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:0", "listen address (port 0 picks a free port; the bound address is announced on stdout)")
	f.StringVar(&o.id, "id", "", "worker name in results, errors and logs (default hostname-pid)")
	f.StringVar(&o.version, "version", worker.DefaultVersion,
		"this worker's version, on /metrics as "+worker.MetricInfo+`{version}: "stable", or "canary" for a zone's canary worker`)
	f.IntVar(&o.maxInflight, "max-inflight", worker.DefaultMaxInflight,
		"in-flight limit: POST /mcp calls admitted at once, more get 429")
	f.IntVar(&o.workMS, "work-ms", int(worker.DefaultWork.Milliseconds()), "milliseconds a work call lasts when it names no ms (0..60000)")
	f.IntVar(&o.cpuPerCall, "cpu-per-call", 0, "CPU cost of a work call in millicores (0..1000): while a call is held it spins for that share of each 10 ms and sleeps the rest, so this pod's CPU use follows its in-flight calls and the HPA's CPU resource metric sees the load (n calls at m use about n*m millicores); 0 = the call only sleeps")
	f.DurationVar(&o.drain, "drain", 40*time.Second, "on SIGTERM, /readyz turns 503 and in-flight calls finish for up to this")
	f.DurationVar(&o.bootDelay, "boot-delay", 0, "/readyz answers 503 until this long after start (a slow-starting worker)")
	f.DurationVar(&o.drainDelay, "drain-delay", 0,
		"on SIGTERM, keep accepting calls this long (with /readyz 503) before the drain closes the listener: the time the edge needs to drop this worker from its routes")
	addFaultFlag(f, &o.fault, "worker")
	return cmd
}

// resolve applies the environment to --max-inflight when it is not given and checks every value.
func (o *workerFlags) resolve(cmd *cobra.Command) error {
	var errs []error
	if v, ok := os.LookupEnv(worker.EnvMaxInflight); ok && !cmd.Flags().Changed("max-inflight") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("%w: %s=%q: want an integer >= 1", errUsage, worker.EnvMaxInflight, v)
		}
		o.maxInflight = n
	}
	if o.maxInflight < 1 {
		errs = append(errs, fmt.Errorf("in-flight limit %d: want >= 1", o.maxInflight))
	}
	if o.workMS < 0 || o.workMS > int(worker.MaxWork.Milliseconds()) {
		errs = append(errs, fmt.Errorf("--work-ms %d: want 0..%d", o.workMS, worker.MaxWork.Milliseconds()))
	}
	if o.cpuPerCall < 0 || o.cpuPerCall > worker.MaxCPUPerCall {
		errs = append(errs, fmt.Errorf("--cpu-per-call %d: want 0..%d millicores", o.cpuPerCall, worker.MaxCPUPerCall))
	}
	errs = append(errs, wantPositive("--drain", o.drain))
	errs = append(errs, wantNonNegative("--boot-delay", o.bootDelay))
	errs = append(errs, wantNonNegative("--drain-delay", o.drainDelay))
	if !versionRE.MatchString(o.version) {
		errs = append(errs, fmt.Errorf("--version %q: want 1 to 63 letters, digits, '.', '_' or '-'", o.version))
	}
	var err error
	o.faults, err = parseFaults(o.fault, "worker")
	return usageErrors(append(errs, err))
}

func runWorker(ctx context.Context, o workerFlags) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("server", "worker")
	work := time.Duration(o.workMS) * time.Millisecond
	if o.workMS == 0 {
		work = time.Nanosecond // --work-ms 0 means calls return at once, not the package default
	}
	w := worker.New(worker.Config{
		ID: o.id, Version: o.version, MaxInflight: o.maxInflight, Work: work, BootDelay: o.bootDelay, CPUPerCall: o.cpuPerCall, Logger: log,
		AdmitOverLimit: o.faults.On(faults.WorkerAdmitsOverLimit),
	})
	ln, err := serve.Listen(o.listen)
	if err != nil {
		return err
	}
	log = log.With("worker", w.ID())
	log.Info("worker starting", "listen", ln.Addr().String(), "version", w.Version(), "max_inflight", w.Limit(),
		"work_ms", o.workMS, "cpu_per_call_millicores", w.CPUPerCall(), "boot_delay", o.bootDelay.String(), "drain", o.drain.String(),
		"drain_delay", o.drainDelay.String(), "faults", o.faults.String())
	sigCtx, stopSignals := context.WithCancel(ctx)
	defer stopSignals()
	w.HandleReadinessSignals(sigCtx) // before the announce line: the platform may signal as soon as it lists the worker
	drain, drainDelay := o.drain, o.drainDelay
	if o.faults.On(faults.NoDrain) {
		// The planted bug: exit at SIGTERM, cutting the calls in flight.
		drain, drainDelay = time.Nanosecond, 0
	}
	return serve.Run(ctx, ln, w.Handler(), w.Health(), serve.Options{
		Addr: o.listen, Drain: drain, DrainDelay: drainDelay, Logger: log,
		WriteTimeout: worker.MaxWork + time.Minute, // above the longest work call
	})
}
