// Package kubeconfig is the platform for any Kubernetes cluster a
// kubeconfig reaches (kind's among them): Up renders the reference system's
// manifests for the profile (autoscaler/deploy/render), applies them with server-side
// apply, makes the API keys Secret, waits for the console and edge
// rollouts and returns where they answer; Down deletes the namespace and
// waits for it to go; DumpLogs writes every pod's logs and the namespace's
// events. It loads no image: the exact-tagged scaleproof-ref image must
// already be on the nodes (the kind platform loads it), and the manifests
// never pull.
//
// Where the console and edge answer: on NodeHost at the host ports the
// caller names (kind maps the NodePorts to 127.0.0.1), else through
// client-go port-forwards to 127.0.0.1 on free ports. Load only ever goes to
// those loopback addresses.
//
// One verb a file, as kubetest2's deployers: up.go, down.go, isup.go,
// dumplogs.go. Must not import scenarios/.
package kubeconfig

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// Config chooses the cluster, the namespace and what is deployed.
type Config struct {
	// Name is the table's Platform column; "" means "kubeconfig".
	Name string
	// Kubeconfig is the file ("" : $KUBECONFIG, then ~/.kube/config);
	// Context a context in it ("" : its current context).
	Kubeconfig, Context string
	// Namespace everything goes into ("" : "scaleproof"). Up creates it and
	// Down deletes it, so it must be one the run owns.
	Namespace string
	// Profile is "quick" or "published" (the manifests' overlay).
	Profile string
	// Image is the exact reference of the scaleproof-ref image already on
	// the nodes (scaleproof.local/scaleproof-ref:TAG).
	Image string
	// Group is the group the scenarios use (its admin key is made).
	Group string
	// Canary deploys the canary worker template and has the console run a
	// canary Deployment (one replica, version canary) beside each zone's
	// workers (autoscaler/deploy/render Params.Canary).
	Canary bool
	// Cloud renders the cloud overlay (autoscaler/deploy/render Params.Cloud): the
	// image is pulled from the cloud's registry, and the cloud specifics of
	// Ramen 0.7.5's autoscaling notes apply (the GKE, EKS and AKS platforms).
	Cloud bool
	// NodeHost, when set, is the address the NodePorts are reached on from
	// here (kind: 127.0.0.1), at ConsoleHostPort and EdgeHostPort (the host
	// ports mapped to the console's and the edge's NodePorts). Otherwise Up
	// port-forwards to a console and an edge pod.
	NodeHost                      string
	ConsoleHostPort, EdgeHostPort int
	// Target, when set, deploys (or adopts) a scale target the console
	// does not own (--target hpa|keda, --workload) instead of the
	// reference system; Up then fills Endpoints.Target. With NodeHost,
	// TargetHostPort is the host port mapped to the target's load
	// Service NodePort (30082) and PrometheusHostPort to Prometheus's
	// (30083, keda only).
	Target                             *platform.TargetSpec
	TargetHostPort, PrometheusHostPort int
	// PrometheusImage is the exact reference of the Prometheus image on the
	// nodes (scaleproof.local/prometheus:TAG): a keda target run deploys
	// it in the namespace (its trigger's metrics), and so does a run of
	// the reference system with Prometheus set. Unused otherwise.
	PrometheusImage string
	// Prometheus, when set, deploys the hpa policy's metric source with
	// the reference system (autoscaler/deploy/render Params.Prometheus):
	// a Prometheus in the namespace scraping the edge every
	// ScrapeInterval, which the console's hpa zones query. Up waits until
	// it scrapes the edge and returns its URL in Endpoints.PrometheusURL
	// (at PrometheusHostPort with NodeHost, else port-forwarded).
	// InflightMaxAge is the edge's --inflight-max-age then (0: its 1 min).
	Prometheus                   bool
	ScrapeInterval, EvalInterval time.Duration
	InflightMaxAge               time.Duration
	// PrometheusTimeout bounds Up's wait for that Prometheus to scrape
	// the edge (0: 2 minutes).
	PrometheusTimeout time.Duration
	// RolloutTimeout bounds the wait for the console and edge rollouts
	// (0: 3 minutes).
	RolloutTimeout time.Duration
	// AuthorizeTimeout bounds Up's wait for the cluster to authorize the
	// run (a grant that has not propagated yet; 0: 10 minutes).
	AuthorizeTimeout time.Duration
	Log              *slog.Logger
}

// Platform is the kubeconfig platform.
type Platform struct {
	cfg  Config
	log  *slog.Logger
	rest *rest.Config
	kc   kubernetes.Interface
	dyn  dynamic.Interface

	mu        sync.Mutex
	endpoints platform.Endpoints
	forwards  []chan struct{} // closed to stop a port-forward
	// workerZone is group/zone by worker pod, for the pods whose labels
	// WorkerMetrics checked (workers.go)
	workerZone map[string]string
	down       bool
	// secretDir is the private folder (0700, outside the artifacts, which
	// are published) of a target run's kubeconfig files; Down removes it.
	secretDir string
	// Timings of the last Up, for the closing figures.
	Timings Timings
}

// Timings are how long Up's steps took.
type Timings struct {
	Apply, Rollout, Ready time.Duration
}

var _ platform.Platform = (*Platform)(nil)

// renderParams are the reference system's manifests' parameters.
func (c Config) renderParams() render.Params {
	rp := render.Params{Profile: c.Profile, Namespace: c.Namespace, Image: c.Image, Canary: c.Canary, Cloud: c.Cloud}
	if c.Prometheus {
		rp.Prometheus = &render.PrometheusScrape{Image: c.PrometheusImage, ScrapeInterval: c.ScrapeInterval, EvalInterval: c.EvalInterval,
			InflightMaxAge: c.InflightMaxAge}
	}
	return rp
}

// New checks cfg (bad input: an error before anything is contacted) and
// reads the kubeconfig.
func New(cfg Config) (*Platform, error) {
	if cfg.Namespace == "" {
		cfg.Namespace = deploykube.Namespace
	}
	if cfg.Name == "" {
		cfg.Name = "kubeconfig"
	}
	if cfg.RolloutTimeout <= 0 {
		cfg.RolloutTimeout = 3 * time.Minute
	}
	if cfg.PrometheusTimeout <= 0 {
		cfg.PrometheusTimeout = 2 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var errs []error
	if cfg.Target != nil && cfg.Target.Adopt != nil && cfg.Target.Adopt.Namespace != "" {
		cfg.Namespace = cfg.Target.Adopt.Namespace // the adopted target's namespace: never created nor deleted
	}
	if errs2 := validation.IsDNS1123Label(cfg.Namespace); len(errs2) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q: %s", cfg.Namespace, strings.Join(errs2, "; ")))
	}
	if cfg.Target != nil {
		errs = append(errs, checkTarget(cfg)...)
	} else if cfg.Group == "" {
		errs = append(errs, errors.New("no group"))
	}
	if cfg.NodeHost != "" && cfg.Target == nil {
		ports := map[string]int{"console": cfg.ConsoleHostPort, "edge": cfg.EdgeHostPort}
		if cfg.Prometheus {
			ports["prometheus"] = cfg.PrometheusHostPort
		}
		errs = append(errs, checkNodeHost(cfg.NodeHost, ports)...)
	}
	if cfg.Target == nil {
		if _, err := render.Render(cfg.renderParams()); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("platform kubeconfig: %w", err)
	}
	rc, err := restConfig(cfg.Kubeconfig, cfg.Context)
	if err != nil {
		return nil, fmt.Errorf("platform kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = 50, 100
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("platform kubeconfig: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("platform kubeconfig: %w", err)
	}
	return &Platform{cfg: cfg, log: cfg.Log, rest: rc, kc: kc, dyn: dyn}, nil
}

// Name is the table's Platform column.
func (p *Platform) Name() string { return p.cfg.Name }

// Client is the clientset Up uses (specs use it to check the cluster).
func (p *Platform) Client() kubernetes.Interface { return p.kc }

// Namespace is where the system runs.
func (p *Platform) Namespace() string { return p.cfg.Namespace }

// restConfig loads a client config the way kubectl does: the file at path
// (else $KUBECONFIG, else ~/.kube/config) and its context kubeContext (""
// for its current context).
func restConfig(path, kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, errors.New("no kubeconfig found: pass --kubeconfig FILE or set $KUBECONFIG (the default is ~/.kube/config)")
	}
	return rc, err
}
