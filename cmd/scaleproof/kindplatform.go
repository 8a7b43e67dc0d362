package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/image"
	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
	"github.com/scaleproof/scaleproof/kind"
	"github.com/scaleproof/scaleproof/kind/addons"
	"github.com/scaleproof/scaleproof/kind/kedaimage"
	reportrender "github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/kubeconfig"
)

// kindNodePorts are the NodePorts the kind config maps to 127.0.0.1: the
// edge's and the console's; for a run with a scale target, the target's
// load Service's and Prometheus's; for a console run with a Prometheus
// (--policy hpa, spike), Prometheus's.
func kindNodePorts(targetKind string, prometheus bool) []int {
	ports := []int{deploykube.EdgeNodePort, deploykube.ConsoleNodePort}
	if targetKind != "" {
		ports = append(ports, deploykube.TargetNodePort, deploykube.PrometheusNodePort)
	} else if prometheus {
		ports = append(ports, deploykube.PrometheusNodePort)
	}
	return ports
}

// kindOpts are run's kind platform flags.
type kindOpts struct {
	keep      bool
	nodeImage string
	provider  string
}

func addKindFlags(f *pflag.FlagSet, o *kindOpts) {
	f.BoolVar(&o.keep, "keep", false, "kind: leave the cluster up after the run (its kubeconfig is in the artifacts folder)")
	f.StringVar(&o.nodeImage, "kind-node-image", "", "kind: node image (default: kind's published image when Docker has it, else ours, built once and cached)")
	f.StringVar(&o.provider, "kind-provider", "auto", "kind: container engine: auto (Docker only when a privileged container starts there, else podman), docker or podman")
}

// kindDeploy is the deploy step of the kind platform: the add-ons of the
// run's scale target installed and serving (addons.Install), then the
// kubeconfig platform on the cluster's kubeconfig, the NodePorts reached on
// 127.0.0.1 at the host ports kind mapped, the image Images loaded; with a
// target, in target mode (o.targetSpec, the Prometheus image loaded, its
// kubeconfig files into dir).
func kindDeploy(o *runOpts, prof scenarios.Profile, runID, dir string, ref *refImage, ad *kindAddons, log *slog.Logger) platform.Deploy[kind.Cluster] {
	return func(ctx context.Context, c kind.Cluster) (platform.Platform, error) {
		if ref.ref == "" {
			return nil, errors.New("kind: deploy before the scaleproof-ref image was loaded")
		}
		if err := ad.install(ctx, c.Kubeconfig); err != nil {
			return nil, err
		}
		name := o.name
		if name == "" {
			name = "kind"
		}
		h := scenarios.HPAFor(prof)
		return kubeconfig.New(kubeconfig.Config{Name: name, Kubeconfig: c.Kubeconfig,
			Namespace: runNamespace(runID), Profile: prof.Name, Image: ref.ref, Group: o.group,
			NodeHost: c.NodeHost, ConsoleHostPort: c.HostPorts[deploykube.ConsoleNodePort], EdgeHostPort: c.HostPorts[deploykube.EdgeNodePort],
			Target: o.targetSpec, TargetHostPort: c.HostPorts[deploykube.TargetNodePort], PrometheusHostPort: c.HostPorts[deploykube.PrometheusNodePort],
			PrometheusImage: ad.images.Ref("prometheus"),
			Prometheus:      o.deployPrometheus && o.targetSpec == nil, ScrapeInterval: h.ScrapeInterval, EvalInterval: h.EvalInterval,
			InflightMaxAge: h.InflightMaxAge,
			Canary:         o.canary, Log: log})
	}
}

// kindAddons are the cluster add-ons a run's scale target needs on kind
// and their images from the keda-images cache (kind/kedaimage), built
// there when missing, as the node image is: hpa needs metrics-server (the
// cluster's HPA reads CPU utilisation from metrics.k8s.io); keda needs
// KEDA's operator, metrics API server and admission webhooks, and
// Prometheus's image (KEDA's trigger queries it; the target's manifests
// deploy it). No target: nothing, or Prometheus's image alone for a
// console run that deploys one (prometheus).
type kindAddons struct {
	targetKind string
	prometheus bool
	log        *slog.Logger
	out        io.Writer
	// ensure is kedaimage.Ensure (tests replace it).
	ensure func(ctx context.Context, o kedaimage.Options) (kedaimage.Result, error)
	// installFn is addons.Install (tests replace it).
	installFn func(ctx context.Context, kubeconfigPath string, o addons.Options) (addons.Timings, error)

	images  kedaimage.Result // what archives ensured
	Timings addons.Timings   // of the last install
}

func newKindAddons(targetKind string, prometheus bool, log *slog.Logger, out io.Writer) (*kindAddons, error) {
	switch targetKind {
	case "", render.KindHPA, render.KindKEDA:
	default:
		return nil, fmt.Errorf("--target %q: want hpa or keda on kind", targetKind)
	}
	return &kindAddons{targetKind: targetKind, prometheus: prometheus, log: log, out: out, ensure: kedaimage.Ensure, installFn: addons.Install}, nil
}

// sets are the keda-images sets the target needs.
func (a *kindAddons) sets() []string {
	switch a.targetKind {
	case render.KindHPA:
		return []string{kedaimage.SetMetricsServer}
	case render.KindKEDA:
		return []string{kedaimage.SetKEDA, kedaimage.SetPrometheus}
	}
	if a.prometheus {
		return []string{kedaimage.SetPrometheus}
	}
	return nil
}

// archives makes sure of the images the target needs and returns their
// archives (none without a target).
func (a *kindAddons) archives(ctx context.Context) ([]string, error) {
	sets := a.sets()
	if len(sets) == 0 {
		return nil, nil
	}
	// the build's steps go to the progress output too: a cold KEDA build
	// takes tens of minutes
	log := slog.New(slog.NewMultiHandler(a.log.Handler(), slog.NewTextHandler(a.out, nil)))
	res, err := a.ensure(ctx, kedaimage.Options{Only: sets, Nice: 19, Log: log})
	if err != nil {
		return nil, fmt.Errorf("kind: images of --target %s: %w", a.targetKind, err)
	}
	a.images = res
	return res.Archives(), nil
}

// options are what install installs, from the images archives ensured.
func (a *kindAddons) options() addons.Options {
	r := a.images
	return addons.Options{
		MetricsServer: a.targetKind == render.KindHPA,
		KEDA:          a.targetKind == render.KindKEDA,
		Images: addons.Images{MetricsServer: r.Ref("metrics-server"), KEDAOperator: r.Ref("keda"),
			KEDAMetricsAPIServer: r.Ref("keda-metrics-apiserver"), KEDAWebhooks: r.Ref("keda-admission-webhooks")},
		Log: a.log,
	}
}

// install installs the target's add-ons and waits until they serve
// (nothing without a target: a console run's Prometheus is deployed with
// the reference system).
func (a *kindAddons) install(ctx context.Context, kubeconfigPath string) error {
	if a.targetKind == "" {
		return nil
	}
	t, err := a.installFn(ctx, kubeconfigPath, a.options())
	a.Timings = t
	if err != nil {
		return fmt.Errorf("kind: add-ons of --target %s: %w", a.targetKind, err)
	}
	fmt.Fprintf(a.out, "kind: add-ons of --target %s serving in %.1f s (apply %.1f s, rollout %.1f s, APIServices %.1f s, metrics %.1f s)\n",
		a.targetKind, t.Total.Seconds(), t.Apply.Seconds(), t.Rollout.Seconds(), t.APIServices.Seconds(), t.MetricsReady.Seconds())
	a.log.Info("add-ons serving", "target", a.targetKind, "seconds", t.Total.Seconds(), "apply", t.Apply.Seconds(),
		"rollout", t.Rollout.Seconds(), "apiservices", t.APIServices.Seconds(), "metrics_ready", t.MetricsReady.Seconds())
	return nil
}

// refImage is the image of scaleproof-ref (the console, edge and worker)
// the kind node gets: the binary beside scaleproof (or --ref-bin) on an
// empty base, with this scaleproof binary beside it at /scaleproof (the
// load shards' command) when it is static, tagged by their content hash,
// written into the artifacts. needSelf makes a scaleproof that is not
// static an error (--load-shards needs it in the image).
type refImage struct {
	bin, dir string
	needSelf bool
	noSelf   bool // the cloud platforms: no load shards, so no scaleproof in the image (a smaller push)
	log      *slog.Logger
	ref      string
}

func (r *refImage) archives(context.Context) ([]string, error) {
	path, err := findRefBin(r.bin)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var extra []image.File
	self, err := selfBinary()
	switch {
	case r.noSelf:
	case err == nil:
		extra = append(extra, image.File{Path: image.ScaleproofPath, Body: self})
	case r.needSelf:
		return nil, fmt.Errorf("--load-shards: the image needs this scaleproof binary: %w", err)
	case r.log != nil:
		r.log.Info("image without scaleproof (no load shards possible)", "why", err)
	}
	bins := [][]byte{b}
	for _, x := range extra {
		bins = append(bins, x.Body)
	}
	if r.ref, err = image.Tag("", bins...); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	out := filepath.Join(r.dir, "scaleproof-ref.tar")
	if err := image.Write(out, r.ref, b, extra...); err != nil {
		return nil, err
	}
	return []string{out}, nil
}

// selfBinary is this scaleproof binary, when it is static (it runs on the
// image's empty base).
func selfBinary() ([]byte, error) {
	p, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if err := image.CheckStatic(b); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return b, nil
}

func newKindPlatform(o *runOpts, prof scenarios.Profile, runID, dir string, log *slog.Logger, out io.Writer) (*platform.OnCluster[kind.Cluster], error) {
	k, _, err := newKindPlatformAddons(o, prof, runID, dir, log, out)
	return k, err
}

var _ platform.ClusterMaker[kind.Cluster] = (*kind.Kind)(nil)

// newKindPlatformAddons is newKindPlatform, also returning the add-ons of
// the run's scale target (tests look inside).
func newKindPlatformAddons(o *runOpts, prof scenarios.Profile, runID, dir string, log *slog.Logger, out io.Writer) (*platform.OnCluster[kind.Cluster], *kindAddons, error) {
	prom := o.deployPrometheus && o.targetKind == ""
	ad, err := newKindAddons(o.targetKind, prom, log, out)
	if err != nil {
		return nil, nil, err
	}
	cfg := kind.Config{
		RunID: runID, Provider: o.kind.provider, NodeImage: o.kind.nodeImage, Keep: o.kind.keep,
		Artifacts: dir, NodePorts: kindNodePorts(o.targetKind, prom), Log: log, Out: out,
	}
	ref := &refImage{bin: o.refBin, dir: filepath.Join(dir, "images"), needSelf: o.loadShards > 1, log: log}
	cfg.Images = func(ctx context.Context) ([]string, error) {
		archives, err := ref.archives(ctx)
		if err != nil {
			return nil, err
		}
		more, err := ad.archives(ctx)
		return append(archives, more...), err
	}
	k, err := kind.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return platform.NewOnCluster(k, kindDeploy(o, prof, runID, dir, ref, ad, log), platform.OnClusterOptions{Log: log}), ad, nil
}

// clusterSteps turns a cluster platform's steps (kind's, a cloud's: the
// maker's and the deploy step) into JUnit steps of the run, each named
// after its maker ("kind: create cluster"); none for another platform.
func clusterSteps(pf platform.Platform) []reportrender.Step {
	sp, ok := pf.(interface {
		Steps() []platform.Step
		StepPrefix() string
	})
	if !ok {
		return nil
	}
	var out []reportrender.Step
	for _, s := range sp.Steps() {
		out = append(out, reportrender.Step{Name: sp.StepPrefix() + s.Name, Duration: s.Duration, Err: s.Err})
	}
	return out
}

func kindOut(cmd interface{ ErrOrStderr() io.Writer }, quiet bool) io.Writer {
	if quiet {
		return io.Discard
	}
	return cmd.ErrOrStderr()
}
