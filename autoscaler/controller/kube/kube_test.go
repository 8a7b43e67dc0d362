package kube_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/scaleproof/scaleproof/autoscaler/controller/kube"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

const ns = "scaleproof"

var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

func zoneLabels(group, zone string) map[string]string {
	return map[string]string{
		kube.LabelGroup:     group,
		kube.LabelZone:      zone,
		kube.LabelComponent: kube.ComponentWorker,
	}
}

func deployment(group, zone string, replicas int32) *appsv1.Deployment {
	name, _ := kube.DeploymentName(group, zone)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: zoneLabels(group, zone)},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
	}
}

func pod(name, group, zone string, created time.Time) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: ns, UID: types.UID("uid-" + name),
		Labels: zoneLabels(group, zone), CreationTimestamp: metav1.NewTime(created),
	}}
}

var deploymentsGVR = appsv1.SchemeGroupVersion.WithResource("deployments")

// newClient returns a fake clientset holding objs, with the scale
// subresource of Deployments backed by their spec.replicas (the fake
// clientset does not implement it).
func newClient(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		g := a.(k8stesting.GetAction)
		obj, err := c.Tracker().Get(deploymentsGVR, g.GetNamespace(), g.GetName())
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment)
		return true, &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, ResourceVersion: d.ResourceVersion},
			Spec:       autoscalingv1.ScaleSpec{Replicas: *d.Spec.Replicas},
			Status:     autoscalingv1.ScaleStatus{Replicas: d.Status.Replicas},
		}, nil
	})
	c.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		sc := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		obj, err := c.Tracker().Get(deploymentsGVR, a.GetNamespace(), sc.Name)
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment).DeepCopy()
		d.Spec.Replicas = &sc.Spec.Replicas
		if err := c.Tracker().Update(deploymentsGVR, d, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, sc, nil
	})
	return c
}

// failOn makes verb on resource/subresource fail with err.
func failOn(c *fake.Clientset, verb, resource, subresource string, err error) {
	c.PrependReactor(verb, resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != subresource {
			return false, nil, nil
		}
		return true, nil, err
	})
}

func TestDeploymentName(t *testing.T) {
	tests := []struct {
		group, zone string
		want        string // "" = hashed: checked for shape and uniqueness only
		wantErr     bool
	}{
		{group: "g1", zone: "a", want: "worker-g1-a"},
		{group: "web-api", zone: "us-east-1a", want: "worker-web-api-us-east-1a"},
		{group: "G1", zone: "a"},
		{group: "g.1", zone: "a"},
		{group: "g_1", zone: "a"},
		{group: "g1", zone: "zone_A"},
		{group: strings.Repeat("g", 63), zone: "a"},
		{group: strings.Repeat("g", 63), zone: "b"},
		{group: "g1", zone: strings.Repeat("z", 50)},
		{group: "", zone: "a", wantErr: true},
		{group: "g1", zone: "", wantErr: true},
		{group: "g 1", zone: "a", wantErr: true},
		{group: "-g", zone: "a", wantErr: true},
		{group: strings.Repeat("g", 64), zone: "a", wantErr: true},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.group+"/"+tt.zone, func(t *testing.T) {
			got, err := kube.DeploymentName(tt.group, tt.zone)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("DeploymentName(%q, %q) = %q, want an error", tt.group, tt.zone, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Fatalf("%q is not a DNS-1123 label: %v", got, errs)
			}
			if tt.want != "" && got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if tt.want == "" && !strings.HasPrefix(got, "worker-") {
				t.Fatalf("hashed name %q lost its worker- prefix", got)
			}
			if other, ok := seen[got]; ok {
				t.Fatalf("%q also named %s", got, other)
			}
			seen[got] = tt.group + "/" + tt.zone
			again, _ := kube.DeploymentName(tt.group, tt.zone)
			if again != got {
				t.Fatalf("not deterministic: %q then %q", got, again)
			}
		})
	}
}

func TestScale(t *testing.T) {
	cost := kube.AnnotationDeletionCost
	tests := []struct {
		name     string
		from, to int
		victims  []string
		objs     []runtime.Object // added to the g1/a deployment and pods p1..p3
		setup    func(*fake.Clientset)
		noDeploy bool
		group    string // default g1
		// want
		replicas int32
		marked   []string
		errHas   []string
		notFound bool
	}{
		{name: "scale out", from: 2, to: 3, victims: []string{"p1"}, replicas: 3},
		{name: "unchanged", from: 3, to: 3, victims: []string{"p1"}, replicas: 3},
		{name: "scale in one victim", from: 3, to: 2, victims: []string{"p2"}, replicas: 2, marked: []string{"p2"}},
		{name: "scale in marks only as many as removed", from: 3, to: 2, victims: []string{"p3", "p1"}, replicas: 2, marked: []string{"p3"}},
		{name: "scale in skips unknown victims", from: 3, to: 1, victims: []string{"ghost", "p3", "p3", "p1", "p2"}, replicas: 1, marked: []string{"p1", "p3"}},
		{name: "scale in skips another zone's pod", from: 3, to: 2, victims: []string{"q1", "p2"},
			objs: []runtime.Object{pod("q1", "g1", "b", t0)}, replicas: 2, marked: []string{"p2"}},
		{name: "scale in without victims", from: 3, to: 1, replicas: 1},
		{name: "scale to zero", from: 3, to: 0, victims: []string{"p1", "p2", "p3"}, replicas: 0, marked: []string{"p1", "p2", "p3"}},
		{name: "deployment missing", noDeploy: true, to: 2, replicas: -1,
			errHas: []string{"get deployment", ns + "/worker-g1-a"}, notFound: true},
		{name: "deployment of another zone", group: "g1", from: 3, to: 2, replicas: 3,
			setup: func(c *fake.Clientset) {
				d := deployment("g1", "a", 3)
				d.Labels[kube.LabelZone] = "b"
				if err := c.Tracker().Update(deploymentsGVR, d, ns); err != nil {
					panic(err)
				}
			},
			errHas: []string{"deployment " + ns + "/worker-g1-a", "labels do not match"}},
		{name: "negative replicas", from: 3, to: -1, replicas: 3, errHas: []string{"negative"}},
		{name: "invalid group", group: "g 1", from: 3, to: 2, replicas: 3, errHas: []string{"invalid group"}},
		{name: "get scale fails", from: 3, to: 2, victims: []string{"p1"}, replicas: 3,
			setup: func(c *fake.Clientset) {
				failOn(c, "get", "deployments", "scale", apierrors.NewForbidden(deploymentsGVR.GroupResource(), "worker-g1-a", errors.New("rbac")))
			},
			errHas: []string{"get scale of deployment " + ns + "/worker-g1-a", "forbidden"}},
		{name: "update scale fails and victims are unmarked", from: 3, to: 2, victims: []string{"p1"}, replicas: 3,
			setup: func(c *fake.Clientset) {
				failOn(c, "update", "deployments", "scale", apierrors.NewInternalError(errors.New("etcd down")))
			},
			errHas: []string{"update scale of deployment " + ns + "/worker-g1-a from 3 to 2", "etcd down"}},
		{name: "patch fails", from: 3, to: 2, victims: []string{"p1"}, replicas: 3,
			setup: func(c *fake.Clientset) {
				failOn(c, "patch", "pods", "", apierrors.NewForbidden(corev1.Resource("pods"), "p1", errors.New("rbac")))
			},
			errHas: []string{"set " + kube.AnnotationDeletionCost + " on victim pod " + ns + "/p1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{pod("p1", "g1", "a", t0), pod("p2", "g1", "a", t0), pod("p3", "g1", "a", t0)}
			if !tt.noDeploy {
				objs = append(objs, deployment("g1", "a", int32(tt.from)))
			}
			c := newClient(append(objs, tt.objs...)...)
			if tt.setup != nil {
				tt.setup(c)
			}
			group := tt.group
			if group == "" {
				group = "g1"
			}
			err := kube.New(c, ns).Scale(context.Background(), group, "a", tt.to, tt.victims)
			if len(tt.errHas) == 0 && err != nil {
				t.Fatalf("Scale: %v", err)
			}
			if len(tt.errHas) > 0 {
				if err == nil {
					t.Fatalf("Scale: no error, want one with %q", tt.errHas)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				if tt.notFound && !apierrors.IsNotFound(err) {
					t.Errorf("error %v does not wrap NotFound", err)
				}
			}
			if tt.replicas >= 0 {
				d, err := c.AppsV1().Deployments(ns).Get(context.Background(), "worker-g1-a", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if *d.Spec.Replicas != tt.replicas {
					t.Errorf("replicas = %d, want %d", *d.Spec.Replicas, tt.replicas)
				}
			}
			pods, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var marked []string
			for _, p := range pods.Items {
				v, ok := p.Annotations[cost]
				if !ok {
					continue
				}
				if v != kube.VictimDeletionCost {
					t.Errorf("pod %s: %s = %q, want %q", p.Name, cost, v, kube.VictimDeletionCost)
				}
				marked = append(marked, p.Name)
			}
			slices.Sort(marked)
			if !slices.Equal(marked, tt.marked) {
				t.Errorf("pods with %s = %v, want %v", cost, marked, tt.marked)
			}
		})
	}
}

// TestScaleAnnotatesBeforeScaling checks the order of the API calls: the
// victims are marked before the scale is updated.
func TestScaleAnnotatesBeforeScaling(t *testing.T) {
	c := newClient(deployment("g1", "a", 3), pod("p1", "g1", "a", t0))
	if err := kube.New(c, ns).Scale(context.Background(), "g1", "a", 2, []string{"p1"}); err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, a := range c.Actions() {
		calls = append(calls, strings.TrimSuffix(a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource(), "/"))
	}
	want := []string{"get deployments", "get deployments/scale", "get pods", "patch pods", "update deployments/scale"}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls = %v, want %v", calls, want)
	}
}

func ptr[T any](v T) *T { return &v }

type ep struct {
	pod                       string
	ip                        string
	ready, serving, terminate *bool
	noRef                     bool
}

func slice(name, group, zone string, family discoveryv1.AddressType, port string, eps ...ep) *discoveryv1.EndpointSlice {
	svc, _ := kube.DeploymentName(group, zone)
	l := zoneLabels(group, zone)
	l[discoveryv1.LabelServiceName] = svc
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l},
		AddressType: family,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("metrics"), Port: ptr(int32(9090))}, {Name: ptr(port), Port: ptr(int32(8080))}},
	}
	for _, e := range eps {
		x := discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: e.ready, Serving: e.serving, Terminating: e.terminate},
		}
		if !e.noRef {
			x.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: e.pod, UID: types.UID("uid-" + e.pod)}
		}
		s.Endpoints = append(s.Endpoints, x)
	}
	return s
}

func TestEndpoints(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	objs := []runtime.Object{
		pod("w-ready", "g1", "a", t0),
		pod("w-nil", "g1", "a", t0.Add(time.Second)),
		pod("w-starting", "g1", "a", t0.Add(2*time.Second)),
		pod("w-terminating", "g1", "a", t0.Add(3*time.Second)),
		pod("w-b", "g1", "b", t0.Add(4*time.Second)),
		slice("worker-g1-a-x1", "g1", "a", discoveryv1.AddressTypeIPv4, "http",
			ep{pod: "w-ready", ip: "10.0.0.1", ready: yes, serving: yes, terminate: no},
			ep{pod: "w-nil", ip: "10.0.0.2"},
			ep{pod: "w-starting", ip: "10.0.0.3", ready: no, serving: no, terminate: no},
		),
		slice("worker-g1-a-x2", "g1", "a", discoveryv1.AddressTypeIPv4, "http",
			ep{pod: "w-terminating", ip: "10.0.0.4", ready: no, serving: yes, terminate: yes},
			ep{pod: "w-gone", ip: "10.0.0.5", ready: yes},
			ep{ip: "10.0.0.6", ready: yes, noRef: true},
		),
		// The IPv6 slice of the same Service (dual stack) lists the same pods.
		slice("worker-g1-a-v6", "g1", "a", discoveryv1.AddressTypeIPv6, "http",
			ep{pod: "w-ready", ip: "fd00::1", ready: yes},
			ep{pod: "w-v6only", ip: "fd00::7", ready: yes},
		),
		pod("w-v6only", "g1", "a", t0.Add(5*time.Second)),
		slice("worker-g1-b-x1", "g1", "b", discoveryv1.AddressTypeIPv4, "http",
			ep{pod: "w-b", ip: "10.0.1.1", ready: yes}),
		slice("worker-g2-a-x1", "g2", "a", discoveryv1.AddressTypeIPv4, "metrics-only",
			ep{pod: "w-g2", ip: "10.0.2.1", ready: yes}),
		// A Service created a moment ago: its slice has no pods and no ports yet.
		func() runtime.Object {
			s := slice("worker-g3-a-x1", "g3", "a", discoveryv1.AddressTypeIPv4, "http")
			s.Ports = nil
			return s
		}(),
	}
	tests := []struct {
		name        string
		group, zone string
		setup       func(*fake.Clientset)
		want        []fleet.Endpoint
		errHas      []string
	}{
		{name: "ready, not ready and terminating", group: "g1", zone: "a", want: []fleet.Endpoint{
			{ID: "w-nil", Addr: "10.0.0.2:8080", Ready: true, Created: t0.Add(time.Second)},
			{ID: "w-ready", Addr: "10.0.0.1:8080", Ready: true, Created: t0},
			{ID: "w-starting", Addr: "10.0.0.3:8080", Ready: false, Created: t0.Add(2 * time.Second)},
			{ID: "w-terminating", Addr: "10.0.0.4:8080", Ready: false, Created: t0.Add(3 * time.Second)},
			{ID: "w-v6only", Addr: "[fd00::7]:8080", Ready: true, Created: t0.Add(5 * time.Second)},
		}},
		{name: "other zone", group: "g1", zone: "b", want: []fleet.Endpoint{
			{ID: "w-b", Addr: "10.0.1.1:8080", Ready: true, Created: t0.Add(4 * time.Second)},
		}},
		{name: "no slices", group: "g9", zone: "a", want: nil},
		{name: "new service's empty slice", group: "g3", zone: "a", want: nil},
		{name: "no http port", group: "g2", zone: "a", errHas: []string{"worker-g2-a-x1", `no port named "http"`}},
		{name: "list fails", group: "g1", zone: "a",
			setup: func(c *fake.Clientset) {
				failOn(c, "list", "endpointslices", "", apierrors.NewForbidden(discoveryv1.Resource("endpointslices"), "", errors.New("rbac")))
			},
			errHas: []string{"list endpointslices of service " + ns + "/worker-g1-a", "forbidden"}},
		{name: "pod get fails", group: "g1", zone: "b",
			setup: func(c *fake.Clientset) {
				failOn(c, "get", "pods", "", apierrors.NewServiceUnavailable("apiserver restarting"))
			},
			errHas: []string{"get pod " + ns + "/w-b of service worker-g1-b", "apiserver restarting"}},
		{name: "invalid zone", group: "g1", zone: "a/b", errHas: []string{"invalid group"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(objs...)
			if tt.setup != nil {
				tt.setup(c)
			}
			got, err := kube.New(c, ns).Endpoints(context.Background(), tt.group, tt.zone)
			if len(tt.errHas) > 0 {
				if err == nil {
					t.Fatalf("Endpoints: no error, want one with %q", tt.errHas)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Endpoints: %v", err)
			}
			if !endpointsEqual(got, tt.want) {
				t.Fatalf("Endpoints =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

func endpointsEqual(a, b []fleet.Endpoint) bool {
	return slices.EqualFunc(a, b, func(x, y fleet.Endpoint) bool {
		return x.ID == y.ID && x.Addr == y.Addr && x.Ready == y.Ready && x.Created.Equal(y.Created)
	})
}

// TestEndpointsCachesCreation checks that a pod is read once, and again
// when a new pod reuses its name.
func TestEndpointsCachesCreation(t *testing.T) {
	c := newClient(pod("w1", "g1", "a", t0),
		slice("s1", "g1", "a", discoveryv1.AddressTypeIPv4, "http", ep{pod: "w1", ip: "10.0.0.1"}))
	tg := kube.New(c, ns)
	podGets := func() int {
		n := 0
		for _, a := range c.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "pods" {
				n++
			}
		}
		return n
	}
	for range 3 {
		if _, err := tg.Endpoints(context.Background(), "g1", "a"); err != nil {
			t.Fatal(err)
		}
	}
	if n := podGets(); n != 1 {
		t.Fatalf("%d pod gets for three listings, want 1", n)
	}

	// The pod is replaced by one with the same name, a new UID and time.
	ctx := context.Background()
	if err := c.CoreV1().Pods(ns).Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	np := pod("w1", "g1", "a", t0.Add(time.Hour))
	np.UID = "uid-w1-new"
	if _, err := c.CoreV1().Pods(ns).Create(ctx, np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := slice("s1", "g1", "a", discoveryv1.AddressTypeIPv4, "http", ep{pod: "w1", ip: "10.0.0.9"})
	s.Endpoints[0].TargetRef.UID = np.UID
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := tg.Endpoints(ctx, "g1", "a")
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.Endpoint{{ID: "w1", Addr: "10.0.0.9:8080", Ready: true, Created: t0.Add(time.Hour)}}
	if !endpointsEqual(got, want) {
		t.Fatalf("after the pod was replaced: %v, want %v", got, want)
	}
}

func TestZones(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	other := slice("other", "g1", "a", discoveryv1.AddressTypeIPv4, "http", ep{pod: "x", ip: "10.9.9.9", ready: yes})
	other.Labels = map[string]string{discoveryv1.LabelServiceName: "console"}
	c := newClient(
		pod("a1", "g1", "a", t0), pod("a2", "g1", "a", t0.Add(time.Second)),
		pod("b1", "g1", "b", t0), pod("c1", "g2", "a", t0), pod("x", "g1", "a", t0),
		slice("s-g2-a", "g2", "a", discoveryv1.AddressTypeIPv4, "http", ep{pod: "c1", ip: "10.0.2.1", ready: yes}),
		slice("s-g1-b", "g1", "b", discoveryv1.AddressTypeIPv4, "http", ep{pod: "b1", ip: "10.0.1.1", ready: no}),
		slice("s-g1-a-1", "g1", "a", discoveryv1.AddressTypeIPv4, "http", ep{pod: "a2", ip: "10.0.0.2", ready: yes}),
		slice("s-g1-a-2", "g1", "a", discoveryv1.AddressTypeIPv4, "http", ep{pod: "a1", ip: "10.0.0.1", ready: yes}),
		slice("s-g1-c", "g1", "c", discoveryv1.AddressTypeIPv4, "http"), // scaled to zero
		other,
	)
	got, err := kube.New(c, ns).Zones(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.Zone{
		{Group: "g1", Zone: "a", Endpoints: []fleet.Endpoint{
			{ID: "a1", Addr: "10.0.0.1:8080", Ready: true, Created: t0},
			{ID: "a2", Addr: "10.0.0.2:8080", Ready: true, Created: t0.Add(time.Second)},
		}},
		{Group: "g1", Zone: "b", Endpoints: []fleet.Endpoint{{ID: "b1", Addr: "10.0.1.1:8080", Ready: false, Created: t0}}},
		{Group: "g1", Zone: "c"},
		{Group: "g2", Zone: "a", Endpoints: []fleet.Endpoint{{ID: "c1", Addr: "10.0.2.1:8080", Ready: true, Created: t0}}},
	}
	if !slices.EqualFunc(got, want, func(a, b fleet.Zone) bool {
		return a.Group == b.Group && a.Zone == b.Zone && a.Replicas == b.Replicas && endpointsEqual(a.Endpoints, b.Endpoints)
	}) {
		t.Fatalf("Zones =\n%+v\nwant\n%+v", got, want)
	}

	failOn(c, "list", "endpointslices", "", apierrors.NewServiceUnavailable("down"))
	if _, err := kube.New(c, ns).Zones(context.Background()); err == nil || !strings.Contains(err.Error(), "list worker endpointslices in "+ns) {
		t.Fatalf("Zones with a failing list: %v", err)
	}
}

// TestConcurrentUse runs Scale, Endpoints and Zones at once (for -race).
func TestConcurrentUse(t *testing.T) {
	objs := []runtime.Object{deployment("g1", "a", 50)}
	var eps []ep
	for i := range 20 {
		name := fmt.Sprintf("w%d", i)
		objs = append(objs, pod(name, "g1", "a", t0))
		eps = append(eps, ep{pod: name, ip: fmt.Sprintf("10.0.0.%d", i+1)})
	}
	objs = append(objs, slice("s1", "g1", "a", discoveryv1.AddressTypeIPv4, "http", eps...))
	c := newClient(objs...)
	tg := kube.New(c, ns)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ctx := context.Background()
			if _, err := tg.Endpoints(ctx, "g1", "a"); err != nil {
				t.Error(err)
			}
			if _, err := tg.Zones(ctx); err != nil {
				t.Error(err)
			}
			if err := tg.Scale(ctx, "g1", "a", 40-i, []string{fmt.Sprintf("w%d", i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// TestScaleRetriesConflict checks that a conflicting scale update is read
// and written again, and that the victims are marked once.
func TestScaleRetriesConflict(t *testing.T) {
	c := newClient(deployment("g1", "a", 3), pod("p1", "g1", "a", t0))
	conflicts := 1
	c.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" || conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(autoscalingv1.Resource("scale"), "worker-g1-a", errors.New("stale resourceVersion"))
	})
	if err := kube.New(c, ns).Scale(context.Background(), "g1", "a", 2, []string{"p1"}); err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, a := range c.Actions() {
		calls = append(calls, strings.TrimSuffix(a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource(), "/"))
	}
	want := []string{"get deployments", "get deployments/scale", "get pods", "patch pods", "update deployments/scale",
		"get deployments/scale", "update deployments/scale"}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls = %v, want %v", calls, want)
	}
	d, _ := c.AppsV1().Deployments(ns).Get(context.Background(), "worker-g1-a", metav1.GetOptions{})
	p, _ := c.CoreV1().Pods(ns).Get(context.Background(), "p1", metav1.GetOptions{})
	if *d.Spec.Replicas != 2 || p.Annotations[kube.AnnotationDeletionCost] != kube.VictimDeletionCost {
		t.Fatalf("replicas %d, p1 annotations %v", *d.Spec.Replicas, p.Annotations)
	}
}
