package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/console"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// Environment variables of Ramen 0.7.5 that set the console's flags' defaults
// (a flag given on the command line wins).
const (
	envUpCooldown   = "RAMEN_AUTOSCALE_UP_COOLDOWN_SECS"
	envDownCooldown = "RAMEN_AUTOSCALE_COOLDOWN_SECS"
	envTargetRPS    = "RAMEN_AUTOSCALE_TARGET_RPS"
)

// fleetTimeout bounds one call to the fleet server (scale or endpoints).
const fleetTimeout = 10 * time.Second

type consoleFlags struct {
	listen, keys, state, fleet string
	prometheus                 string
	upCooldown, downCooldown   time.Duration
	targetRPS                  float64
	startupGrace               time.Duration
	scrapeTimeout, drain       time.Duration
	fault                      string
	faults                     faults.Set

	// Kubernetes (--scale-target kube).
	scaleTarget    string
	kube           kubeFlags
	stateConfigMap string
	lease          string
	identity       string
	workerTemplate string
	canary         bool
	hpaSweep       time.Duration
}

func newConsoleCmd() *cobra.Command {
	def := autoscaler.DefaultStepConfig()
	var o consoleFlags
	cmd := &cobra.Command{
		Use:   "console",
		Short: "The console API and the reference autoscaler (the step policy of Ramen 0.7.5)",
		Long: `console serves the console API of Ramen 0.7.5's autoscaling notes ("Autoscaling: Ramen
scales the workers, not the cloud") and runs its reference autoscaler: the step policy of package
autoscaler, applied to every group × zone through the local platform's fleet server.

API (Authorization: Bearer KEY, keys from --keys):
  GET  /api/v1/groups/{g}/zones/{z}/workers    count; max, readiness, last decision for admins of g
  PUT  /api/v1/groups/{g}/zones/{z}/workers    {"max_count": N} and/or {"count": N}
  POST /api/v1/groups/{g}/zones/{z}/rebalance  one decision now
  GET|PUT /api/v1/groups/{g}/zones/{z}/policy  the zone's policy: {"policy":"step"} (default) or
                                               {"policy":"hpa","hpa":{"query":"PromQL","threshold":N,...}}
  GET|PUT /api/v1/config/autorebalance         {"enabled": bool, "interval_seconds": n}
  GET  /api/v1/config/autoscale                the step policy's settings (cooldowns, thresholds, low rounds), read-only
  GET  /api/v1/audit?group=&zone=&action=&limit=
  GET  /readyz /livez /metrics

State (zones, audit log, scheduler config) lives in one bbolt file (--state) and
survives a restart; cooldowns run from the persisted last change. The
auto-rebalance scheduler is off by default, every 60 s when on.

On Kubernetes (--scale-target kube, in a pod with the console's ServiceAccount):
the zone's worker Deployment is scaled through its scale subresource (created from
the worker PodTemplate on a zone's first scale), workers are found from
EndpointSlices, scale-in marks the pod the policy chose with pod-deletion-cost,
the state lives in one ConfigMap (--state-configmap) that every console pod reads
and writes, and only the pod holding the Lease (--lease) runs the scheduler and
deletes any HorizontalPodAutoscaler left on a worker Deployment (audited as
` + AuditHPARemoved + `): the console owns the count.

Environment (used when the matching flag is not given; seconds may be fractional):
  ` + envUpCooldown + `  --up-cooldown in seconds
  ` + envDownCooldown + `     --down-cooldown in seconds
  ` + envTargetRPS + `        --target-rps`,
		Args: noArgs("console"),
		RunE: checkedRun(&o, o.resolve, runConsole),
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:0", "listen address (port 0 picks a free port; the bound address is announced on stdout)")
	f.StringVar(&o.keys, "keys", "", `API keys file (required): {"keys":[{"name","key","role":"super_admin|group_admin|viewer|mcp_user","groups":[...]}]}. Only a super admin or a group admin of the group sees and sets the max`)
	f.StringVar(&o.state, "state", "", "state file (bbolt; required): zones with count, max, last change and last decision, the audit log, the scheduler config")
	f.StringVar(&o.fleet, "fleet", "", "base URL of the local platform's fleet server (required with --scale-target fleet): the scale subresource and the endpoints of every group × zone")
	f.StringVar(&o.scaleTarget, "scale-target", "fleet", "fleet (the local platform's fleet server, state in --state) or kube (the worker Deployments of --namespace, state in a ConfigMap)")
	f.StringVar(&o.kube.kubeconfig, "kubeconfig", "", "kube: kubeconfig file (default: the pod's in-cluster ServiceAccount)")
	f.StringVar(&o.kube.namespace, "namespace", "", "kube: the namespace of the workers, the state and the Lease (default $POD_NAMESPACE)")
	f.StringVar(&o.stateConfigMap, "state-configmap", "scaleproof-state", "kube: the ConfigMap that holds the state every console pod shares")
	f.StringVar(&o.lease, "lease", "scaleproof-console", "kube: the Lease whose holder runs the scheduler")
	f.StringVar(&o.identity, "identity", "", "kube: this pod's name in the Lease (default $POD_NAME, else the hostname)")
	f.StringVar(&o.workerTemplate, "worker-template", "scaleproof-worker", "kube: the PodTemplate a new zone's worker Deployment is made from")
	f.BoolVar(&o.canary, "canary", false, "kube: beside each zone's worker Deployment run a canary Deployment of one replica (its pod template with --version=canary); it takes calls and counts as capacity, and is never scaled, picked or deleted")
	f.DurationVar(&o.hpaSweep, "hpa-sweep", 10*time.Second, "kube: how often the scheduler's pod deletes HorizontalPodAutoscalers left on worker Deployments")
	f.StringVar(&o.prometheus, "prometheus", "", "base URL of the Prometheus server that answers the queries of hpa zones; without it hpa zones read a failed metric and hold")
	f.DurationVar(&o.upCooldown, "up-cooldown", def.UpCooldown,
		`no step up within this of the last change of the count (`+envUpCooldown+`)`)
	f.DurationVar(&o.downCooldown, "down-cooldown", def.DownCooldown,
		`no step down within this of the last change of the count (`+envDownCooldown+`): up fast, down carefully`)
	f.Float64Var(&o.targetRPS, "target-rps", def.TargetRPS,
		`calls per second per worker that trigger a step up and size it (`+envTargetRPS+`)`)
	f.DurationVar(&o.startupGrace, "startup-grace", def.StartupGrace,
		"a worker listed not ready and younger than this, or missing from discovery within this of the last change, is starting (capacity on its way), not down: never a reason to scale in or to step up again")
	f.DurationVar(&o.scrapeTimeout, "scrape-timeout", controller.DefaultScrapeTimeout,
		`timeout of one worker's /metrics scrape; a worker that does not answer counts as down, never as low (no scale-in during an outage)`)
	f.DurationVar(&o.drain, "drain", 40*time.Second,
		`on SIGTERM, /readyz turns 503, the scheduler stops and in-flight requests finish for up to this (an old console pod drains for 40 s in Ramen 0.7.5)`)
	addFaultFlag(f, &o.fault, "console")
	return cmd
}

// resolve applies the environment to flags not given and checks every value.
func (o *consoleFlags) resolve(cmd *cobra.Command) error {
	fs := cmd.Flags()
	secs := func(flag, env string, dst *time.Duration) error {
		v, ok := os.LookupEnv(env)
		if !ok || fs.Changed(flag) {
			return nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e6 {
			return fmt.Errorf("%w: %s=%q: want seconds >= 0 (fractional allowed)", errUsage, env, v)
		}
		*dst = time.Duration(math.Round(f * float64(time.Second)))
		return nil
	}
	if err := secs("up-cooldown", envUpCooldown, &o.upCooldown); err != nil {
		return err
	}
	if err := secs("down-cooldown", envDownCooldown, &o.downCooldown); err != nil {
		return err
	}
	if v, ok := os.LookupEnv(envTargetRPS); ok && !fs.Changed("target-rps") {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%w: %s=%q: want a number > 0", errUsage, envTargetRPS, v)
		}
		o.targetRPS = f
	}
	var errs []error
	reqs := []struct{ flag, v string }{{"keys", o.keys}}
	switch o.scaleTarget {
	case "fleet":
		reqs = append(reqs, struct{ flag, v string }{"state", o.state}, struct{ flag, v string }{"fleet", o.fleet})
	case "kube":
		if err := o.kube.resolve(); err != nil {
			errs = append(errs, err)
		}
		if o.identity == "" {
			o.identity = os.Getenv("POD_NAME")
		}
		if o.identity == "" {
			o.identity, _ = os.Hostname()
		}
		if o.hpaSweep <= 0 {
			errs = append(errs, fmt.Errorf("--hpa-sweep %s: want > 0", o.hpaSweep))
		}
		if o.state != "" || o.fleet != "" {
			errs = append(errs, errors.New("--state and --fleet are for --scale-target fleet; on Kubernetes the state is --state-configmap"))
		}
	default:
		errs = append(errs, fmt.Errorf("--scale-target %q: want fleet or kube", o.scaleTarget))
	}
	for _, req := range reqs {
		if req.v == "" {
			errs = append(errs, fmt.Errorf("--%s is required", req.flag))
		}
	}
	if o.fleet != "" {
		if u, err := url.Parse(o.fleet); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--fleet %q: want http://HOST:PORT", o.fleet))
		}
	}
	if o.prometheus != "" {
		if u, err := url.Parse(o.prometheus); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--prometheus %q: want http://HOST:PORT", o.prometheus))
		}
	}
	errs = append(errs, wantPositive("--scrape-timeout", o.scrapeTimeout))
	errs = append(errs, wantPositive("--drain", o.drain))
	if err := o.stepConfig().Validate(); err != nil {
		errs = append(errs, err)
	}
	var err error
	o.faults, err = parseFaults(o.fault, "console")
	return usageErrors(append(errs, err))
}

func (o *consoleFlags) stepConfig() autoscaler.StepConfig {
	cfg := autoscaler.DefaultStepConfig()
	cfg.UpCooldown, cfg.DownCooldown = o.upCooldown, o.downCooldown
	cfg.TargetRPS, cfg.StartupGrace = o.targetRPS, o.startupGrace
	return cfg
}

func runConsole(ctx context.Context, o consoleFlags) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("server", "console")
	keys, err := console.LoadKeys(o.keys)
	if err != nil {
		return err
	}
	var (
		st     store.Backend
		target controller.ScaleTarget
		disc   controller.Discovery
		kt     *kubeConsole
	)
	if o.scaleTarget == "kube" {
		kt, err = openKubeConsole(ctx, o, log)
		if err != nil {
			return err
		}
		st, target, disc = kt.store, kt.target, kt.target
	} else {
		bs, err := store.Open(o.state, store.Options{})
		if err != nil {
			return err
		}
		defer func() {
			if err := bs.Close(); err != nil {
				log.Error("close state", "err", err)
			}
		}()
		fl := controller.NewFleet(fleet.New(o.fleet, fleetTimeout))
		st, target, disc = bs, fl, fl
	}
	cfg := o.stepConfig()
	var metrics controller.MetricSource
	if o.prometheus != "" {
		ps, err := controller.NewPrometheusSource(o.prometheus)
		if err != nil {
			return err
		}
		defer ps.Close()
		metrics = ps
	}
	ctrl, err := controller.New(controller.Options{
		Store: st, Target: target, Discovery: disc, Scraper: controller.NewHTTPScraper(o.scrapeTimeout),
		Policy: controller.FaultyPolicy(controller.StepPolicyWithFaults(cfg, o.faults), o.faults), StartupGrace: cfg.StartupGrace, Logger: log,
		Metrics: metrics, Faults: o.faults,
	})
	if err != nil {
		return err
	}
	health := &serve.Health{}
	h, err := console.New(console.Options{Controller: ctrl, Store: st, Keys: keys, Health: health, Logger: log, Step: &cfg,
		Faults: o.faults})
	if err != nil {
		return err
	}
	ln, err := serve.Listen(o.listen)
	if err != nil {
		return err
	}

	schedCtx, stopScheduler := context.WithCancel(ctx)
	defer stopScheduler()
	schedDone := make(chan error, 1)
	if kt != nil {
		go kt.store.Run(schedCtx, 30*time.Second, func() {
			if err := ctrl.Resync(); err != nil {
				log.Error("resync after another console's change", "err", err)
			}
		})
		ls := &leaderScheduler{client: kt.client, ns: o.kube.namespace, lease: o.lease, identity: o.identity,
			ctrl: ctrl, target: kt.target, st: st, sweep: o.hpaSweep, log: log}
		go func() { schedDone <- ls.run(schedCtx) }()
	} else {
		go func() { schedDone <- ctrl.RunScheduler(schedCtx) }()
	}

	ar := ctrl.AutoRebalance()
	log.Info("console starting", "listen", ln.Addr().String(), "scale_target", o.scaleTarget, "state", o.state, "fleet", o.fleet,
		"namespace", o.kube.namespace, "state_configmap", o.stateConfigMap, "lease", o.lease, "identity", o.identity, "prometheus", o.prometheus,
		"keys", keys.Len(), "zones", len(ctrl.Zones()),
		"up_cooldown", cfg.UpCooldown.String(), "down_cooldown", cfg.DownCooldown.String(),
		"target_rps", cfg.TargetRPS, "startup_grace", cfg.StartupGrace.String(),
		"scrape_timeout", o.scrapeTimeout.String(), "drain", o.drain.String(),
		"autorebalance", ar.Enabled, "interval", ar.Interval.String(), "faults", o.faults.String())
	if len(o.faults) > 0 {
		log.Warn("planted faults switched on: this console breaks the autoscaling contract on purpose", "faults", o.faults.String())
	}

	err = serve.Run(ctx, ln, h, health, serve.Options{
		Addr: o.listen, Drain: o.drain, Logger: log,
		OnDrain: stopScheduler, // no new decisions while draining
	})
	stopScheduler()
	if serr := <-schedDone; serr != nil {
		log.Error("scheduler", "err", serr)
	}
	return err
}
