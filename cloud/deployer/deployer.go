// Package deployer is the cloud platform's cluster maker over any
// cloud.Provider (cloud/gke, cloud/eks, cloud/aks), in the manner of
// kubetest2's deployers. Up creates a cluster (or adopts --cluster), makes
// sure the image repository exists, pushes the scaleproof-ref image there
// with go-containerregistry, writes a kubeconfig whose user reads a token
// file that a goroutine keeps fresh from Provider.Token (EKS tokens last 15
// minutes), then hands the cluster over (Handoff). platform.OnCluster puts
// it together with the kubeconfig platform, which deploys and serves
// exactly as it does on kind. Down deletes what Up created in reverse
// order, never an adopted cluster.
//
// One verb a file: up.go, down.go, isup.go, dumplogs.go, credentials.go
// (kubeconfig and token refresh), push.go (the image).
//
// Must not import scenarios/ (kind/ neither).
package deployer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/internal/steps"
)

// ErrNoTTL is Up's refusal to create anything without a TTL: what a run
// creates must carry an expiry the janitor can act on.
var ErrNoTTL = errors.New("--ttl is required for a cloud platform (for example --ttl 3h): everything the run creates is labelled with its expiry, and `scaleproof cloud janitor` deletes it after")

// Handoff is what Up hands over to the deploy step once a cluster exists
// and the image is in a registry it pulls from.
type Handoff struct {
	Cluster cloud.Cluster
	// Kubeconfig is the path of the kubeconfig Up writes (its user reads
	// TokenFile, which Up keeps fresh). Both are in a private folder (0700)
	// outside the artifacts, removed by Down: the artifacts are published.
	Kubeconfig, TokenFile string
	// Image is the pushed image's exact reference (REPOSITORY:TAG).
	Image string
}

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

// Deployer is the cloud platform.
type Deployer struct {
	cfg Config
	log *slog.Logger
	out io.Writer
	now func() time.Time

	mu       sync.Mutex
	cluster  *cloud.Cluster  // set once Create or Adopt returned (even with an error)
	registry *cloud.Registry // set once EnsureRegistry returned
	refresh  *refresher
	// secretDir is the private folder (0700) of the token and kubeconfig;
	// Down removes it.
	secretDir string
	steps     *steps.Recorder
	downDone  bool
	// onRefresh (tests) gets each token refresh's result.
	onRefresh chan error
}

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
	d.steps = &steps.Recorder{Prefix: d.Name(), Topic: "cloud step", Log: d.log, Out: d.out, Now: d.now}
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

// Steps records the platform's steps (OnCluster adds the deploy step and,
// on an adopted cluster, the system's down), for the run's JUnit.
func (d *Deployer) Steps() *steps.Recorder { return d.steps }

// TeardownBudget bounds a cloud run's logs and Down: a cluster delete takes
// minutes (GKE about 5, EKS up to 15).
func (d *Deployer) TeardownBudget() time.Duration { return 45 * time.Minute }

// SystemDown: on a cluster the run created, the system's objects go with
// the cluster, so its Down (port-forwards, clients) gets DeployedDownBudget;
// on an adopted cluster, which stays, its namespace must go and its Down is
// waited for.
func (d *Deployer) SystemDown() (keep bool, budget time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cluster != nil && d.cluster.Adopted || d.cfg.Options.Cluster != "" {
		return false, 0
	}
	return false, d.cfg.DeployedDownBudget
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
func (d *Deployer) step(name string, fn func() error) error { return d.steps.Run(name, fn) }
