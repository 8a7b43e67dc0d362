package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/autoscaler/controller/kube"
	"github.com/scaleproof/scaleproof/autoscaler/edge"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

// edgeFleetTimeout bounds one discovery call to the fleet server; a slower
// answer fails the round and the edge keeps its last good list.
const edgeFleetTimeout = 2 * time.Second

type edgeFlags struct {
	listen, fleet, discovery         string
	kube                             kubeFlags
	interval, upstreamTimeout, drain time.Duration
	inflightMaxAge                   time.Duration
	fault                            string
	faults                           faults.Set
}

func newEdgeCmd() *cobra.Command {
	var o edgeFlags
	cmd := &cobra.Command{
		Use:   "edge",
		Short: "Routes POST /g/{group}/z/{zone}/mcp to a ready worker of that zone",
		Long: `edge routes each MCP call on POST /g/{group}/z/{zone}/mcp to the ready worker of
that group × zone with the fewest calls the edge has in flight to it (ties
round-robin), forwarding to http://WORKER/mcp. The worker's status, Content-Type,
Retry-After and body come back unchanged, so a worker's 429 at its in-flight
limit (the intended back-pressure) reaches the client as sent.

A call is never sent twice once it may have reached a worker: only a dial
failure is retried, once, on another ready worker (the failed one is skipped
until the next discovery refresh); any other upstream failure is a 502.
No ready worker: 503 with Retry-After: 1. Errors are JSON-RPC error bodies.

Discovery: GET --fleet/v1/endpoints every --discovery-interval; when it fails the
edge keeps routing with the last good list.

Also GET /readyz (200 once the first discovery succeeded, 503 while draining),
/livez and /metrics (` + edge.MetricRequestsTotal + `{group,zone,code},
` + edge.MetricInflight + `{group,zone} and the summary
` + edge.MetricInflightRequests + `{group,zone,quantile}: the signal of hpa zones, as the querier's in-flight
summary is in Grafana's post on autoscaling Loki queries with KEDA).`,
		Args: noArgs("edge"),
		RunE: checkedRun(&o, func(*cobra.Command) error { return o.resolve() }, runEdge),
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:0", "listen address (port 0 picks a free port; the bound address is announced on stdout)")
	f.StringVar(&o.fleet, "fleet", "", "base URL of the fleet server (required with --discovery fleet): GET /v1/endpoints lists every zone's workers")
	f.StringVar(&o.discovery, "discovery", "fleet", "where the workers are listed: fleet (--fleet) or kube (the worker EndpointSlices of --namespace)")
	f.StringVar(&o.kube.kubeconfig, "kubeconfig", "", "kube: kubeconfig file (default: the pod's in-cluster ServiceAccount)")
	f.StringVar(&o.kube.namespace, "namespace", "", "kube: the workers' namespace (default $POD_NAMESPACE)")
	f.DurationVar(&o.interval, "discovery-interval", edge.DefaultInterval, "how often the worker list is refreshed (0 means the default)")
	f.DurationVar(&o.upstreamTimeout, "upstream-timeout", edge.DefaultUpstreamTimeout, "bound on one forwarded call, response included; beyond it 504")
	f.DurationVar(&o.drain, "drain", 10*time.Second, "on SIGTERM, /readyz turns 503 and in-flight calls finish for up to this")
	f.DurationVar(&o.inflightMaxAge, "inflight-max-age", edge.InflightMaxAge, "the window the in-flight summary's quantiles cover (the signal of hpa zones)")
	addFaultFlag(f, &o.fault, "edge")
	return cmd
}

// resolve checks every value.
func (o *edgeFlags) resolve() error {
	var errs []error
	switch o.discovery {
	case "kube":
		if err := o.kube.resolve(); err != nil {
			errs = append(errs, err)
		}
		if o.fleet != "" {
			errs = append(errs, errors.New("--fleet is for --discovery fleet"))
		}
	case "fleet":
	default:
		errs = append(errs, fmt.Errorf("--discovery %q: want fleet or kube", o.discovery))
	}
	if o.discovery == "fleet" {
		if o.fleet == "" {
			errs = append(errs, errors.New("--fleet is required"))
		} else if u, err := url.Parse(o.fleet); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--fleet %q: want http://HOST:PORT", o.fleet))
		}
	}
	errs = append(errs, wantNonNegative("--discovery-interval", o.interval))
	errs = append(errs, wantPositive("--upstream-timeout", o.upstreamTimeout))
	errs = append(errs, wantPositive("--drain", o.drain))
	errs = append(errs, wantNonNegative("--inflight-max-age", o.inflightMaxAge))
	var err error
	o.faults, err = parseFaults(o.fault, "edge")
	return usageErrors(append(errs, err))
}

func runEdge(ctx context.Context, o edgeFlags) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("server", "edge")
	var disc edge.Discovery = edge.FleetDiscovery{Client: fleet.New(o.fleet, edgeFleetTimeout)}
	if o.discovery == "kube" {
		cs, err := o.kube.client()
		if err != nil {
			return err
		}
		disc = kubeEdgeDiscovery{kube.New(cs, o.kube.namespace, kube.WithLogger(log.With("part", "kube")))}
	}
	e, err := edge.New(edge.Config{
		Discovery:       disc,
		Interval:        o.interval,
		UpstreamTimeout: o.upstreamTimeout,
		Logger:          log,
		InflightMaxAge:  o.inflightMaxAge,
		Faults:          o.faults,
	})
	if err != nil {
		return err
	}
	ln, err := serve.Listen(o.listen)
	if err != nil {
		return err
	}
	discCtx, stopDiscovery := context.WithCancel(ctx)
	defer stopDiscovery()
	discDone := make(chan struct{})
	go func() {
		defer close(discDone)
		e.Run(discCtx) // keeps refreshing while draining: in-flight calls need no list, new ones still route
	}()

	log.Info("edge starting", "listen", ln.Addr().String(), "discovery", o.discovery, "fleet", o.fleet, "namespace", o.kube.namespace, "faults", o.faults.String(),
		"discovery_interval", o.interval.String(), "upstream_timeout", o.upstreamTimeout.String(), "drain", o.drain.String())
	err = serve.Run(ctx, ln, e.Handler(), e.Health(), serve.Options{
		Addr: o.listen, Drain: o.drain, Logger: log,
		WriteTimeout: o.upstreamTimeout + 30*time.Second, // a forwarded call may take the whole upstream timeout
	})
	stopDiscovery()
	<-discDone
	return err
}

// kubeEdgeDiscovery bounds each EndpointSlice listing like a fleet call: a
// slower answer fails the round and the edge keeps its last good list.
type kubeEdgeDiscovery struct{ t *kube.Target }

func (d kubeEdgeDiscovery) Zones(ctx context.Context) ([]fleet.Zone, error) {
	ctx, cancel := context.WithTimeout(ctx, edgeFleetTimeout)
	defer cancel()
	return d.t.Zones(ctx)
}
