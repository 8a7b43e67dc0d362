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

	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/kubeconfig"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "scaleproof on Kubernetes")
}

var (
	pf        *kubeconfig.Platform
	ep        platform.Endpoints
	prof      scenarios.Profile
	cc        *consoleclient.Client
	artifacts string
	runID     string
)

const group = "e2e"

var _ = BeforeSuite(func(ctx SpecContext) {
	kc, img := os.Getenv("SCALEPROOF_E2E_KUBECONFIG"), os.Getenv("SCALEPROOF_E2E_IMAGE")
	if kc == "" || img == "" {
		Skip("SCALEPROOF_E2E_KUBECONFIG and SCALEPROOF_E2E_IMAGE are not set: no cluster to test (make e2e sets them)")
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
}, NodeTimeout(5*time.Minute))

var _ = AfterSuite(func(ctx SpecContext) {
	if pf == nil {
		return
	}
	if err := pf.DumpLogs(ctx, filepath.Join(artifacts, "logs-e2e")); err != nil {
		GinkgoWriter.Printf("dump logs: %v\n", err)
	}
	Expect(pf.Down(ctx)).To(Succeed())
}, NodeTimeout(3*time.Minute))

var _ = ReportAfterSuite("JUnit", func(r Report) {
	dir := os.Getenv("ARTIFACTS")
	if dir == "" {
		return
	}
	_ = reporters.GenerateJUnitReport(r, filepath.Join(dir, "junit_e2e.xml"))
})

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
