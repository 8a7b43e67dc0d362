package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/kubeconfig"
)

// newLoadShardCmd is the hidden `load-shard` subcommand: one shard of a
// distributed load, run by each pod of the Indexed Job the harness makes
// (autoscaler/deploy/kube.LoadShardJob). It is not for people to type.
func newLoadShardCmd() *cobra.Command {
	var specJSON, stopCM, ns string
	index := -1
	c := &cobra.Command{
		Use:    "load-shard",
		Hidden: true,
		Short:  "Run one shard of a distributed load (what the pods of --load-shards run)",
		Long: `load-shard runs shard --index (default $JOB_COMPLETION_INDEX, set by the Job controller)
of the load --spec describes: its share of the VUs or the rate, from the spec's start time.
At the end it writes its result (counts, per-second buckets, HDR histograms) to stdout as
"scaleproof-shard-result" lines, which the harness reads from the pod's log; its own log goes
to stderr. With --stop-configmap (default $SCALEPROOF_STOP_CONFIGMAP) it reads that
ConfigMap in --namespace (default $POD_NAMESPACE) once a second and ends the load
(graceful stop) once its "stop" key is set; SIGTERM does the same.

Exit codes: 0 a result was written (a failed run still writes what it measured), 2 bad
usage or no result could be made.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("index") {
				s := os.Getenv("JOB_COMPLETION_INDEX")
				i, err := strconv.Atoi(s)
				if err != nil {
					return withCode(exitUsage, fmt.Errorf("no --index and $JOB_COMPLETION_INDEX is %q", s))
				}
				index = i
			}
			spec, err := load.DecodeShardSpec(specJSON)
			if err != nil {
				return withCode(exitUsage, err)
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)).With("shard", index, "shards", spec.Shards)
			stop := signalStop(ctx)
			if stopCM != "" {
				kc, err := inClusterClient()
				if err != nil {
					return withCode(exitUsage, fmt.Errorf("--stop-configmap %s: %w", stopCM, err))
				}
				stop = anyOf(ctx, stop, configMapStop(ctx, kc, ns, stopCM, time.Second, log))
			}
			if err := runShard(ctx, cmd.OutOrStdout(), log, spec, index, stop, time.Now); err != nil {
				return withCode(exitUsage, err)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&specJSON, "spec", "", "the load, as JSON (scenarios/load.ShardSpec)")
	f.IntVar(&index, "index", -1, "this shard's index, 0-based (default $JOB_COMPLETION_INDEX)")
	f.StringVar(&stopCM, "stop-configmap", os.Getenv(deploykube.LoadShardStopEnv), "a ConfigMap whose \"stop\" key ends the load")
	f.StringVar(&ns, "namespace", os.Getenv("POD_NAMESPACE"), "the stop ConfigMap's namespace")
	_ = c.MarkFlagRequired("spec")
	return c
}

// runShard runs shard index of spec and writes its result to stdout. The
// error is for a shard that could not make a result at all.
func runShard(ctx context.Context, stdout io.Writer, log *slog.Logger, spec load.ShardSpec, index int, stop <-chan struct{}, now func() time.Time) error {
	var (
		closed *load.Profile
		open   *load.ArrivalProfile
		err    error
		conns  int
	)
	if spec.Closed != nil {
		var p load.Profile
		p, err = spec.Closed.Split(index, spec.Shards)
		closed, conns = &p, p.PeakVUs()
	} else {
		var p load.ArrivalProfile
		p, err = spec.Open.Split(index, spec.Shards)
		open, conns = &p, p.MaxVUs
	}
	if errors.Is(err, load.ErrIdleShard) {
		log.Info("load shard: nothing to run (fewer VUs or less rate than shards)")
		return load.WriteShardResult(stdout, load.IdleShardResult(index, spec.Shards, spec.Start))
	}
	if err != nil {
		return err
	}
	t := spec.Target
	wire := &load.Wire{}
	exec, target, err := targetExec(loadConfig{URL: t.URL, Tool: t.Tool, Args: t.Args, Headers: t.Headers, Method: t.Method,
		Body: t.Body, Timeout: duration(t.Timeout), Client: t.Client}, []byte(t.Body), max(conns, 1), false, wire)
	if err != nil {
		return err
	}
	log.Info("load shard: ready", "target", target, "vus", conns, "start", spec.Start.UTC().Format(time.RFC3339Nano))

	if d := spec.Start.Sub(now()); d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-stop:
			tm.Stop()
			log.Info("load shard: stopped before the start")
			return load.WriteShardResult(stdout, load.IdleShardResult(index, spec.Shards, spec.Start))
		case <-ctx.Done():
			tm.Stop()
			return context.Cause(ctx)
		}
	} else if d < -time.Second {
		log.Warn("load shard: started after the common start", "late", (-d).Round(time.Millisecond).String())
	}
	m := load.NewMetrics()
	runErr := runProfile(ctx, closed, open, exec, load.WithMetrics(m), load.WithStop(stop))
	res, err := load.NewShardResult(m, index, spec.Shards, wire.Sent(), wire.Received(), runErr)
	if err != nil {
		return err
	}
	log.Info("load shard: done", "iterations", res.Completed, "dropped", res.DroppedIterations, "err", res.Error)
	return load.WriteShardResult(stdout, res)
}

// signalStop is closed at the first SIGTERM or SIGINT (a pod being
// deleted, the Job's deadline): the load ends with its graceful stop.
func signalStop(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		defer signal.Stop(sig)
		select {
		case <-sig:
			close(ch)
		case <-ctx.Done():
		}
	}()
	return ch
}

// anyOf is closed when a or b is.
func anyOf(ctx context.Context, a, b <-chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		select {
		case <-a:
			close(ch)
		case <-b:
			close(ch)
		case <-ctx.Done():
		}
	}()
	return ch
}

func inClusterClient() (kubernetes.Interface, error) {
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(rc)
}

// configMapStop is closed once ConfigMap ns/name has a non-empty "stop"
// key; it reads it every interval until ctx ends. A read that fails is
// logged (the first, then every 30th) and tried again.
func configMapStop(ctx context.Context, kc kubernetes.Interface, ns, name string, every time.Duration, log *slog.Logger) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		fails := 0
		for { // one read per interval until the stop or ctx
			cm, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			switch {
			case err == nil && cm.Data[deploykube.LoadShardStopKey] != "":
				log.Info("load shard: stop set", "configmap", name)
				close(ch)
				return
			case err != nil && ctx.Err() == nil:
				if fails%30 == 0 {
					log.Warn("load shard: read the stop ConfigMap", "configmap", ns+"/"+name, "err", err, "failures", fails+1)
				}
				fails++
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return ch
}

// loadSharder is pf's LoadSharder for --load-shards n: nil for n == 1, an
// error for n out of range or a platform whose load runs in this process.
func loadSharder(pf platform.Platform, n int) (platform.LoadSharder, error) {
	switch {
	case n == 1:
		return nil, nil
	case n < 1 || n > load.MaxShards:
		return nil, fmt.Errorf("--load-shards %d: want 1 to %d", n, load.MaxShards)
	}
	s, ok := pf.(platform.LoadSharder)
	if !ok {
		return nil, fmt.Errorf("--load-shards %d: platform %s runs the load in this process and cannot spread it over load generators; use a Kubernetes platform (--platform kind or kubeconfig)", n, pf.Name())
	}
	return s, nil
}

// shardOpts are `load`'s flags for a distributed load.
type shardOpts struct {
	shards                                int
	kubeconfig, context, namespace, image string
}

func addShardFlags(f *pflag.FlagSet, o *shardOpts) {
	f.IntVar(&o.shards, "load-shards", 1, "run the load as an Indexed Job of N pods on Kubernetes (--namespace, --image), each with its share of the VUs or rate; results merged")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "--load-shards: the kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "--load-shards: the kubeconfig context (default its current one)")
	f.StringVar(&o.namespace, "namespace", "", "--load-shards: an existing namespace the Job runs in")
	f.StringVar(&o.image, "image", "", "--load-shards: the exact image on the nodes that holds /scaleproof (what the kind platform loads: scaleproof.local/scaleproof-ref:TAG)")
}

// apply makes p a distributed load when --load-shards > 1.
func (o shardOpts) apply(p *loadPlan) error {
	if o.shards == 1 {
		return nil
	}
	if o.shards < 1 || o.shards > load.MaxShards {
		return fmt.Errorf("--load-shards %d: want 1 to %d", o.shards, load.MaxShards)
	}
	if o.namespace == "" || o.image == "" {
		return fmt.Errorf("--load-shards %d runs the load on Kubernetes: it needs --namespace (an existing one) and --image (on the nodes, holding /scaleproof)", o.shards)
	}
	if p.cfg.Bearer != "" || os.Getenv("SCALEPROOF_BEARER") != "" {
		return fmt.Errorf("--load-shards: the load's settings travel in the Job's arguments, readable by whoever can read the Job; a bearer key would be exposed there, so it is refused")
	}
	for k := range p.cfg.Headers {
		if strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "Cookie") {
			return fmt.Errorf("--load-shards: header %s would be exposed in the Job's arguments; refused", k)
		}
	}
	s, err := kubeconfig.NewSharder(kubeconfig.SharderConfig{Kubeconfig: o.kubeconfig, Context: o.context, Namespace: o.namespace, Image: o.image})
	if err != nil {
		return err
	}
	p.shards, p.sharder = o.shards, s
	return nil
}

// shardsOutcome is a distributed load's merged result and its record.
type shardsOutcome struct {
	merged *load.Metrics
	record scenarios.LoadShards
}

// runLoadShards runs p over its shards until they have all ended (stop
// ends them early, with their graceful stop) and merges their results.
// The error is for a load that could not be run at all.
func runLoadShards(ctx context.Context, p *loadPlan, stop <-chan struct{}) (*shardsOutcome, error) {
	spec := load.ShardSpec{Start: time.Now().Add(scenarios.DefaultShardLead).UTC(), Shards: p.shards, Closed: p.closed, Open: p.open,
		Target: load.ShardTarget{URL: p.cfg.URL, Tool: p.cfg.Tool, Args: p.cfg.Args, Headers: p.cfg.Headers, Method: p.cfg.Method,
			Body: string(p.body), Timeout: time.Duration(p.cfg.Timeout), Client: p.cfg.Client}}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	js, err := spec.Encode()
	if err != nil {
		return nil, err
	}
	name := "load-" + randHex(3)
	outs, err := p.sharder.RunLoadShards(ctx, platform.ShardJob{Name: name, Shards: p.shards, Args: []string{"--spec=" + js}, Stop: stop,
		Timeout: time.Until(spec.Start) + spec.TotalDuration() + time.Minute})
	if err != nil {
		return nil, err
	}
	raw := make([]load.ShardOutput, len(outs))
	for i, o := range outs {
		raw[i] = load.ShardOutput{Index: o.Index, Pod: o.Pod, Log: o.Log, Failure: o.Failure}
	}
	fates, results := load.CollectShards(raw, p.shards, spec.Start)
	for _, r := range results {
		p.wire.Add(r.DataSent, r.DataReceived)
	}
	m := load.MergeShards(spec.Start, results)
	ok, detail := load.JudgeShards(fates, m)
	rec := scenarios.LoadShards{Scenario: "load", Job: name, Shards: p.shards, VUs: spec.PeakVUs(), Start: spec.Start, Fates: fates,
		Passed: ok, Detail: detail, Merged: scenarios.LoadShardsMerged{Started: m.Started(), Completed: m.Completed(), P95ms: msOf(m.Latencies().P95)}}
	for _, f := range fates {
		rec.Merged.SumOfShards += f.Completed
		rec.Merged.ShardP95ms = append(rec.Merged.ShardP95ms, msOf(f.P95))
	}
	return &shardsOutcome{merged: m, record: rec}, nil
}

// writeShardsSummary prints one line per shard, then the merged-vs-sum line.
func writeShardsSummary(w io.Writer, r scenarios.LoadShards) {
	fmt.Fprintf(w, "\n  shards (Job %s, common start %s)\n", r.Job, r.Start.Format("15:04:05.000"))
	for _, f := range r.Fates {
		switch f.State {
		case load.ShardDead:
			fmt.Fprintf(w, "    ✗ shard %d  %s  died: %s\n", f.Index, f.Pod, f.Why)
		default:
			fmt.Fprintf(w, "    ✓ shard %d  %s  %s: %d iterations, p95 %s, started %+.1f s\n", f.Index, f.Pod, f.State, f.Completed,
				f.P95.Round(10*time.Microsecond), f.StartOffset.Seconds())
		}
	}
	fmt.Fprintf(w, "    %s\n", load.ShardsSum(r.Detail))
}
