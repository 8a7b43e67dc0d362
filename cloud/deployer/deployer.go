// Package deployer is the cloud platform: a platform.Platform over any
// cloud.Provider (cloud/gke, cloud/eks, cloud/aks), in the manner of
// kubetest2's deployers. Up creates a cluster (or adopts --cluster), makes
// sure the image repository exists, pushes the scaleproof-ref image there
// with go-containerregistry, writes a kubeconfig whose user reads a token
// file that a goroutine keeps fresh from Provider.Token (EKS tokens last 15
// minutes), then hands off to the kubeconfig platform
// (scenarios/platform/kubeconfig), which deploys and serves exactly as it
// does on kind. Down dumps the logs, takes the system down, then deletes
// what Up created in reverse order, never an adopted cluster.
//
// One verb a file: up.go, down.go, isup.go, dumplogs.go, credentials.go
// (kubeconfig and token refresh), push.go (the image).
//
// Must not import scenarios/ (only scenarios/platform, as kind/ does).
package deployer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// ErrNoTTL is Up's refusal to create anything without a TTL: what a run
// creates must carry an expiry the janitor can act on.
var ErrNoTTL = errors.New("--ttl is required for a cloud platform (for example --ttl 3h): everything the run creates is labelled with its expiry, and `scaleproof cloud janitor` deletes it after")

// Handoff is what the deploy step gets once a cluster exists and the image
// is in a registry it pulls from.
type Handoff struct {
	Cluster cloud.Cluster
	// Kubeconfig is the path of the kubeconfig Up writes (its user reads
	// TokenFile, which Up keeps fresh). Both are in a private folder (0700)
	// outside the artifacts, removed by Down: the artifacts are published.
	Kubeconfig, TokenFile string
	// Image is the pushed image's exact reference (REPOSITORY:TAG).
	Image string
}

// DeployFunc deploys the system onto the cluster (the kubeconfig platform,
// reached through port-forwards) and returns that platform; the deployer
// calls its Up, DumpLogs and Down inside its own.
type DeployFunc func(ctx context.Context, h Handoff) (platform.Platform, error)

// ImageFunc returns the scaleproof-ref image and its tag (the same image
// the kind platform loads).
type ImageFunc func(ctx context.Context) (img v1.Image, tag string, err error)

// Config configures the cloud platform.
type Config struct {
	Provider cloud.Provider
	// Options are the run's: RunID, TTL (required), Cluster (adopt), Now,
	// Log, Out. They are the Options the Provider was made with.
	Options cloud.Options
	// Artifacts is the run's artifacts folder (logs, steps). No secret is
	// written there: the kubeconfig and the token live in a private
	// temporary folder (Handoff).
	Artifacts string
	Image     ImageFunc
	// Deploy deploys the system; nil: Up stops after the credentials and
	// returns empty Endpoints (the lifecycle alone).
	Deploy DeployFunc
	// RefreshBefore is how long before the token's expiry it is replaced
	// (0: 5 minutes, at most half its lifetime).
	RefreshBefore time.Duration
	// After is the refresher's timer (nil: time.After); tests inject it.
	After func(time.Duration) <-chan time.Time
	// DeployedDownBudget bounds the deployed system's Down before a created
	// cluster is deleted (its objects go with the cluster; 0: 10 s). On an
	// adopted cluster Down waits for the namespace to go, bounded by ctx.
	DeployedDownBudget time.Duration
}

// Step is one timed step of the platform (a JUnit case of the run).
type Step struct {
	Name     string
	Duration time.Duration
	Err      error
}

// Deployer is the cloud platform.
type Deployer struct {
	cfg Config
	log *slog.Logger
	out io.Writer
	now func() time.Time

	mu       sync.Mutex
	cluster  *cloud.Cluster  // set once Create or Adopt returned (even with an error)
	registry *cloud.Registry // set once EnsureRegistry returned
	deployed platform.Platform
	refresh  *refresher
	// secretDir is the private folder (0700) of the token and kubeconfig;
	// Down removes it.
	secretDir string
	steps     []Step
	dumped    bool
	downDone  bool
	// onRefresh (tests) gets each token refresh's result.
	onRefresh chan error
}

var _ platform.Platform = (*Deployer)(nil)

// New checks cfg; nothing is contacted until Up. A missing TTL is
// ErrNoTTL (a usage error: the command exits 2).
func New(cfg Config) (*Deployer, error) {
	if cfg.Provider == nil {
		return nil, errors.New("cloud platform: no provider")
	}
	if cfg.Options.TTL <= 0 {
		return nil, ErrNoTTL
	}
	if cfg.Options.RunID == "" {
		return nil, errors.New("cloud platform: a run id is needed (it names and labels what the run creates)")
	}
	if cfg.Artifacts == "" {
		return nil, errors.New("cloud platform: an artifacts folder is needed (kubeconfig and logs go there)")
	}
	if cfg.Image == nil {
		return nil, errors.New("cloud platform: no image to push")
	}
	d := &Deployer{cfg: cfg, log: cfg.Options.Log, out: cfg.Options.Out, now: cfg.Options.Now}
	if d.log == nil {
		d.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if d.out == nil {
		d.out = io.Discard
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.cfg.RefreshBefore <= 0 {
		d.cfg.RefreshBefore = 5 * time.Minute
	}
	if d.cfg.After == nil {
		d.cfg.After = time.After
	}
	if d.cfg.DeployedDownBudget <= 0 {
		d.cfg.DeployedDownBudget = 10 * time.Second
	}
	return d, nil
}

// Name is the provider's name ("GKE").
func (d *Deployer) Name() string { return d.cfg.Provider.Name() }

// ClusterName is the cluster the run creates (or adopts).
func (d *Deployer) ClusterName() string {
	if d.cfg.Options.Cluster != "" {
		return d.cfg.Options.Cluster
	}
	return cloud.ClusterName(d.cfg.Options.RunID)
}

// Steps are the platform's steps so far, for the run's JUnit.
func (d *Deployer) Steps() []Step {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Step(nil), d.steps...)
}

// Created is what the run created and Down has not yet deleted, in
// creation order.
func (d *Deployer) Created() []cloud.Resource {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.createdLocked()
}

func (d *Deployer) createdLocked() []cloud.Resource {
	var out []cloud.Resource
	if d.cluster != nil && !d.cluster.Adopted {
		out = append(out, d.cluster.Created...)
	}
	if d.registry != nil {
		out = append(out, d.registry.Created...)
	}
	return out
}

// step runs fn as a named, timed step.
func (d *Deployer) step(name string, fn func() error) error {
	start := d.now()
	d.log.Info("cloud step", "step", name)
	err := fn()
	dur := d.now().Sub(start)
	d.mu.Lock()
	d.steps = append(d.steps, Step{Name: name, Duration: dur, Err: err})
	d.mu.Unlock()
	if err != nil {
		d.log.Error("cloud step failed", "step", name, "seconds", dur.Seconds(), "err", err)
	} else {
		d.log.Info("cloud step done", "step", name, "seconds", dur.Seconds())
		fmt.Fprintf(d.out, "%s: %s in %.1f s\n", d.Name(), name, dur.Seconds())
	}
	return err
}
