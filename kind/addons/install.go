package addons

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
	"github.com/scaleproof/scaleproof/internal/kubeapply"
)

// FieldManager is the server-side apply manager of what Install applies.
const FieldManager = "scaleproof-addons"

// The APIServices Install waits for, and the API group versions they serve.
const (
	MetricsAPIService         = "v1beta1.metrics.k8s.io"          // metrics-server: NodeMetrics, PodMetrics
	ExternalMetricsAPIService = "v1beta1.external.metrics.k8s.io" // KEDA's metrics API server
	MetricsGroupVersion       = "metrics.k8s.io/v1beta1"
	ExternalGroupVersion      = "external.metrics.k8s.io/v1beta1"
)

// Images are the exact references of the add-ons' images, already on the
// node (kind load): kind/kedaimage's refs. Only those of the add-ons asked
// for are needed.
type Images struct {
	MetricsServer        string // scaleproof.local/metrics-server:TAG
	KEDAOperator         string // scaleproof.local/keda:TAG
	KEDAMetricsAPIServer string // scaleproof.local/keda-metrics-apiserver:TAG
	// KEDAWebhooks, when not "", adds KEDA's admission webhooks
	// (scaleproof.local/keda-admission-webhooks:TAG).
	KEDAWebhooks string
}

// Options choose what Install installs and how long it waits.
type Options struct {
	MetricsServer bool // metrics-server into kube-system (--target hpa)
	KEDA          bool // KEDA into the namespace keda (--target keda)
	Images        Images
	Log           *slog.Logger
	// Timeout bounds Install's waits from its start (rollouts, APIServices,
	// the first NodeMetrics); 0 is DefaultTimeout.
	Timeout time.Duration
	// Interval is the wait between two polls; 0 is 1 s.
	Interval time.Duration
	// Clock is the time Install waits on; nil is the real one.
	Clock Clock
}

// DefaultTimeout bounds Install's waits when Options.Timeout is 0: a cold
// kind node pulls nothing (the images are loaded), so minutes are plenty.
const DefaultTimeout = 5 * time.Minute

// Timings are how long Install's steps took. A step not run is 0.
type Timings struct {
	Apply       time.Duration // server-side apply of every object
	Rollout     time.Duration // until every add-on Deployment rolled out
	APIServices time.Duration // until the add-ons' APIServices were Available
	// MetricsReady is until metrics.k8s.io listed a NodeMetrics with usage
	// (metrics-server's first scrape) and external.metrics.k8s.io answered
	// discovery (KEDA).
	MetricsReady time.Duration
	Total        time.Duration
}

// clients are what Install talks to (fakes in tests).
type clients struct {
	kc     kubernetes.Interface
	dyn    dynamic.Interface
	disc   discovery.DiscoveryInterface
	mapper meta.RESTMapper
}

// Install applies the add-ons o asks for into the cluster of the
// kubeconfig file at kubeconfigPath (its current context) with server-side
// apply, then waits, all within o.Timeout: for their Deployments to roll
// out (metrics-server; keda-operator, keda-metrics-apiserver and, with
// webhooks, keda-admission), for their APIServices (v1beta1.metrics.k8s.io;
// v1beta1.external.metrics.k8s.io) to be Available, and, for
// metrics-server, for metrics.k8s.io to list a NodeMetrics with usage
// (what `kubectl top nodes` shows); for KEDA, for external.metrics.k8s.io
// to answer discovery. Asking for nothing, or for an add-on without its
// image refs, is an error before the cluster is contacted. A wait that runs
// out names what was not ready and its last status (the Deployment's
// counts and its pods' waiting reasons; the APIService's Available
// condition and its message). The timings of the steps done are returned
// with any error.
func Install(ctx context.Context, kubeconfigPath string, o Options) (Timings, error) {
	objs, err := o.objects()
	if err != nil {
		return Timings{}, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		return Timings{}, fmt.Errorf("addons: kubeconfig %s: %w", kubeconfigPath, err)
	}
	// every request bounded: an aggregated API that never answers
	// (discovery takes no context) must not outlast the wait
	rc.Timeout = 30 * time.Second
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return Timings{}, fmt.Errorf("addons: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return Timings{}, fmt.Errorf("addons: %w", err)
	}
	return install(ctx, clients{kc: kc, dyn: dyn, disc: kc.Discovery(), mapper: kubeapply.Mapper(kc.Discovery())}, o, objs)
}

// deployment is one add-on Deployment waited for.
type deployment struct{ namespace, name string }

// objects renders what o asks for, metrics-server first.
func (o Options) objects() ([]*unstructured.Unstructured, error) {
	if !o.MetricsServer && !o.KEDA {
		return nil, errors.New("addons: nothing to install (want metrics-server, KEDA or both)")
	}
	var objs []*unstructured.Unstructured
	if o.MetricsServer {
		if o.Images.MetricsServer == "" {
			return nil, errors.New("addons: metrics-server: no image (scaleproof kind keda-images --only metrics-server builds it)")
		}
		ms, err := render.MetricsServer(o.Images.MetricsServer)
		if err != nil {
			return nil, fmt.Errorf("addons: %w", err)
		}
		objs = append(objs, ms...)
	}
	if o.KEDA {
		if o.Images.KEDAOperator == "" || o.Images.KEDAMetricsAPIServer == "" {
			return nil, errors.New("addons: KEDA: the operator's and the metrics API server's images are both needed (scaleproof kind keda-images builds them)")
		}
		k, err := render.KEDA(render.KEDAParams{Operator: o.Images.KEDAOperator, MetricsAPIServer: o.Images.KEDAMetricsAPIServer, Webhooks: o.Images.KEDAWebhooks})
		if err != nil {
			return nil, fmt.Errorf("addons: %w", err)
		}
		objs = append(objs, k...)
	}
	return objs, nil
}

func (o Options) deployments() []deployment {
	var ds []deployment
	if o.MetricsServer {
		ds = append(ds, deployment{render.MetricsServerNamespace, "metrics-server"})
	}
	if o.KEDA {
		ds = append(ds, deployment{render.KEDANamespace, "keda-operator"}, deployment{render.KEDANamespace, "keda-metrics-apiserver"})
		if o.Images.KEDAWebhooks != "" {
			ds = append(ds, deployment{render.KEDANamespace, "keda-admission"})
		}
	}
	return ds
}

func (o Options) apiServices() []string {
	var as []string
	if o.MetricsServer {
		as = append(as, MetricsAPIService)
	}
	if o.KEDA {
		as = append(as, ExternalMetricsAPIService)
	}
	return as
}

func install(ctx context.Context, c clients, o Options, objs []*unstructured.Unstructured) (Timings, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	w := &waiter{clk: o.Clock, interval: o.Interval, deadline: o.Clock.Now().Add(o.Timeout), timeout: o.Timeout}
	start := o.Clock.Now()
	var t Timings
	step := func(d *time.Duration, name string, fn func() error) error {
		s := o.Clock.Now()
		err := fn()
		*d = o.Clock.Now().Sub(s)
		t.Total = o.Clock.Now().Sub(start)
		if err != nil {
			o.Log.Error("addons step failed", "step", name, "seconds", d.Seconds(), "err", err)
			return err
		}
		o.Log.Info("addons step done", "step", name, "seconds", d.Seconds())
		return nil
	}
	if err := step(&t.Apply, "apply", func() error {
		if err := kubeapply.Apply(ctx, c.dyn, c.mapper, FieldManager, objs); err != nil {
			return fmt.Errorf("addons: %w", err)
		}
		return nil
	}); err != nil {
		return t, err
	}
	if err := step(&t.Rollout, "rollout", func() error {
		for _, d := range o.deployments() {
			if err := w.rollout(ctx, c.kc, d.namespace, d.name); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return t, err
	}
	if err := step(&t.APIServices, "apiservices", func() error {
		for _, name := range o.apiServices() {
			if err := w.apiService(ctx, c.dyn, name); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return t, err
	}
	err := step(&t.MetricsReady, "metrics ready", func() error {
		if o.MetricsServer {
			if err := w.nodeMetrics(ctx, c.dyn); err != nil {
				return err
			}
		}
		if o.KEDA {
			if err := w.discovery(ctx, c.disc, c.dyn, ExternalGroupVersion, ExternalMetricsAPIService); err != nil {
				return err
			}
		}
		return nil
	})
	return t, err
}
