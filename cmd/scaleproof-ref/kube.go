package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/kube"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// AuditHPARemoved is the audit action of a HorizontalPodAutoscaler the
// console deleted from a worker Deployment (the console owns the count).
const AuditHPARemoved = "workers.hpa_removed"

// kubeFlags are the flags of the console and the edge on Kubernetes.
type kubeFlags struct {
	kubeconfig string // "" means in-cluster
	namespace  string // "" means $POD_NAMESPACE
}

func (k *kubeFlags) resolve() error {
	if k.namespace == "" {
		k.namespace = os.Getenv("POD_NAMESPACE")
	}
	if k.namespace == "" {
		return errors.New("--namespace is required with Kubernetes (or set POD_NAMESPACE from the downward API)")
	}
	return nil
}

// client returns a clientset from --kubeconfig, else the pod's in-cluster
// ServiceAccount.
func (k *kubeFlags) client() (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if k.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", k.kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client config: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return kubernetes.NewForConfig(cfg)
}

// leaderScheduler runs the scheduler (and the HPA sweep) only while this pod
// holds the Lease: during a rollout two console pods serve the API, one
// decides. On SIGTERM (ctx ends) the Lease is released at once so the new
// pod takes over within the retry period.
type leaderScheduler struct {
	client   kubernetes.Interface
	ns       string
	lease    string
	identity string
	ctrl     *controller.Controller
	target   *kube.Target
	st       store.Backend
	sweep    time.Duration
	log      *slog.Logger

	mu sync.Mutex // one RunScheduler at a time across elections
	// onLead, when set, is called when this pod starts leading and with
	// false when it stops (tests wait on it).
	onLead func(bool)
	// retry is the leader election's retry period (0: 2 s).
	retry time.Duration
}

func (l *leaderScheduler) run(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: l.lease, Namespace: l.ns},
		Client:     l.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: l.identity},
	}
	retry := l.retry
	if retry <= 0 {
		retry = 2 * time.Second
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   15 * time.Second,
			RenewDeadline:   10 * time.Second,
			RetryPeriod:     retry,
			ReleaseOnCancel: true,
			Name:            l.lease,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: l.lead,
				OnStoppedLeading: func() { l.log.Info("scheduler lease lost or released", "identity", l.identity) },
				OnNewLeader: func(id string) {
					if id != l.identity {
						l.log.Info("scheduler runs in another console pod", "leader", id)
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		le.Run(ctx)
	}
	return nil
}

// lead runs while this pod holds the Lease.
func (l *leaderScheduler) lead(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log.Info("scheduler lease acquired; this pod runs the scheduler", "identity", l.identity)
	if l.onLead != nil {
		l.onLead(true)
		defer l.onLead(false)
	}
	if err := l.ctrl.Resync(); err != nil { // take over from the state the last leader left
		l.log.Error("resync on taking the lease", "err", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); l.sweepHPAs(ctx) }()
	if err := l.ctrl.RunScheduler(ctx); err != nil {
		l.log.Error("scheduler", "err", err)
	}
	wg.Wait()
}

// sweepHPAs deletes (and audits) HPAs on worker Deployments every sweep
// period until ctx ends.
func (l *leaderScheduler) sweepHPAs(ctx context.Context) {
	t := time.NewTicker(l.sweep)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		removed, err := l.target.RemoveWorkerHPAs(cctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			l.log.Warn("hpa sweep", "err", err)
		}
		for _, r := range removed {
			_, aerr := l.st.AppendAudit(store.AuditEntry{At: time.Now(), Actor: controller.ActorScheduler,
				Group: r.Group, Zone: r.Zone, Action: AuditHPARemoved,
				Tags: map[string]string{"hpa": r.Name, "deployment": r.Deployment,
					"reason": "the console owns the worker count; an HPA on the same Deployment would fight it"}})
			if aerr != nil {
				l.log.Error("audit hpa removal", "hpa", r.Name, "err", aerr)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// kubeConsole is the console's Kubernetes side: the clientset, the
// ConfigMap store and the scale target / discovery.
type kubeConsole struct {
	client kubernetes.Interface
	store  *kube.ConfigMapStore
	target *kube.Target
}

func openKubeConsole(ctx context.Context, o consoleFlags, log *slog.Logger) (*kubeConsole, error) {
	cs, err := o.kube.client()
	if err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := kube.OpenConfigMapStore(octx, cs, o.kube.namespace, o.stateConfigMap, kube.StoreOptions{Logger: log.With("part", "state")})
	if err != nil {
		return nil, err
	}
	opts := []kube.Option{kube.WithLogger(log.With("part", "kube")), kube.WithWorkerTemplate(o.workerTemplate)}
	if o.canary {
		opts = append(opts, kube.WithCanary())
	}
	tg := kube.New(cs, o.kube.namespace, opts...)
	return &kubeConsole{client: cs, store: st, target: tg}, nil
}
