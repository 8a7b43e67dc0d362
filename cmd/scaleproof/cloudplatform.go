package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/spf13/pflag"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/aks"
	"github.com/scaleproof/scaleproof/cloud/deployer"
	"github.com/scaleproof/scaleproof/cloud/eks"
	"github.com/scaleproof/scaleproof/cloud/gke"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/kubeconfig"
)

// cloudProviders makes each cloud's Provider from the command line's
// options, by its --platform name. A cloud is one line here: its package's
// New (which names the flag it misses).
var cloudProviders = map[string]func(cloud.Options) (cloud.Provider, error){
	"gke": func(o cloud.Options) (cloud.Provider, error) { return gke.New(o) },
	"eks": func(o cloud.Options) (cloud.Provider, error) { return eks.New(o) },
	"aks": func(o cloud.Options) (cloud.Provider, error) {
		// azcore's Poller.PollUntilDone refuses a frequency under a second
		// outside `go test` (azcore runtime/poller.go: "polling frequency
		// minimum is one second"), also against a local fake.
		if o.PollInterval > 0 {
			o.PollInterval = max(o.PollInterval, time.Second)
		}
		return aks.New(o)
	},
}

// cloudNames are the clouds of --platform, sorted.
func cloudNames() []string { return slices.Sorted(maps.Keys(cloudProviders)) }

// cloudOpts are the cloud platforms' flags (run, cloud plan, cloud janitor).
type cloudOpts struct {
	project, location, region, subscription, resourceGroup string
	cluster, machineType                                   string
	ttl, operationTimeout, pollInterval                    time.Duration
	nodeMin, nodeMax                                       int
	endpoint, registryEndpoint                             string // hidden: tests' fakes
}

func addCloudFlags(f *pflag.FlagSet, o *cloudOpts, withRun bool) {
	f.StringVar(&o.project, "project", "", "gke: the Google Cloud project")
	f.StringVar(&o.location, "location", "", "gke: a region (us-central1) or zone (us-central1-a); aks: the Azure region")
	f.StringVar(&o.region, "region", "", "eks: the AWS region")
	f.StringVar(&o.subscription, "subscription", "", "aks: the Azure subscription id")
	f.StringVar(&o.resourceGroup, "resource-group", "", "aks: the resource group")
	if withRun {
		f.StringVar(&o.cluster, "cluster", "", "gke, eks, aks: adopt this existing cluster instead of creating one (never deleted by the run)")
		// No backquotes in a usage: pflag takes a quoted word for the value's name.
		f.DurationVar(&o.ttl, "ttl", 0, "gke, eks, aks: required: how long what the run creates may live (e.g. 3h); every resource is labelled with its expiry and scaleproof cloud janitor deletes it after")
		f.IntVar(&o.nodeMin, "node-min", 0, "gke, eks, aks: the node pool's minimum for the cloud's cluster autoscaler (default 1)")
		f.IntVar(&o.nodeMax, "node-max", 0, "gke, eks, aks: the node pool's maximum for the cloud's cluster autoscaler (default 4)")
		f.StringVar(&o.machineType, "machine-type", "", "gke, eks, aks: the node type (default the provider's small type: e2-standard-4 on gke)")
	}
	f.DurationVar(&o.operationTimeout, "operation-timeout", 0, "gke, eks, aks: the longest wait on one cloud operation (cluster create or delete; default 25m)")
	f.StringVar(&o.endpoint, "cloud-endpoint", "", "the cloud API's base URL (tests: a local fake)")
	f.StringVar(&o.registryEndpoint, "cloud-registry-endpoint", "", "the image registry's base URL (tests: a local registry)")
	f.DurationVar(&o.pollInterval, "cloud-poll-interval", 0, "how often a cloud operation is polled (default 10s; tests: less)")
	_ = f.MarkHidden("cloud-poll-interval")
	_ = f.MarkHidden("cloud-endpoint")
	_ = f.MarkHidden("cloud-registry-endpoint")
}

// options are the Provider's options for a run.
func (o cloudOpts) options(runID string, log *slog.Logger, out io.Writer) cloud.Options {
	return cloud.Options{Project: o.project, Location: o.location, Region: o.region, Subscription: o.subscription,
		ResourceGroup: o.resourceGroup, Cluster: o.cluster, RunID: runID, TTL: o.ttl,
		NodeMin: o.nodeMin, NodeMax: o.nodeMax, MachineType: o.machineType,
		Endpoint: o.endpoint, RegistryEndpoint: o.registryEndpoint, OperationTimeout: o.operationTimeout,
		PollInterval: o.pollInterval, Log: log, Out: out}
}

// newProvider makes the cloud's Provider (errors are usage errors: a flag
// missing or bad).
func newProvider(platform string, o cloud.Options) (cloud.Provider, error) {
	ctor, ok := cloudProviders[platform]
	if !ok {
		return nil, fmt.Errorf("unknown cloud %q (have: %s)", platform, strings.Join(cloudNames(), ", "))
	}
	p, err := ctor(o)
	if err != nil {
		return nil, fmt.Errorf("--platform %s: %w", platform, err)
	}
	return p, nil
}

// newCloudPlatform is the cloud platform of run: the Provider, the
// scaleproof-ref image the kind platform builds (pushed instead of loaded),
// and the kubeconfig platform on the cluster with the cloud overlay,
// reached through port-forwards.
func newCloudPlatform(o *runOpts, prof scenarios.Profile, runID, dir string, log *slog.Logger, out io.Writer) (*platform.OnCluster[deployer.Handoff], error) {
	if o.cloud.ttl <= 0 {
		return nil, deployer.ErrNoTTL
	}
	if o.loadShards > 1 {
		return nil, errors.New("--load-shards runs on kind and kubeconfig for now: the load-shard Job's pods do not pull the image from the cloud's registry")
	}
	opts := o.cloud.options(runID, log, out)
	p, err := newProvider(o.platform, opts)
	if err != nil {
		return nil, err
	}
	ref := &refImage{bin: o.refBin, dir: filepath.Join(dir, "images"), noSelf: true, log: log}
	d, err := deployer.New(deployer.Config{Provider: p, Options: opts, Artifacts: dir,
		Image: func(ctx context.Context) (v1.Image, string, error) { return ref.image(ctx) }})
	if err != nil {
		return nil, err
	}
	deploy := func(_ context.Context, h deployer.Handoff) (platform.Platform, error) {
		n := o.name
		if n == "" {
			n = p.Name()
		}
		return kubeconfig.New(kubeconfig.Config{Name: n, Kubeconfig: h.Kubeconfig,
			Namespace: runNamespace(runID), Profile: prof.Name, Image: h.Image, Group: o.group,
			Canary: o.canary, Cloud: true, Log: log})
	}
	// the cluster's logs are gone once it is deleted: Down dumps them
	// first when the run did not
	return platform.NewOnCluster(d, deploy, platform.OnClusterOptions{LogsDir: filepath.Join(dir, "logs"), Log: log}), nil
}

var _ platform.ClusterMaker[deployer.Handoff] = (*deployer.Deployer)(nil)

// image is the image archive of archives, read back for a push, and its tag.
func (r *refImage) image(ctx context.Context) (v1.Image, string, error) {
	paths, err := r.archives(ctx)
	if err != nil {
		return nil, "", err
	}
	tag, err := name.NewTag(r.ref, name.StrictValidation)
	if err != nil {
		return nil, "", err
	}
	img, err := tarball.ImageFromPath(paths[0], &tag)
	if err != nil {
		return nil, "", fmt.Errorf("image %s: %w", paths[0], err)
	}
	return img, tag.TagStr(), nil
}

// cloudCode is the exit code of a cloud error: 3 (the platform), with the
// cloud's reason and, for a permission, the permission named.
func cloudCode(err error) error {
	var ce *cloud.Error
	if errors.As(err, &ce) {
		return withCode(exitInfra, err)
	}
	if errors.Is(err, deployer.ErrNoTTL) {
		return withCode(exitUsage, err)
	}
	return withCode(exitInfra, err)
}
