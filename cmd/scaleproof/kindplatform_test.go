package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
	"github.com/scaleproof/scaleproof/kind"
	"github.com/scaleproof/scaleproof/kind/addons"
	"github.com/scaleproof/scaleproof/kind/kedaimage"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

func TestKindFlags(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--platform", "kind"}, ""},
		{[]string{"--platform", "kind", "--kind-provider", "podman", "--keep", "--kind-node-image", "localhost/x:1"}, ""},
		{[]string{"--platform", "kind", "--kind-provider", "lxc"}, "want auto, docker or podman"},
	} {
		cmd := newRunCmd()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		o := &runOpts{}
		o.kind.provider, _ = cmd.Flags().GetString("kind-provider")
		o.kind.keep, _ = cmd.Flags().GetBool("keep")
		o.kind.nodeImage, _ = cmd.Flags().GetString("kind-node-image")
		k, err := newKindPlatform(o, scenarios.Quick(), "20261201-000000-abcdef", t.TempDir(), log, io.Discard)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		kk := k.Maker().(*kind.Kind)
		if k.Name() != "kind" || kk.ClusterName() != "scaleproof-20261201-000000-abcdef" || !strings.HasSuffix(kk.Kubeconfig(), "/kubeconfig") {
			t.Errorf("%v: name %s cluster %s kubeconfig %s", tc.args, k.Name(), kk.ClusterName(), kk.Kubeconfig())
		}
		if len(clusterSteps(k)) != 0 {
			t.Errorf("steps before Up")
		}
	}
}

func TestKindNodePorts(t *testing.T) {
	for _, tc := range []struct {
		target     string
		prometheus bool
		want       []int
	}{
		{"", false, []int{30080, 30081}},
		{"", true, []int{30080, 30081, 30083}},
		{"hpa", false, []int{30080, 30081, 30082, 30083}},
		{"keda", false, []int{30080, 30081, 30082, 30083}},
		{"keda", true, []int{30080, 30081, 30082, 30083}},
	} {
		got := kindNodePorts(tc.target, tc.prometheus)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("--target %q, Prometheus %v: NodePorts %v, want %v", tc.target, tc.prometheus, got, tc.want)
		}
	}
}

// TestKindAddons: a target's images come from the keda-images cache (only
// the sets it needs), and the deploy step installs its add-ons with those
// refs on the cluster's kubeconfig before the kubeconfig platform; no
// target needs nothing; a failed install fails the deploy, naming it.
func TestKindAddons(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	res := kedaimage.Result{Images: []kedaimage.Image{
		{Name: "keda", Ref: "scaleproof.local/keda:2.21.0-a", Archive: "/c/keda.tar"},
		{Name: "keda-metrics-apiserver", Ref: "scaleproof.local/keda-metrics-apiserver:2.21.0-a", Archive: "/c/kma.tar"},
		{Name: "keda-admission-webhooks", Ref: "scaleproof.local/keda-admission-webhooks:2.21.0-a", Archive: "/c/kaw.tar"},
		{Name: "prometheus", Ref: "scaleproof.local/prometheus:2.42.0-b", Archive: "/c/prom.tar"},
		{Name: "metrics-server", Ref: "scaleproof.local/metrics-server:0.8.0-c", Archive: "/c/ms.tar"},
	}}
	for _, tc := range []struct {
		target     string
		prometheus bool     // a console run with a Prometheus (--policy hpa)
		only       []string // sets asked of the cache; nil: the cache is not asked
		want       addons.Options
		failWith   error
	}{
		{"", false, nil, addons.Options{}, nil},
		{"", true, []string{"prometheus"}, addons.Options{}, nil},
		{"hpa", false, []string{"metrics-server"}, addons.Options{MetricsServer: true, Images: addons.Images{MetricsServer: "scaleproof.local/metrics-server:0.8.0-c"}}, nil},
		{"keda", false, []string{"keda", "prometheus"}, addons.Options{KEDA: true, Images: addons.Images{KEDAOperator: "scaleproof.local/keda:2.21.0-a",
			KEDAMetricsAPIServer: "scaleproof.local/keda-metrics-apiserver:2.21.0-a", KEDAWebhooks: "scaleproof.local/keda-admission-webhooks:2.21.0-a"}}, nil},
		{"hpa", false, []string{"metrics-server"}, addons.Options{MetricsServer: true, Images: addons.Images{MetricsServer: "scaleproof.local/metrics-server:0.8.0-c"}},
			errors.New("APIService v1beta1.metrics.k8s.io Available=False")},
	} {
		t.Run(fmt.Sprintf("%s/prometheus=%v", tc.target, tc.prometheus), func(t *testing.T) {
			ad, err := newKindAddons(tc.target, tc.prometheus, log, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var asked []string
			called := false
			ad.ensure = func(_ context.Context, o kedaimage.Options) (kedaimage.Result, error) {
				called, asked = true, o.Only
				var r kedaimage.Result
				for _, im := range res.Images {
					for _, s := range o.Only {
						if im.Name == s || (s == "keda" && strings.HasPrefix(im.Name, "keda")) {
							r.Images = append(r.Images, im)
						}
					}
				}
				return r, nil
			}
			var got *addons.Options
			var gotPath string
			ad.installFn = func(_ context.Context, p string, o addons.Options) (addons.Timings, error) {
				gotPath, got = p, &o
				return addons.Timings{Total: time.Second}, tc.failWith
			}
			archives, err := ad.archives(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if called != (tc.only != nil) || !slices.Equal(asked, tc.only) {
				t.Errorf("cache asked %v for %v, want %v", called, asked, tc.only)
			}
			if len(archives) != len(asked)+map[bool]int{true: 2}[tc.target == "keda"] {
				t.Errorf("archives %v for sets %v", archives, asked)
			}
			o := &runOpts{targetKind: tc.target, group: "g"}
			o.deployPrometheus = tc.prometheus
			if tc.target != "" {
				o.targetSpec = &platform.TargetSpec{Kind: tc.target, Workload: render.WorkloadWorker}
			}
			ref := &refImage{ref: "scaleproof.local/scaleproof-ref:x"}
			kc := writeKubeconfig(t)
			deploy := kindDeploy(o, scenarios.Quick(), "20261201-000000-abcdef", t.TempDir(), ref, ad, log)
			_, err = deploy(t.Context(), kind.Cluster{Kubeconfig: kc, NodeHost: "127.0.0.1", HostPorts: map[int]int{30080: 1, 30081: 2, 30082: 3, 30083: 4}})
			if tc.failWith != nil {
				if err == nil || !strings.Contains(err.Error(), "add-ons of --target hpa") || !strings.Contains(err.Error(), "Available=False") {
					t.Errorf("failed install: deploy err %v, want one naming the add-ons and why", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.target == "" {
				if got != nil {
					t.Errorf("no target installed %+v", got)
				}
				return
			}
			if got == nil || gotPath != kc {
				t.Fatalf("install %+v on %q, want on %s", got, gotPath, kc)
			}
			got.Log = nil
			if *got != tc.want {
				t.Errorf("install options %+v, want %+v", *got, tc.want)
			}
			// the target's host port reaches the kubeconfig platform: without
			// the NodePort mapped, it refuses
			if _, err := deploy(t.Context(), kind.Cluster{Kubeconfig: kc, NodeHost: "127.0.0.1", HostPorts: map[int]int{30080: 1, 30081: 2}}); err == nil || !strings.Contains(err.Error(), "target host port 0") {
				t.Errorf("no target NodePort mapped: err %v, want the kubeconfig platform's refusal", err)
			}
		})
	}
	if _, err := newKindAddons("lambda", false, log, io.Discard); err == nil || !strings.Contains(err.Error(), `"lambda"`) {
		t.Errorf("--target lambda: err %v", err)
	}
	ad, _ := newKindAddons("keda", false, log, io.Discard)
	ad.ensure = func(context.Context, kedaimage.Options) (kedaimage.Result, error) {
		return kedaimage.Result{}, errors.New(`keda images: step "keda-build" failed`)
	}
	if _, err := ad.archives(t.Context()); err == nil || !strings.Contains(err.Error(), "keda-build") || !strings.Contains(err.Error(), "--target keda") {
		t.Errorf("failed build: err %v, want one naming the target and the step", err)
	}
}

// writeKubeconfig writes a kubeconfig of a cluster that is never contacted.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user: {token: x}
`
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
