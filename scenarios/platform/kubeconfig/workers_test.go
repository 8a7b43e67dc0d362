package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// workerPod is a worker pod of group g, zone z as the console's Deployment
// labels it (autoscaler/controller/kube), created at minute m.
func workerPod(name, g, z string, m int, ready bool) *corev1.Pod {
	pod := consolePod(name, ready)
	pod.Labels = map[string]string{"app.kubernetes.io/name": "scaleproof", "app.kubernetes.io/component": "worker",
		"scaleproof.dev/group": g, "scaleproof.dev/zone": z}
	pod.CreationTimestamp = metav1.NewTime(time.Date(2026, 12, 5, 1, m, 0, 0, time.UTC))
	return pod
}

// proxyBody is a proxied GET's answer (rest.ResponseWrapper).
type proxyBody struct {
	body string
	err  error
}

func (b proxyBody) DoRaw(context.Context) ([]byte, error) { return []byte(b.body), b.err }
func (b proxyBody) Stream(context.Context) (io.ReadCloser, error) {
	if b.err != nil {
		return nil, b.err
	}
	return io.NopCloser(strings.NewReader(b.body)), nil
}

// TestWorkers: Workers lists the zone's worker pods oldest first, not
// another zone's, not one being deleted, each Proxied, Ready by its
// condition, the canary by its track label; WorkerMetrics reads a pod's
// /metrics on the worker port through the API server's pods/proxy, refuses
// a pod outside the zone, and a forbidden proxy is not offered.
func TestWorkers(t *testing.T) {
	canary := workerPod("w-canary", "g", "z", 3, true)
	canary.Labels["scaleproof.dev/track"] = "canary"
	gone := workerPod("w-gone", "g", "z", 0, true)
	gone.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	gone.Finalizers = []string{"test"}
	kc := fake.NewClientset(workerPod("w-new", "g", "z", 2, false), workerPod("w-old", "g", "z", 1, true), canary, gone,
		workerPod("w-other", "g", "other", 1, true), consolePod("console", true))
	var proxied []string
	var proxyErr error
	kc.PrependProxyReactor("pods", func(a k8stesting.Action) (bool, restclient.ResponseWrapper, error) {
		pa := a.(k8stesting.ProxyGetAction)
		proxied = append(proxied, pa.GetScheme()+" "+pa.GetName()+":"+pa.GetPort()+"/"+pa.GetPath())
		if proxyErr != nil {
			return true, proxyBody{err: proxyErr}, nil
		}
		return true, proxyBody{body: "scaleproof_worker_calls_total 7\n"}, nil
	})
	p := &Platform{cfg: Config{Name: "kind", Namespace: "ns"}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), kc: kc}
	ctx := context.Background()

	ws, err := p.Workers(ctx, "g", "z")
	if err != nil {
		t.Fatal(err)
	}
	want := []platform.Worker{{ID: "w-old", Proxied: true, Ready: true}, {ID: "w-new", Proxied: true},
		{ID: "w-canary", Proxied: true, Ready: true, Canary: true}}
	if len(ws) != len(want) {
		t.Fatalf("Workers = %+v, want %+v", ws, want)
	}
	for i := range want {
		if ws[i] != want[i] {
			t.Errorf("worker %d = %+v, want %+v", i, ws[i], want[i])
		}
	}

	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/proxy"}, "w-old", errors.New("no"))
	// the API server's own answer when its dial of the pod fails
	// (k8s.io/apimachinery pkg/util/proxy/transport.go), directly and
	// through a Konnectivity tunnel
	dialFailed := apierrors.NewServiceUnavailable("error trying to reach service: dial tcp 10.0.0.5:8080: i/o timeout")
	tunnelFailed := apierrors.NewServiceUnavailable("error trying to reach service: proxy error from 127.0.0.1:8132 while dialing 10.0.0.5:8080, code 503: 503 Service Unavailable")
	// the worker's own answers, relayed by the proxy
	workerDown := apierrors.NewGenericServerResponse(503, "get", schema.GroupResource{Resource: "pods"}, "w-old", "draining", 0, true)
	workerBroken := apierrors.NewGenericServerResponse(500, "get", schema.GroupResource{Resource: "pods"}, "w-old", "metrics broken", 0, true)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		name, id, zone string
		ctx            context.Context
		proxyErr       error
		want           string // "" the body
		notOffered     bool
	}{
		{"a worker of the zone", "w-old", "z", ctx, nil, "", false},
		{"a pod of another zone", "w-other", "z", ctx, nil, "not a worker of g/z", false},
		{"not a worker", "console", "z", ctx, nil, "not a worker of g/z", false},
		{"the proxy forbidden", "w-old", "z", ctx, forbidden, "pods/proxy", true},
		{"the API server cannot dial the pod", "w-old", "z", ctx, dialFailed, "cannot reach worker pod w-old on port 8080", true},
		{"the API server's tunnel cannot dial the pod", "w-old", "z", ctx, tunnelFailed, "while dialing", true},
		{"no answer within the read's bound", "w-old", "z", ctx, fmt.Errorf("stream: %w", context.DeadlineExceeded), "cannot reach", true},
		{"the worker answers 503 itself", "w-old", "z", ctx, workerDown, "unable to handle the request", false},
		{"the worker answers 500", "w-old", "z", ctx, workerBroken, "metrics broken", false},
		{"the caller gave up", "w-old", "z", cancelled, fmt.Errorf("stream: %w", context.Canceled), "canceled", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxied, proxyErr = nil, c.proxyErr
			body, err := p.WorkerMetrics(c.ctx, "g", c.zone, c.id)
			if c.want == "" {
				if err != nil || string(body) != "scaleproof_worker_calls_total 7\n" {
					t.Fatalf("WorkerMetrics = %q, %v", body, err)
				}
				if len(proxied) != 1 || proxied[0] != "http w-old:8080/metrics" {
					t.Errorf("proxied %v, want one GET of the worker port's /metrics", proxied)
				}
				// the pod's labels are checked once: a second read only proxies
				gets := func() (n int) {
					for _, a := range kc.Actions() {
						if _, proxy := a.(k8stesting.ProxyGetAction); !proxy && a.GetVerb() == "get" && a.GetResource().Resource == "pods" {
							n++
						}
					}
					return n
				}
				before := gets()
				if _, err := p.WorkerMetrics(ctx, "g", c.zone, c.id); err != nil || gets() != before || len(proxied) != 2 {
					t.Errorf("second read: %v, %d pod gets more, %d proxied in all", err, gets()-before, len(proxied))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, platform.ErrNotOffered) != c.notOffered {
				t.Fatalf("WorkerMetrics = %v, want %q (not offered: %v)", err, c.want, c.notOffered)
			}
			if c.proxyErr == nil && len(proxied) != 0 {
				t.Errorf("proxied %v to a pod outside the zone", proxied)
			}
		})
	}
}
