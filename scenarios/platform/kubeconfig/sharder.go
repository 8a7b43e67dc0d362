package kubeconfig

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// SharderConfig is where `scaleproof load --load-shards` runs its shards:
// a namespace that exists, on the cluster a kubeconfig reaches, with an
// image on the nodes that holds the scaleproof binary (autoscaler/deploy/image).
type SharderConfig struct {
	Kubeconfig, Context string
	Namespace           string
	Image               string
	Log                 *slog.Logger
}

// Sharder runs distributed loads on a cluster without deploying the
// system: the LoadSharder of `scaleproof load`. What it creates (the
// load's ConfigMap, ServiceAccount, Role, RoleBinding and Job, see
// autoscaler/deploy/kube.LoadShardJob) stays in the namespace, labelled
// scaleproof.io/load=<name>.
type Sharder struct {
	r *shardRunner
}

var _ platform.LoadSharder = (*Sharder)(nil)

// NewSharder checks cfg and reads the kubeconfig; nothing is contacted.
func NewSharder(cfg SharderConfig) (*Sharder, error) {
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("load shards: namespace %q: %v", cfg.Namespace, errs)
	}
	if cfg.Image == "" {
		return nil, fmt.Errorf("load shards: no image: the exact image on the nodes that holds /scaleproof (scaleproof.local/scaleproof-ref:TAG)")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rc, err := restConfig(cfg.Kubeconfig, cfg.Context)
	if err != nil {
		return nil, fmt.Errorf("load shards: %w", err)
	}
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("load shards: %w", err)
	}
	return &Sharder{r: &shardRunner{kc: kc, ns: cfg.Namespace, image: cfg.Image, log: cfg.Log}}, nil
}

// ShardEdgeURL is the reference edge's in-cluster URL, when the system runs
// in the namespace.
func (s *Sharder) ShardEdgeURL(ctx context.Context) (string, error) {
	return shardEdgeURL(ctx, s.r.kc, s.r.ns)
}

// RunLoadShards runs job in the namespace (see platform.LoadSharder).
func (s *Sharder) RunLoadShards(ctx context.Context, job platform.ShardJob) ([]platform.ShardOutput, error) {
	return s.r.run(ctx, job)
}
