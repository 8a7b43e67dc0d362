package kube_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/scaleproof/scaleproof/autoscaler/controller/kube"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

// TestCanaryDeployment: with WithCanary the first scale of a zone makes its
// canary Deployment beside the worker Deployment (one replica, the same pod
// template with the canary track label and --version=canary, pods the
// zone's Service selects); later scales, up and down, never change or
// delete it, and its pod is never marked as a victim.
func TestCanaryDeployment(t *testing.T) {
	wt := workerTemplate()
	wt.Template.Spec.Containers[0].Args = []string{"worker", "--listen=0.0.0.0:8080", "--version=stable"}
	c := newClient(wt)
	tg := kube.New(c, ns, kube.WithWorkerTemplate("scaleproof-worker"), kube.WithCanary())
	ctx := context.Background()
	if err := tg.Scale(ctx, "g1", "a", 1, nil); err != nil {
		t.Fatal(err)
	}
	name, _ := kube.CanaryName("g1", "a")
	if name != "worker-g1-a-canary" {
		t.Fatalf("canary name %q", name)
	}
	cd, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no canary deployment: %v", err)
	}
	pl := cd.Spec.Template.Labels
	args := cd.Spec.Template.Spec.Containers[0].Args
	if *cd.Spec.Replicas != 1 || pl[kube.LabelTrack] != kube.TrackCanary || cd.Labels[kube.LabelTrack] != kube.TrackCanary ||
		cd.Spec.Selector.MatchLabels[kube.LabelTrack] != kube.TrackCanary || !slices.Contains(args, "--version=canary") ||
		slices.Contains(args, "--version=stable") {
		t.Fatalf("canary deployment: replicas %d, labels %v, pod labels %v, selector %v, args %v",
			*cd.Spec.Replicas, cd.Labels, pl, cd.Spec.Selector.MatchLabels, args)
	}
	for k, v := range cd.Spec.Selector.MatchLabels {
		if pl[k] != v {
			t.Errorf("canary selector %s=%s does not match its pod labels %v", k, v, pl)
		}
	}
	svc, err := c.CoreV1().Services(ns).Get(ctx, "worker-g1-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range svc.Spec.Selector {
		if pl[k] != v {
			t.Errorf("the zone's Service selects %s=%s, which the canary's pods do not carry: %v", k, v, pl)
		}
	}
	stable, _ := c.AppsV1().Deployments(ns).Get(ctx, "worker-g1-a", metav1.GetOptions{})
	if stable.Spec.Template.Labels[kube.LabelTrack] != "" || !slices.Contains(stable.Spec.Template.Spec.Containers[0].Args, "--version=stable") {
		t.Fatalf("the stable deployment changed: labels %v, args %v", stable.Spec.Template.Labels, stable.Spec.Template.Spec.Containers[0].Args)
	}

	// Up to 3 and down to 1 naming the canary's pod first: the stable
	// Deployment follows, the canary stays at 1 and its pod is not marked.
	canaryPod := pod("worker-g1-a-canary-x", "g1", "a", t0)
	canaryPod.Labels[kube.LabelTrack] = kube.TrackCanary
	stablePod := pod("worker-g1-a-s1", "g1", "a", t0)
	for _, p := range []*corev1.Pod{canaryPod, stablePod} {
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tg.Scale(ctx, "g1", "a", 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := tg.Scale(ctx, "g1", "a", 2, []string{canaryPod.Name, stablePod.Name}); err != nil {
		t.Fatal(err)
	}
	cd, err = c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || *cd.Spec.Replicas != 1 {
		t.Fatalf("canary deployment after scaling: %v, %v; want it at 1", cd, err)
	}
	stable, _ = c.AppsV1().Deployments(ns).Get(ctx, "worker-g1-a", metav1.GetOptions{})
	if *stable.Spec.Replicas != 2 {
		t.Fatalf("stable replicas %d, want 2", *stable.Spec.Replicas)
	}
	cp, _ := c.CoreV1().Pods(ns).Get(ctx, canaryPod.Name, metav1.GetOptions{})
	sp, _ := c.CoreV1().Pods(ns).Get(ctx, stablePod.Name, metav1.GetOptions{})
	if cp.Annotations[kube.AnnotationDeletionCost] != "" || sp.Annotations[kube.AnnotationDeletionCost] != kube.VictimDeletionCost {
		t.Fatalf("deletion costs: canary %q, stable %q; want the stable pod marked, never the canary",
			cp.Annotations[kube.AnnotationDeletionCost], sp.Annotations[kube.AnnotationDeletionCost])
	}
	for _, a := range c.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "deployments" {
			t.Fatalf("a deployment was deleted: %v", a)
		}
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetVerb() == "update" && a.GetResource().Resource == "deployments" {
			if m, ok := u.GetObject().(metav1.Object); ok && m.GetName() == name {
				t.Fatalf("the canary deployment was updated (%s): %v", a.GetSubresource(), a)
			}
		}
	}

	// Discovery marks the canary's pod.
	yes := ptr(true)
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice("worker-g1-a-x", "g1", "a", discoveryv1.AddressTypeIPv4, kube.PortName,
		ep{pod: canaryPod.Name, ip: "10.0.0.9", ready: yes}, ep{pod: stablePod.Name, ip: "10.0.0.1", ready: yes}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eps, err := tg.Endpoints(ctx, "g1", "a")
	if err != nil || len(eps) != 2 {
		t.Fatalf("endpoints %+v, %v", eps, err)
	}
	for _, e := range eps {
		if e.Canary != (e.ID == canaryPod.Name) {
			t.Fatalf("endpoint %+v: canary %v, want it only on %s", e, e.Canary, canaryPod.Name)
		}
	}
	zs, err := tg.Zones(ctx)
	if err != nil || len(zs) != 1 || len(zs[0].Endpoints) != 2 || !slices.ContainsFunc(zs[0].Endpoints, func(e fleet.Endpoint) bool { return e.Canary }) {
		t.Fatalf("edge discovery %+v, %v: want the zone with its canary marked", zs, err)
	}
}

// TestCanaryForExistingZone: a zone whose worker Deployment exists (made
// before the canary was on) gets its canary at its next scale; without
// WithCanary nothing is made.
func TestCanaryForExistingZone(t *testing.T) {
	c := newClient(deployment("g1", "old", 2))
	ctx := context.Background()
	if err := kube.New(c, ns).Scale(ctx, "g1", "old", 3, nil); err != nil {
		t.Fatal(err)
	}
	name, _ := kube.CanaryName("g1", "old")
	if _, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Fatal("a canary without WithCanary")
	}
	if err := kube.New(c, ns, kube.WithCanary()).Scale(ctx, "g1", "old", 2, nil); err != nil {
		t.Fatal(err)
	}
	if d, err := c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 1 {
		t.Fatalf("canary of an existing zone: %v, %v", d, err)
	}
}

func TestCanaryName(t *testing.T) {
	long := strings.Repeat("z", 50)
	for _, tc := range [][2]string{{"g1", "a"}, {"g1", long}, {"G.1", "a_b"}} {
		n, err := kube.CanaryName(tc[0], tc[1])
		d, _ := kube.DeploymentName(tc[0], tc[1])
		if err != nil || len(n) > 63 || !strings.HasSuffix(n, "-canary") || n == d {
			t.Errorf("CanaryName(%q, %q) = %q, %v", tc[0], tc[1], n, err)
		}
	}
	a, _ := kube.CanaryName("g1", long+"x")
	b, _ := kube.CanaryName("g1", long+"y")
	if a == b {
		t.Errorf("two long zones share the canary name %q", a)
	}
}
