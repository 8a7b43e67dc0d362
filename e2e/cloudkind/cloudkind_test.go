//go:build e2e

// Package cloudkind runs `scaleproof run --platform gke|eks|aks` end to end
// on one kind cluster: each cloud's control plane is its fake on 127.0.0.1
// (gkefake, eksfake, aksfake), whose "created" cluster reports an API server
// that ends at the kind cluster. So each real provider creates (in its
// fake), the real cloud platform pushes the image to a registry that
// demands the cloud's own registry auth, writes the kubeconfig with its
// refreshed token file, and hands off to the kubeconfig platform with the
// cloud overlay, which deploys onto kind through port-forwards, and a
// scenario runs; then teardown deletes what the run made in the fake, and
// the janitor finds nothing of the run left.
//
// The clusters' API is as strict as the cloud's: GKE's endpoint takes the
// access token the fake's token endpoint handed out (a ServiceAccount token
// the kind API server accepts); EKS's and AKS's are a cloudfake.Front that
// judges the provider's own token as the cloud does (EKS: the presigned STS
// token, re-signed with the secret, and the creator's access entry; AKS: an
// Entra token for the AKS server app, and the Azure RBAC Cluster Admin
// assignment the run makes, after it propagates) and forwards what passes
// to kind.
//
// The kind node cannot reach the registries on the host's loopback, so the
// image is loaded into the node under each pushed name first (the overlay's
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
	"encoding/pem"
	"io"
	"io/fs"
	stdlog "log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	"github.com/scaleproof/scaleproof/cloud/aks"
	"github.com/scaleproof/scaleproof/cloud/aks/aksfake"
	"github.com/scaleproof/scaleproof/cloud/cloudfake"
	"github.com/scaleproof/scaleproof/cloud/eks"
	"github.com/scaleproof/scaleproof/cloud/eks/eksfake"
	"github.com/scaleproof/scaleproof/cloud/gke/gkefake"
	"github.com/scaleproof/scaleproof/kind"
	"github.com/scaleproof/scaleproof/scenarios/run"
)

// rig is one cloud's fake, wired for a run on kind.
type rig struct {
	platform string   // --platform
	name     string   // the Platform column and the junit steps' prefix
	runID    string   // --run-id
	pushed   string   // the image name the run pushes
	flags    []string // the cloud's flags
	env      []string // its credentials
	pushes   *atomic.Int32
	// connect points the fake's clusters at kind (its endpoint, CA and a
	// token it accepts) before the run.
	connect func(t *testing.T, up cloudfake.Upstream)
	// left is what the fake still holds after the run.
	left  func() []string
	close func()
	// counted adds the pushes a fake that serves the registry itself saw.
	counted func()
	// wantLog is a line the run's scaleproof.log must hold.
	wantLog string
}

func newRunID(platform string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "e2e-" + platform + "-" + hex.EncodeToString(b)
}

// authRegistry is an in-memory registry behind Basic auth that ok accepts.
func authRegistry(realm string, ok func(user, pass string) bool, pushes *atomic.Int32) *httptest.Server {
	mem := registry.New(registry.Logger(stdlog.New(io.Discard, "", 0)))
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, pw, good := r.BasicAuth(); !good || !ok(u, pw) {
			w.Header().Set("WWW-Authenticate", `Basic realm="`+realm+`"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
			pushes.Add(1)
		}
		mem.ServeHTTP(w, r)
	}))
}

func gkeRig(t *testing.T, tag string) *rig {
	f := gkefake.New()
	r := &rig{platform: "gke", name: "gke", runID: newRunID("gke"), pushes: &atomic.Int32{}}
	reg := authRegistry("fake Artifact Registry", func(u, pw string) bool { return u == "oauth2accesstoken" && f.IssuedToken(pw) }, r.pushes)
	r.pushed = strings.TrimPrefix(reg.URL, "http://") + "/p1/scaleproof-" + cloud.RunIDLabelValue(r.runID) + "/scaleproof-ref:" + tag
	adc, err := f.CredentialsFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r.flags = []string{"--project", "p1", "--location", "us-central1", "--cloud-endpoint", f.URL, "--cloud-registry-endpoint", reg.URL, "--cloud-poll-interval", "200ms"}
	r.env = []string{"GOOGLE_APPLICATION_CREDENTIALS=" + adc}
	r.connect = func(t *testing.T, up cloudfake.Upstream) {
		f.Set(func(f *gkefake.Fake) {
			f.Endpoint = strings.TrimPrefix(up.Server, "https://")
			f.CA = up.CA
			f.Token = up.Token
			f.TokenTTL = 3600
			f.Polls = 2
		})
	}
	r.left = func() []string { return append(f.Clusters(), f.Repositories()...) }
	r.close = func() { reg.Close(); f.Close() }
	return r
}

func eksRig(t *testing.T, tag string) *rig {
	f := eksfake.New()
	f.SetPolls(2)
	const key, secret = "AKIDSCALEPROOFE2E", "e2e-secret"
	f.SetCredentials(key, secret)
	r := &rig{platform: "eks", name: "eks", runID: newRunID("eks"), pushes: &atomic.Int32{}}
	reg := authRegistry("fake ECR", func(u, pw string) bool { return u == "AWS" && pw == f.RegistryPassword }, r.pushes)
	r.pushed = strings.TrimPrefix(reg.URL, "http://") + "/" + eks.RepositoryName(r.runID) + ":" + tag
	r.flags = []string{"--region", f.Region, "--cloud-endpoint", f.URL, "--cloud-registry-endpoint", reg.URL, "--cloud-poll-interval", "200ms"}
	r.env = []string{"AWS_ACCESS_KEY_ID=" + key, "AWS_SECRET_ACCESS_KEY=" + secret, "AWS_SESSION_TOKEN="}
	var front *cloudfake.Front
	r.connect = func(t *testing.T, up cloudfake.Upstream) {
		var err error
		if front, err = cloudfake.NewFront(up, f.ClusterAuth(cloud.ClusterName(r.runID))); err != nil {
			t.Fatal(err)
		}
		f.APIServer, f.CAData = front.URL, front.CA
	}
	r.left = f.Resources
	r.close = func() {
		if front != nil {
			front.Close()
		}
		reg.Close()
		f.Close()
	}
	return r
}

func aksRig(t *testing.T, tag string) *rig {
	const sub, tenant, client, secret, oid = "00000000-1111-2222-3333-444444444444", "tenant-e2e", "client-e2e", "secret-e2e", "55555555-5555-5555-5555-555555555555"
	f := aksfake.New(sub)
	f.Polls = 2
	f.AddApp(tenant, client, secret, oid)
	f.SetRBACPropagation(2)
	r := &rig{platform: "aks", name: "aks", runID: newRunID("aks"), pushes: &atomic.Int32{},
		// the assignment propagates after two checks: the deploy waited
		wantLog: "waiting until the cluster authorizes the run"}
	r.pushed = f.Host() + "/" + aks.ImageRepository + ":" + tag
	// The CLI trusts the fake's TLS certificate (ARM, Entra and ACR) as
	// Go does on Linux: SSL_CERT_FILE.
	ca := filepath.Join(t.TempDir(), "aksfake.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	r.flags = []string{"--subscription", sub, "--resource-group", "rg-scaleproof-e2e", "--location", "westeurope",
		"--cloud-endpoint", f.Endpoint(), "--cloud-registry-endpoint", f.Host(),
		// the Azure SDK's pollers refuse a frequency under a second
		"--cloud-poll-interval", "1s"}
	r.env = []string{"AZURE_TENANT_ID=" + tenant, "AZURE_CLIENT_ID=" + client, "AZURE_CLIENT_SECRET=" + secret,
		"AZURE_AUTHORITY_HOST=" + f.AuthorityHost(), "SSL_CERT_FILE=" + ca}
	var front *cloudfake.Front
	r.connect = func(t *testing.T, up cloudfake.Upstream) {
		var err error
		if front, err = cloudfake.NewFront(up, f.ClusterAuth(cloud.ClusterName(r.runID))); err != nil {
			t.Fatal(err)
		}
		f.SetClusterEndpoint(front.Host(), front.CA)
	}
	r.pushes = &atomic.Int32{}
	r.counted = func() {
		for _, q := range f.Requests() {
			if strings.HasPrefix(q, "PUT /v2/") && strings.Contains(q, "/manifests/") {
				r.pushes.Add(1)
			}
		}
	}
	r.left = func() []string {
		var out []string
		for _, res := range f.Resources("") {
			out = append(out, res.Type+" "+res.Name)
		}
		return out
	}
	r.close = func() {
		if front != nil {
			front.Close()
		}
		f.Close()
	}
	return r
}

func TestCloudPlatformsOnKind(t *testing.T) {
	if os.Getenv("SCALEPROOF_E2E_KIND") != "1" {
		t.Skip("set SCALEPROOF_E2E_KIND=1 to make a kind cluster (root; podman or Docker)")
	}
	// Ctrl-C: the first cancels ctx, so the run ends and the deferred
	// teardowns delete the kind cluster and close the fakes (a test process
	// killed by SIGINT would run no defer); a second exits at once (run.Trap).
	trapped, untrap, _ := run.Trap(context.Background(), 10*time.Minute, "scaleproof e2e: exiting now; delete what is left with `scaleproof kind delete scaleproof-<run id>`")
	defer untrap()
	ctx, cancel := context.WithTimeout(trapped, 28*time.Minute)
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
	tagRef, err := image.Tag("", refBytes)
	if err != nil {
		t.Fatal(err)
	}
	tag := tagRef[strings.LastIndex(tagRef, ":")+1:]

	rigs := []*rig{gkeRig(t, tag), eksRig(t, tag), aksRig(t, tag)}
	defer func() {
		for _, r := range rigs {
			r.close()
		}
	}()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	k, err := kind.New(kind.Config{RunID: newRunID("cloud"), Provider: os.Getenv("SCALEPROOF_E2E_KIND_PROVIDER"), Artifacts: filepath.Join(dir, "kind"),
		Log: log, Out: os.Stderr,
		Images: func(context.Context) ([]string, error) {
			var archives []string
			for _, r := range rigs {
				a := filepath.Join(dir, r.platform+"-pushed-name.tar")
				if err := image.Write(a, r.pushed, refBytes); err != nil {
					return nil, err
				}
				archives = append(archives, a)
			}
			return archives, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := run.Teardown(k, filepath.Join(dir, "kind-logs"), log, nil); err != nil {
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
	up := cloudfake.Upstream{Server: kcl.Server, CA: kcl.CertificateAuthorityData, Token: tr.Status.Token}

	for _, r := range rigs {
		t.Run(r.platform, func(t *testing.T) {
			before := namespaces(ctx, t, cs)
			r.connect(t, up)
			art := filepath.Join(dir, r.platform)
			args := append([]string{"run", "--platform", r.platform, "--ttl", "1h", "--run-id", r.runID,
				"--profile", "quick", "--scenarios", "viewer-refused,sustained", "--ref-bin", refBin, "--artifacts", art, "--screenshots=false"}, r.flags...)
			stdout, err := scaleproof(ctx, t, filepath.Join(bin, "scaleproof"), r.env, args...)
			if err != nil {
				t.Fatalf("scaleproof run --platform %s on kind: %v (artifacts in %s)", r.platform, err, art)
			}
			for _, want := range []string{"PASS", strings.ToUpper(r.platform)} {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q", want)
				}
			}
			if r.counted != nil {
				r.counted()
			}
			if r.pushes.Load() == 0 {
				t.Errorf("no image was pushed")
			}
			if left := r.left(); len(left) != 0 {
				t.Errorf("the run left %v in the fake", left)
			}
			if r.wantLog != "" {
				if b, _ := os.ReadFile(filepath.Join(art, "scaleproof.log")); !strings.Contains(string(b), r.wantLog) {
					t.Errorf("scaleproof.log lacks %q", r.wantLog)
				}
			}
			junit, _ := os.ReadFile(filepath.Join(art, "junit_runner.xml"))
			for _, want := range []string{"create cluster", "push image", "deploy", "delete cluster"} {
				if !strings.Contains(string(junit), r.platform+": "+want) {
					t.Errorf("junit_runner.xml lacks %q", r.platform+": "+want)
				}
			}
			// the janitor, listing everything scaleproof in the fake, finds
			// nothing of the run left (nothing kept, nothing to delete)
			out, err := scaleproof(ctx, t, filepath.Join(bin, "scaleproof"), r.env, append([]string{"cloud", "janitor", "--platform", r.platform, "--dry-run"}, janitorFlags(r.flags)...)...)
			if err != nil || strings.Contains(out, r.runID) || strings.Contains(out, cloud.RunIDLabelValue(r.runID)) {
				t.Errorf("janitor after the run: %v\n%s", err, out)
			}
			// No secret under the artifacts (the nightly publishes them):
			// not the kind cluster's bearer token the fake handed out, in
			// any file.
			noToken(t, art, tr.Status.Token)
			// the next cloud's run starts on an empty cluster: the run's
			// namespaces, which the cloud's cluster delete would have
			// taken, are deleted here
			cleanNamespaces(ctx, t, cs, before)
		})
	}
}

// janitorFlags are a run's cloud flags the janitor takes (not the registry
// endpoint).
func janitorFlags(flags []string) []string {
	var out []string
	for i := 0; i+1 < len(flags); i += 2 {
		if flags[i] != "--cloud-registry-endpoint" && flags[i] != "--cloud-poll-interval" {
			out = append(out, flags[i], flags[i+1])
		}
	}
	return out
}

func scaleproof(ctx context.Context, t *testing.T, bin string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	// When ctx ends (Ctrl-C, the test's timeout) scaleproof gets its own
	// Ctrl-C and tears down what it made; killed only if that takes longer.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Minute
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("scaleproof %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args[:min(3, len(args))], " "), stdout.String(), stderr.String())
	return stdout.String(), err
}

func noToken(t *testing.T, dir, token string) {
	t.Helper()
	files := 0
	if err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(token)) {
			t.Errorf("the cluster's bearer token is in %s", p)
		}
		return err
	}); err != nil || files == 0 {
		t.Errorf("scan the artifacts %s: %d files, %v", dir, files, err)
	}
}

func namespaces(ctx context.Context, t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	l, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range l.Items {
		out = append(out, n.Name)
	}
	return out
}

// cleanNamespaces deletes the namespaces not in keep and waits, at most 5
// minutes, until they are gone.
func cleanNamespaces(ctx context.Context, t *testing.T, cs kubernetes.Interface, keep []string) {
	t.Helper()
	for _, n := range namespaces(ctx, t, cs) {
		if !slices.Contains(keep, n) {
			_ = cs.CoreV1().Namespaces().Delete(ctx, n, metav1.DeleteOptions{})
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for tick := time.NewTicker(2 * time.Second); ; <-tick.C {
		var extra []string
		for _, n := range namespaces(ctx, t, cs) {
			if !slices.Contains(keep, n) {
				extra = append(extra, n)
			}
		}
		if len(extra) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespaces %v still there after 5 minutes", extra)
		}
	}
}
