//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/reporters"
	. "github.com/onsi/gomega"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/image"
	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/kind"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/kubeconfig"
	"github.com/scaleproof/scaleproof/scenarios/run"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "scaleproof on Kubernetes")
}

var (
	pf        *kubeconfig.Platform
	kp        *platform.OnCluster[kind.Cluster] // set when the suite made its own kind cluster
	ep        platform.Endpoints
	prof      scenarios.Profile
	cc        *consoleclient.Client
	artifacts string
	runID     string
)

const group = "e2e"

var _ = BeforeSuite(func(ctx SpecContext) {
	kc, img := os.Getenv("SCALEPROOF_E2E_KUBECONFIG"), os.Getenv("SCALEPROOF_E2E_IMAGE")
	ownKind := os.Getenv("SCALEPROOF_E2E_KIND") == "1"
	if (kc == "" || img == "") && !ownKind {
		Skip("no cluster to test: set SCALEPROOF_E2E_KIND=1 (a kind cluster of its own) or SCALEPROOF_E2E_KUBECONFIG and SCALEPROOF_E2E_IMAGE")
	}
	artifacts = os.Getenv("ARTIFACTS")
	if artifacts == "" {
		artifacts = GinkgoT().TempDir()
	}
	Expect(os.MkdirAll(artifacts, 0o755)).To(Succeed())
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	runID = hex.EncodeToString(b)
	prof = scenarios.Quick()
	if ownKind {
		upOwnKind(ctx)
		return
	}
	cport, _ := strconv.Atoi(os.Getenv("SCALEPROOF_E2E_CONSOLE_PORT"))
	eport, _ := strconv.Atoi(os.Getenv("SCALEPROOF_E2E_EDGE_PORT"))
	var err error
	pf, err = kubeconfig.New(kubeconfig.Config{Name: "kind", Kubeconfig: kc, Namespace: "scaleproof-e2e-" + runID,
		Profile: prof.Name, Image: img, Group: group,
		NodeHost: os.Getenv("SCALEPROOF_E2E_NODE_HOST"), ConsoleHostPort: cport, EdgeHostPort: eport,
		Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil))})
	Expect(err).NotTo(HaveOccurred())
	start := time.Now()
	ep, err = pf.Up(ctx)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("up in %s (apply %s, rollout %s, ready %s)\n", time.Since(start), pf.Timings.Apply, pf.Timings.Rollout, pf.Timings.Ready)
	cc = consoleclient.New(ep.ConsoleURL, 10*time.Second)
}, NodeTimeout(30*time.Minute)) // a cold node image build takes about 18 min

var _ = AfterSuite(func(ctx SpecContext) {
	log := slog.New(slog.NewTextHandler(GinkgoWriter, nil))
	switch {
	case kp != nil: // the system's logs, then kind's, then the cluster deleted
		Expect(run.Teardown(kp, filepath.Join(artifacts, "logs-e2e"), log, nil)).To(Succeed())
	case pf != nil:
		Expect(run.Teardown(pf, filepath.Join(artifacts, "logs-e2e"), log, nil)).To(Succeed())
	}
}, NodeTimeout(3*time.Minute))

var _ = ReportAfterSuite("JUnit", func(r Report) {
	dir := os.Getenv("ARTIFACTS")
	if dir == "" {
		return
	}
	_ = reporters.GenerateJUnitReport(r, filepath.Join(dir, "junit_e2e.xml"))
})

// upOwnKind makes a kind cluster with kind's Go API (kind/), loads the
// image built from this checkout and deploys through the kubeconfig
// platform.
func upOwnKind(ctx context.Context) {
	GinkgoHelper()
	var ref string
	var err error
	k, err := kind.New(kind.Config{RunID: "e2e-" + runID, Provider: os.Getenv("SCALEPROOF_E2E_KIND_PROVIDER"),
		Artifacts: artifacts, NodePorts: []int{deploykube.EdgeNodePort, deploykube.ConsoleNodePort},
		Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil)), Out: GinkgoWriter,
		Images: func(ctx context.Context) ([]string, error) {
			res, err := image.Build(ctx, image.BuildOptions{ModuleDir: "..", Out: filepath.Join(artifacts, "scaleproof-ref.tar")})
			ref = res.Ref
			return []string{res.Archive}, err
		}})
	Expect(err).NotTo(HaveOccurred())
	kp = platform.NewOnCluster(k, func(ctx context.Context, c kind.Cluster) (platform.Platform, error) {
		p, err := kubeconfig.New(kubeconfig.Config{Name: "kind", Kubeconfig: c.Kubeconfig, Namespace: "scaleproof-e2e-" + runID,
			Profile: prof.Name, Image: ref, Group: group, NodeHost: c.NodeHost,
			ConsoleHostPort: c.HostPorts[deploykube.ConsoleNodePort], EdgeHostPort: c.HostPorts[deploykube.EdgeNodePort],
			Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil))})
		pf = p
		return p, err
	}, platform.OnClusterOptions{})
	start := time.Now()
	ep, err = kp.Up(ctx)
	Expect(err).NotTo(HaveOccurred())
	for _, s := range kp.Steps() {
		GinkgoWriter.Printf("kind step %s: %s\n", s.Name, s.Duration)
	}
	GinkgoWriter.Printf("kind up in %s\n", time.Since(start))
	cc = consoleclient.New(ep.ConsoleURL, 10*time.Second)
}

// zoneName is a fresh zone for one spec.
func zoneName(what string) string { return what + "-" + runID }

func ptr[T any](v T) *T { return &v }

// createZone creates group × zone through the API with max as the admin.
func createZone(ctx context.Context, zone string, max int) {
	GinkgoHelper()
	code, err := cc.PutZone(ctx, ep.Keys.GroupAdmin.Key, group, zone, consoleclient.Update{MaxCount: ptr(max)})
	Expect(err).NotTo(HaveOccurred())
	Expect(code).To(Equal(200))
}
