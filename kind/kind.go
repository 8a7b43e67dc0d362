// Package kind is the kind platform: a single-node Kubernetes cluster made
// with kind's Go API (sigs.k8s.io/kind/pkg/cluster, never a kind binary),
// the harness's images loaded into the node through kind's image-archive
// loading, then handed over (Cluster: its kubeconfig and host ports). A
// cluster maker only: platform.OnCluster puts it together with the system
// deployed on it (the kubeconfig platform). One verb a file, as kubetest2's
// deployers are: up.go, down.go, isup.go, dumplogs.go, kubeconfig.go;
// provider.go picks the container engine.
//
// On a host whose Docker allows privileged containers, kind's published
// kindest/node image is used when Docker has it. Elsewhere (podman; or
// Docker without that image) the node image is built offline by
// kind/nodeimage, once, and cached.
package kind

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/scaleproof/scaleproof/internal/steps"
)

// Cluster is what Up hands over to the deploy step: the cluster's
// kubeconfig and the host ports (on 127.0.0.1) mapped to the node's
// NodePorts.
type Cluster struct {
	Name       string
	Kubeconfig string // path of the kubeconfig file (in the artifacts folder)
	NodeHost   string // "127.0.0.1"
	// HostPorts maps each NodePort of Config.NodePorts to its host port.
	HostPorts map[int]int
}

// Config configures the kind platform.
type Config struct {
	RunID     string // part of the cluster name: two runs at once never collide
	Provider  string // auto | docker | podman
	NodeImage string // "" = kind's published image when Docker has it, else ours (built if missing)
	Keep      bool   // Down leaves the cluster (prints how to delete it)
	// Artifacts is the run's artifacts folder: the kubeconfig and kind's
	// logs go there.
	Artifacts string
	// NodePorts are the node's NodePorts mapped to free host ports on
	// 127.0.0.1 (load goes to loopback only).
	NodePorts []int
	// Images returns the image archives (docker-archive tars) to load into
	// the node before deploying.
	Images func(ctx context.Context) ([]string, error)
	// EnsureNodeImage makes sure the engine has our node image and returns
	// its tag (kind/nodeimage); nil uses the default builder.
	EnsureNodeImage func(ctx context.Context, engine string) (string, error)
	Prober          Prober // nil: the real engines
	Log             *slog.Logger
	Out             io.Writer // progress lines; nil discards
	Now             func() time.Time
}

// Kind is the kind platform.
type Kind struct {
	cfg        Config
	name       string
	kubeconfig string

	mu        sync.Mutex
	provider  *kindcluster.Provider
	engine    Engine
	hostPorts map[int]int
	created   bool
	steps     *steps.Recorder
	downDone  bool
	testAPI   clusters // tests only: replaces kind's provider
}

// New makes the kind platform; nothing is contacted until Up.
func New(cfg Config) (*Kind, error) {
	switch cfg.Provider {
	case "":
		cfg.Provider = "auto"
	case "auto", "docker", "podman":
	default:
		return nil, fmt.Errorf("--kind-provider %q: want auto, docker or podman", cfg.Provider)
	}
	if cfg.RunID == "" {
		return nil, fmt.Errorf("kind: a run id is needed (it names the cluster)")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Prober == nil {
		cfg.Prober = realProber{}
	}
	k := &Kind{cfg: cfg, name: ClusterName(cfg.RunID),
		steps: &steps.Recorder{Prefix: "kind", Topic: "kind step", Log: cfg.Log, Out: cfg.Out, Now: cfg.Now}}
	k.kubeconfig = kubeconfigPath(cfg.Artifacts)
	return k, nil
}

// Name is "kind".
func (k *Kind) Name() string { return "kind" }

// ClusterName is the kind cluster's name for a run id: "scaleproof-" and
// the id's letters and digits, lower case, at most 50 characters (kind
// names become container and host names).
func ClusterName(runID string) string {
	b := []byte("scaleproof-")
	for _, r := range []byte(runID) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b = append(b, r)
		case r >= 'A' && r <= 'Z':
			b = append(b, r+'a'-'A')
		case r == '-' || r == '_' || r == '.':
			if b[len(b)-1] != '-' {
				b = append(b, '-')
			}
		}
	}
	if len(b) > 50 {
		b = b[:50]
	}
	for len(b) > 0 && b[len(b)-1] == '-' {
		b = b[:len(b)-1]
	}
	return string(b)
}

// ClusterName is this run's cluster name.
func (k *Kind) ClusterName() string { return k.name }

// Steps records the platform's steps (provider, node image, create,
// load, logs, delete; OnCluster adds the deploy step), for the run's JUnit.
func (k *Kind) Steps() *steps.Recorder { return k.steps }

// step runs fn as a named, timed step.
func (k *Kind) step(name string, fn func() error) error { return k.steps.Run(name, fn) }
