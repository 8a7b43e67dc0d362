package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/kube"
)

// pod is one console pod of the test: its controller over the shared
// ConfigMap state and its leader elector.
type pod struct {
	ls     *leaderScheduler
	leads  chan bool
	cancel context.CancelFunc
	done   chan struct{}
}

func startPod(t *testing.T, c *fake.Clientset, id string) *pod {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := kube.OpenConfigMapStore(ctx, c, "sp", "scaleproof-state", kube.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tg := kube.New(c, "sp")
	cfg := autoscaler.DefaultStepConfig()
	ctrl, err := controller.New(controller.Options{Store: st, Target: tg, Discovery: tg, Scraper: controller.NewHTTPScraper(time.Second),
		Policy: controller.StepPolicy(cfg), StartupGrace: cfg.StartupGrace, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	p := &pod{leads: make(chan bool, 4), cancel: cancel, done: make(chan struct{})}
	p.ls = &leaderScheduler{client: c, ns: "sp", lease: "scaleproof-console", identity: id, ctrl: ctrl, target: tg, st: st,
		sweep: time.Hour, log: slog.New(slog.DiscardHandler), retry: 100 * time.Millisecond, onLead: func(b bool) { p.leads <- b }}
	go func() { defer close(p.done); _ = p.ls.run(ctx) }()
	return p
}

func (p *pod) stop() { p.cancel(); <-p.done }

// TestOneSchedulerAcrossPods: of two console pods, one leads; when it stops
// (SIGTERM during a rollout) it releases the Lease and the other takes over.
func TestOneSchedulerAcrossPods(t *testing.T) {
	c := fake.NewClientset()
	a := startPod(t, c, "console-a")
	select {
	case got := <-a.leads:
		if !got {
			t.Fatal("the first pod stopped leading before it led")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first pod never led")
	}
	b := startPod(t, c, "console-b")
	defer b.stop()
	lease, err := c.CoordinationV1().Leases("sp").Get(context.Background(), "scaleproof-console", metav1.GetOptions{})
	if err != nil || *lease.Spec.HolderIdentity != "console-a" {
		t.Fatalf("lease = %+v, %v; want held by console-a", lease, err)
	}
	select {
	case <-b.leads:
		t.Fatal("the second pod leads while the first holds the Lease")
	default:
	}

	a.stop() // ReleaseOnCancel: the Lease is free at once
	if got := <-a.leads; got {
		t.Fatal("the first pod did not stop leading")
	}
	select {
	case got := <-b.leads:
		if !got {
			t.Fatal("the second pod reported stopping first")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second pod never took over")
	}
	lease, err = c.CoordinationV1().Leases("sp").Get(context.Background(), "scaleproof-console", metav1.GetOptions{})
	if err != nil || *lease.Spec.HolderIdentity != "console-b" {
		t.Fatalf("lease = %+v, %v; want held by console-b", lease, err)
	}
}
