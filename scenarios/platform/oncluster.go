package platform

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/internal/steps"
)

// Step is one timed step of a platform (a JUnit case of the run): the
// cluster maker's and the deploy step's.
type Step = steps.Step

// ClusterMaker makes a cluster and hands it over, as kubetest2's deployers
// do: kind/ (H: its kubeconfig and host ports) and cloud/deployer (H: its
// kubeconfig, token file and pushed image). It knows nothing of the system
// deployed on the cluster; OnCluster puts the two together.
type ClusterMaker[H any] interface {
	// Name is the maker's name as reports show it ("kind", "GKE").
	Name() string
	// Up makes (or adopts) the cluster and returns what the deploy step
	// needs. Whatever it made is deleted by Down, also after a failed Up.
	Up(ctx context.Context) (H, error)
	// Down deletes what Up made; safe more than once and after a failed Up.
	Down(ctx context.Context) error
	// IsUp reports whether the cluster exists.
	IsUp(ctx context.Context) (bool, error)
	// DumpLogs copies the maker's own logs (nodes, what it created) into dir.
	DumpLogs(ctx context.Context, dir string) error
	// SystemDown says how the deployed system goes before Down: keep (the
	// cluster stays up with the system on it: kind's --keep), or within
	// budget (> 0: the system's objects go with the cluster, only what the
	// deploy step holds on this machine needs its Down), or waited for
	// (budget 0: the cluster stays, so the system's namespace must go).
	SystemDown() (keep bool, budget time.Duration)
	// Steps records the maker's steps; OnCluster adds its own to it.
	Steps() *steps.Recorder
}

// Deploy deploys the system onto the cluster a maker handed over and
// returns the platform that serves it (the kubeconfig platform).
type Deploy[H any] func(ctx context.Context, handoff H) (Platform, error)

// OnCluster is a cluster maker and the system deployed on its cluster as
// one Platform: Up makes the cluster then deploys (the step "deploy");
// DumpLogs dumps the system's logs then the maker's; Down takes the system
// down as the maker says (SystemDown), then the cluster; IsUp asks both; a
// load shard runs on the deployed system when it can run them.
type OnCluster[H any] struct {
	maker  ClusterMaker[H]
	deploy Deploy[H]
	opts   OnClusterOptions

	mu       sync.Mutex
	deployed Platform
	dumped   bool
	downDone bool
}

// OnClusterOptions tune OnCluster.
type OnClusterOptions struct {
	// LogsDir, when set, is where Down dumps the logs first when DumpLogs
	// has not run (the cloud platform's: its cluster's logs are gone after).
	LogsDir string
	Log     *slog.Logger // nil: none
}

// NewOnCluster puts maker and deploy together; deploy nil: Up stops once
// the cluster is handed over and returns empty Endpoints.
func NewOnCluster[H any](maker ClusterMaker[H], deploy Deploy[H], o OnClusterOptions) *OnCluster[H] {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &OnCluster[H]{maker: maker, deploy: deploy, opts: o}
}

var (
	_ Platform    = (*OnCluster[struct{}])(nil)
	_ LoadSharder = (*OnCluster[struct{}])(nil)
)

// Maker is the cluster maker.
func (o *OnCluster[H]) Maker() ClusterMaker[H] { return o.maker }

// Name is the maker's.
func (o *OnCluster[H]) Name() string { return o.maker.Name() }

// Steps are the maker's steps and the deploy step, oldest first.
func (o *OnCluster[H]) Steps() []Step { return o.maker.Steps().Steps() }

// StepPrefix is what a JUnit case of these steps starts with ("kind: ").
func (o *OnCluster[H]) StepPrefix() string { return strings.ToLower(o.maker.Name()) + ": " }

// TeardownBudget is the maker's (TeardownBudget() time.Duration: a cloud's
// cluster delete takes minutes), else 0: the lifecycle's default
// (scenarios/run).
func (o *OnCluster[H]) TeardownBudget() time.Duration {
	if b, ok := o.maker.(interface{ TeardownBudget() time.Duration }); ok {
		return b.TeardownBudget()
	}
	return 0
}

// Up makes the cluster and deploys the system.
func (o *OnCluster[H]) Up(ctx context.Context) (Endpoints, error) {
	h, err := o.maker.Up(ctx)
	if err != nil || o.deploy == nil {
		return Endpoints{}, err
	}
	var ep Endpoints
	err = o.maker.Steps().Run("deploy", func() error {
		pf, err := o.deploy(ctx, h)
		if err != nil {
			return err
		}
		if pf == nil {
			return errors.New("deploy returned no platform")
		}
		o.mu.Lock()
		o.deployed = pf
		o.mu.Unlock()
		ep, err = pf.Up(ctx)
		return err
	})
	return ep, err
}

// DumpLogs copies the system's logs, then the maker's, into dir.
func (o *OnCluster[H]) DumpLogs(ctx context.Context, dir string) error {
	o.mu.Lock()
	dep := o.deployed
	o.dumped = true
	o.mu.Unlock()
	var errs []error
	if dep != nil {
		errs = append(errs, dep.DumpLogs(ctx, dir))
	}
	errs = append(errs, o.maker.DumpLogs(ctx, dir))
	return errors.Join(errs...)
}

// Down dumps the logs first when DumpLogs has not run and LogsDir is set,
// takes the system down as the maker says, then calls the maker's Down.
// Safe to call more than once and after a failed Up.
func (o *OnCluster[H]) Down(ctx context.Context) error {
	o.mu.Lock()
	if o.downDone {
		o.mu.Unlock()
		return nil
	}
	o.downDone = true
	dep, dumped := o.deployed, o.dumped
	o.mu.Unlock()
	var errs []error
	if dep != nil && !dumped && o.opts.LogsDir != "" {
		if err := o.DumpLogs(ctx, o.opts.LogsDir); err != nil {
			o.opts.Log.Warn("dump logs before down", "err", err)
		}
	}
	if keep, budget := o.maker.SystemDown(); dep != nil && !keep {
		if budget > 0 {
			dctx, cancel := context.WithTimeout(ctx, budget)
			if err := dep.Down(dctx); err != nil {
				o.opts.Log.Info("deployed system down cut short; the cluster delete removes the rest", "err", err)
			}
			cancel()
		} else {
			errs = append(errs, o.maker.Steps().Run("down deployed system", func() error { return dep.Down(ctx) }))
		}
	}
	errs = append(errs, o.maker.Down(ctx))
	return errors.Join(errs...)
}

// IsUp reports whether the cluster exists and the deployed system answers.
func (o *OnCluster[H]) IsUp(ctx context.Context) (bool, error) {
	up, err := o.maker.IsUp(ctx)
	if err != nil || !up {
		return false, err
	}
	o.mu.Lock()
	dep := o.deployed
	o.mu.Unlock()
	if dep == nil {
		return true, nil
	}
	return dep.IsUp(ctx)
}

// errNotDeployed is the LoadSharder error before the system is deployed.
var errNotDeployed = errors.New("load shards: the system is not deployed yet")

func (o *OnCluster[H]) sharder() (LoadSharder, error) {
	o.mu.Lock()
	d := o.deployed
	o.mu.Unlock()
	if d == nil {
		return nil, errNotDeployed
	}
	s, ok := d.(LoadSharder)
	if !ok {
		return nil, errors.New("load shards: the deployed platform cannot run load shards")
	}
	return s, nil
}

// ShardEdgeURL is the deployed platform's (the edge Service inside the
// cluster).
func (o *OnCluster[H]) ShardEdgeURL(ctx context.Context) (string, error) {
	s, err := o.sharder()
	if err != nil {
		return "", err
	}
	return s.ShardEdgeURL(ctx)
}

// RunLoadShards runs the load as an Indexed Job on the cluster through the
// deployed platform.
func (o *OnCluster[H]) RunLoadShards(ctx context.Context, job ShardJob) ([]ShardOutput, error) {
	s, err := o.sharder()
	if err != nil {
		return nil, err
	}
	return s.RunLoadShards(ctx, job)
}

var (
	_ Faulter       = (*OnCluster[struct{}])(nil)
	_ Offerer       = (*OnCluster[struct{}])(nil)
	_ MetricsReader = (*OnCluster[struct{}])(nil)
)

// faulter is the deployed platform's fault actions (FaulterOf), none
// before the system is deployed.
func (o *OnCluster[H]) faulter() Faulter {
	o.mu.Lock()
	d := o.deployed
	o.mu.Unlock()
	if d == nil {
		return NoFaults{Platform: o.Name(), Reason: "the system is not deployed yet"}
	}
	return FaulterOf(d, "")
}

// Offers is the deployed platform's (Offerer), else nil when it offers
// every action and a *NotOfferedError when it offers none.
func (o *OnCluster[H]) Offers(action string) error {
	switch f := o.faulter().(type) {
	case NoFaults:
		return f.no(action)
	case Offerer:
		return f.Offers(action)
	}
	return nil
}

// Workers is the deployed platform's.
func (o *OnCluster[H]) Workers(ctx context.Context, group, zone string) ([]Worker, error) {
	return o.faulter().Workers(ctx, group, zone)
}

// WorkerMetrics is the deployed platform's (MetricsReader), else a
// *NotOfferedError.
func (o *OnCluster[H]) WorkerMetrics(ctx context.Context, group, zone, id string) ([]byte, error) {
	f := o.faulter()
	if m, ok := f.(MetricsReader); ok {
		return m.WorkerMetrics(ctx, group, zone, id)
	}
	return nil, &NotOfferedError{Platform: o.Name(), Action: "read a worker's /metrics", Reason: "the deployed platform does not read workers' /metrics"}
}

// Freeze is the deployed platform's.
func (o *OnCluster[H]) Freeze(ctx context.Context, group, zone, id string) error {
	return o.faulter().Freeze(ctx, group, zone, id)
}

// Thaw is the deployed platform's.
func (o *OnCluster[H]) Thaw(ctx context.Context, group, zone, id string) error {
	return o.faulter().Thaw(ctx, group, zone, id)
}

// Kill is the deployed platform's.
func (o *OnCluster[H]) Kill(ctx context.Context, group, zone, id string) error {
	return o.faulter().Kill(ctx, group, zone, id)
}

// Restart is the deployed platform's.
func (o *OnCluster[H]) Restart(ctx context.Context, part Part) error {
	return o.faulter().Restart(ctx, part)
}

// FailReadiness is the deployed platform's.
func (o *OnCluster[H]) FailReadiness(ctx context.Context, group, zone, id string) (Readiness, error) {
	return o.faulter().FailReadiness(ctx, group, zone, id)
}

// PassReadiness is the deployed platform's.
func (o *OnCluster[H]) PassReadiness(ctx context.Context, group, zone, id string) error {
	return o.faulter().PassReadiness(ctx, group, zone, id)
}
