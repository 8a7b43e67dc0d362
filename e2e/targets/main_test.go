//go:build e2e

// Package targets holds the kind specs of the scale targets that are not
// the reference console's: the cluster's own HorizontalPodAutoscaler on
// the worker workload (CPU utilisation from metrics-server), and KEDA on
// the queue workload (the Prometheus trigger of Grafana's post on the query
// scheduler's in-flight summary). They are written with
// sigs.k8s.io/e2e-framework: one environment whose Setup makes a kind
// cluster through scaleproof's own kind platform (kind's Go API and our
// node image; the framework's support/kind, which would download a kind
// binary, is never used), features with assessments, and klient/wait
// conditions for everything that takes time.
//
// What the specs check is what `scaleproof run --target` relies on and
// does not itself show: the add-ons serve (metrics.k8s.io lists the
// target's pods, external.metrics.k8s.io answers the trigger's metric),
// the autoscaler reads its metric, RBAC refuses the viewer and lets the
// admin, the autoscaler scales the scale target under load, and
// recommend-bounds works on the queue's summary unchanged.
//
// Run (root; podman or a Docker that runs privileged containers; the node
// image as `make kind-node-image` makes it and the add-on images as
// `make keda-images` makes them):
//
//	SCALEPROOF_E2E_KIND=1 go test -tags e2e -count=1 -timeout 30m -v ./e2e/targets/
package targets

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/image"
	"github.com/scaleproof/scaleproof/kind"
	"github.com/scaleproof/scaleproof/kind/addons"
	"github.com/scaleproof/scaleproof/kind/kedaimage"
	"github.com/scaleproof/scaleproof/scenarios/run"
)

var (
	testenv env.Environment
	// set by setupCluster
	kp        *kind.Kind
	cluster   kind.Cluster
	refImage  string
	images    kedaimage.Result
	artifacts string
	bin       string // folder of the scaleproof and scaleproof-ref binaries
	log       *slog.Logger
)

// The NodePorts the target manifests expose (autoscaler/deploy/kube: the load
// Service and Prometheus), mapped to 127.0.0.1 by kind.
const (
	targetNodePort     = 30082
	prometheusNodePort = 30083
)

func TestMain(m *testing.M) {
	if os.Getenv("SCALEPROOF_E2E_KIND") != "1" {
		fmt.Println("skipped: set SCALEPROOF_E2E_KIND=1 to make a kind cluster (root; podman or Docker)")
		os.Exit(0)
	}
	artifacts = os.Getenv("ARTIFACTS")
	if artifacts == "" {
		d, err := os.MkdirTemp("", "scaleproof-e2e-targets-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		artifacts = d
	}
	log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	// Ctrl-C: the first cancels the environment's context, so setup and the
	// specs end and Finish deletes the cluster (e2e-framework v0.7.0 runs
	// Finish after a panic, not on a signal); a second exits at once
	// (run.Trap).
	ctx, untrap, _ := run.Trap(context.Background(), 10*time.Minute, "scaleproof e2e: exiting now; delete what is left with `scaleproof kind delete scaleproof-<run id>`")
	var err error
	if testenv, err = env.NewWithContext(ctx, envconf.New()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.Setup(setupCluster)
	testenv.Finish(deleteCluster)
	code := testenv.Run(m)
	untrap()
	os.Exit(code)
}

// setupCluster builds the two binaries and the scaleproof-ref image, makes
// sure of the add-ons' images (kedaimage's cache), makes the kind cluster
// with the target NodePorts mapped, loads every image and installs
// metrics-server and KEDA, then points the environment at the cluster.
func setupCluster(parent context.Context, cfg *envconf.Config) (context.Context, error) {
	// The features get parent back: this bounded context ends with setup.
	ctx, cancel := context.WithTimeout(parent, 20*time.Minute)
	defer cancel()
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		return parent, err
	}
	var err error
	if bin, err = os.MkdirTemp("", "scaleproof-e2e-bin-"); err != nil {
		return parent, err
	}
	for _, b := range []struct{ out, pkg string }{
		{"scaleproof", "github.com/scaleproof/scaleproof/cmd/scaleproof"},
		{"scaleproof-ref", "github.com/scaleproof/scaleproof/cmd/scaleproof-ref"},
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, b.out), b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return parent, fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	refBytes, err := os.ReadFile(filepath.Join(bin, "scaleproof-ref"))
	if err != nil {
		return parent, err
	}
	if refImage, err = image.Tag("", refBytes); err != nil {
		return parent, err
	}
	refArchive := filepath.Join(bin, "scaleproof-ref.tar")
	if err := image.Write(refArchive, refImage, refBytes); err != nil {
		return parent, err
	}
	if images, err = kedaimage.Ensure(ctx, kedaimage.Options{Nice: 19, Log: log}); err != nil {
		return parent, fmt.Errorf("the add-ons' images (make keda-images): %w", err)
	}

	b := make([]byte, 3)
	_, _ = rand.Read(b)
	kp, err = kind.New(kind.Config{RunID: "e2e-tgt-" + hex.EncodeToString(b), Provider: os.Getenv("SCALEPROOF_E2E_KIND_PROVIDER"),
		Artifacts: filepath.Join(artifacts, "kind"), NodePorts: []int{targetNodePort, prometheusNodePort}, Log: log, Out: os.Stderr,
		Images: func(context.Context) ([]string, error) {
			return append([]string{refArchive}, images.Archives()...), nil
		}})
	if err != nil {
		return parent, err
	}
	// the specs deploy their own targets; kind only makes the cluster
	if cluster, err = kp.Up(ctx); err != nil {
		return parent, fmt.Errorf("kind up: %w", err)
	}
	t, err := addons.Install(ctx, kp.Kubeconfig(), addons.Options{MetricsServer: true, KEDA: true, Log: log,
		Images: addons.Images{MetricsServer: images.Ref("metrics-server"), KEDAOperator: images.Ref("keda"),
			KEDAMetricsAPIServer: images.Ref("keda-metrics-apiserver"), KEDAWebhooks: images.Ref("keda-admission-webhooks")}})
	if err != nil {
		return parent, fmt.Errorf("add-ons: %w", err)
	}
	log.Info("add-ons serving", "took", t.Total.String())
	cfg.WithKubeconfigFile(kp.Kubeconfig())
	return parent, nil
}

// deleteCluster dumps the cluster's logs and deletes it (also after a
// failed setup: kind's Down is safe then).
func deleteCluster(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if kp == nil {
		return ctx, nil
	}
	if bin != "" {
		defer os.RemoveAll(bin)
	}
	return ctx, run.Teardown(kp, filepath.Join(artifacts, "kind-logs"), log, nil)
}
