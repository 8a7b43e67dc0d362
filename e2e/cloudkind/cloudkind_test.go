//go:build e2e

// Package cloudkind runs `scaleproof run --platform gke` end to end on a
// kind cluster: the GKE control plane is gkefake on 127.0.0.1, whose
// "created" cluster reports the kind cluster's API server and CA and whose
// token endpoint hands out a ServiceAccount token (cluster-admin) that the
// kind API server accepts. So the real GKE provider creates (in the fake),
// the real cloud platform pushes the image to a registry that demands
// Artifact Registry's auth, writes the kubeconfig with its refreshed token
// file, and hands off to the kubeconfig platform with the cloud overlay,
// which deploys onto kind through port-forwards, and the scenarios run;
// then teardown deletes the fake's cluster and repository. The kind node
// cannot reach the registry on the host's loopback, so the same image is
// loaded into the node under the pushed name first (the overlay's
// IfNotPresent finds it), as a cloud node would have pulled it.
//
// Run (root; podman or a Docker that runs privileged containers; the node
// image as `make kind-node-image` makes it):
//
//	SCALEPROOF_E2E_KIND=1 go test -tags e2e -count=1 -timeout 30m -v ./e2e/cloudkind/
package cloudkind

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"io/fs"
	stdlog "log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/image"
	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/gke/gkefake"
	"github.com/scaleproof/scaleproof/kind"
)

func TestGKEPlatformOnKind(t *testing.T) {
	if os.Getenv("SCALEPROOF_E2E_KIND") != "1" {
		t.Skip("set SCALEPROOF_E2E_KIND=1 to make a kind cluster (root; podman or Docker)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 28*time.Minute)
	defer cancel()
	dir := os.Getenv("ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, "cloudkind")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, b := range []struct{ out, pkg string }{
		{"scaleproof", "github.com/scaleproof/scaleproof/cmd/scaleproof"},
		{"scaleproof-ref", "github.com/scaleproof/scaleproof/cmd/scaleproof-ref"},
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, b.out), b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	refBin := filepath.Join(bin, "scaleproof-ref")
	refBytes, err := os.ReadFile(refBin)
	if err != nil {
		t.Fatal(err)
	}

	// the fake control plane, and a registry behind Artifact Registry's auth
	f := gkefake.New()
	defer f.Close()
	var pushes atomic.Int32
	mem := registry.New(registry.Logger(stdlog.New(io.Discard, "", 0)))
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, pw, ok := r.BasicAuth(); !ok || u != "oauth2accesstoken" || !f.IssuedToken(pw) {
			w.Header().Set("WWW-Authenticate", `Basic realm="fake Artifact Registry"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
			pushes.Add(1)
		}
		mem.ServeHTTP(w, r)
	}))
	defer reg.Close()

	// the name the run will push under: its registry, project, repository
	// (from the run id) and the image's content tag
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	runID := "e2e-cloud-" + hex.EncodeToString(b)
	tagRef, err := image.Tag("", refBytes)
	if err != nil {
		t.Fatal(err)
	}
	tag := tagRef[strings.LastIndex(tagRef, ":")+1:]
	pushed := strings.TrimPrefix(reg.URL, "http://") + "/p1/scaleproof-" + cloud.RunIDLabelValue(runID) + "/scaleproof-ref:" + tag

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	k, err := kind.New(kind.Config{RunID: runID, Provider: os.Getenv("SCALEPROOF_E2E_KIND_PROVIDER"), Artifacts: filepath.Join(dir, "kind"),
		Log: log, Out: os.Stderr,
		Images: func(context.Context) ([]string, error) {
			a := filepath.Join(dir, "pushed-name.tar")
			return []string{a}, image.Write(a, pushed, refBytes)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer dcancel()
		_ = k.DumpLogs(dctx, filepath.Join(dir, "kind-logs"))
		if err := k.Down(dctx); err != nil {
			t.Errorf("kind down: %v", err)
		}
	}()
	if _, err := k.Up(ctx); err != nil {
		t.Fatalf("kind up: %v", err)
	}

	// the kind API server's endpoint and CA, and a token it accepts
	kc, err := clientcmd.LoadFromFile(k.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	kcl := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	rc, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	const sa = "scaleproof-cloud-e2e"
	if _, err := cs.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: "kube-system"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.Set(func(f *gkefake.Fake) {
		f.Endpoint = strings.TrimPrefix(kcl.Server, "https://")
		f.CA = kcl.CertificateAuthorityData
		f.Token = tr.Status.Token
		f.TokenTTL = 3600
		f.Polls = 2
	})
	adc, err := f.CredentialsFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	art := filepath.Join(dir, "run")
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "scaleproof"), "run", "--platform", "gke", "--project", "p1", "--location", "us-central1",
		"--ttl", "1h", "--run-id", runID, "--cloud-endpoint", f.URL, "--cloud-registry-endpoint", reg.URL, "--cloud-poll-interval", "200ms",
		"--profile", "quick", "--scenarios", "viewer-refused,sustained", "--ref-bin", refBin, "--artifacts", art, "--screenshots=false")
	cmd.Env = append(os.Environ(), "GOOGLE_APPLICATION_CREDENTIALS="+adc)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if err != nil {
		t.Fatalf("scaleproof run --platform gke on kind: %v (artifacts in %s)", err, art)
	}
	for _, want := range []string{"PASS", "GKE"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if pushes.Load() == 0 {
		t.Errorf("no image was pushed")
	}
	if c, r := f.Clusters(), f.Repositories(); len(c)+len(r) != 0 {
		t.Errorf("the run left %v %v in the fake", c, r)
	}
	junit, _ := os.ReadFile(filepath.Join(art, "junit_runner.xml"))
	for _, want := range []string{"gke: create cluster", "gke: push image", "gke: deploy", "gke: delete cluster"} {
		if !strings.Contains(string(junit), want) {
			t.Errorf("junit_runner.xml lacks %q", want)
		}
	}
	// No secret under the artifacts (the nightly publishes them): not the
	// cluster's bearer token the fake handed out, in any file.
	files := 0
	if err := filepath.WalkDir(art, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(tr.Status.Token)) {
			t.Errorf("the cluster's bearer token is in %s", p)
		}
		return err
	}); err != nil || files == 0 {
		t.Errorf("scan the artifacts %s: %d files, %v", art, files, err)
	}
}
