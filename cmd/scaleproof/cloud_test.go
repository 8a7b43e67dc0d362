package main

import (
	"bytes"
	"io"
	"io/fs"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/gke/gkefake"
)

// gkeRig is a fake GKE (both APIs and the token endpoint), a registry that
// demands Artifact Registry's auth, and Application Default Credentials
// pointing at the fake.
type gkeRig struct {
	f   *gkefake.Fake
	reg *httptest.Server
	dir string
}

func newGKERig(t *testing.T) *gkeRig {
	t.Helper()
	f := gkefake.New()
	t.Cleanup(f.Close)
	mem := registry.New(registry.Logger(stdlog.New(io.Discard, "", 0)))
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, pw, ok := r.BasicAuth(); !ok || u != "oauth2accesstoken" || !f.IssuedToken(pw) {
			w.Header().Set("WWW-Authenticate", `Basic realm="fake"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mem.ServeHTTP(w, r)
	}))
	t.Cleanup(reg.Close)
	dir := t.TempDir()
	adc, err := f.CredentialsFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adc)
	// the clusters' API server: a port nothing listens on, so the deploy fails fast
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	f.Set(func(f *gkefake.Fake) { f.Endpoint = closed })
	return &gkeRig{f: f, reg: reg, dir: dir}
}

func (g *gkeRig) flags(extra ...string) []string {
	return append([]string{"--platform", "gke", "--project", "p1", "--location", "us-central1",
		"--cloud-endpoint", g.f.URL, "--cloud-registry-endpoint", g.reg.URL, "--cloud-poll-interval", "1ms", "--operation-timeout", "20s"}, extra...)
}

func TestCloudRunUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--platform", "gke", "--project", "p", "--location", "l"}, exitUsage}, // no --ttl
		{[]string{"--platform", "gke", "--ttl", "1h", "--location", "l"}, exitUsage},    // no --project
		{[]string{"--platform", "gke", "--ttl", "1h", "--project", "p", "--location", "l", "--load-shards", "2"}, exitUsage},
		{[]string{"--platform", "gcp", "--ttl", "1h"}, exitUsage},
	} {
		art := filepath.Join(t.TempDir(), "a")
		if _, code := execute(t, newRunCmd(), append(tc.args, "--artifacts", art, "--quiet")...); code != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.want)
		}
		if _, err := os.Stat(art); err == nil {
			t.Errorf("%v: a usage error left the artifacts folder", tc.args)
		}
	}
}

// TestCloudRunFailedDeployDeletesWhatItMade: the whole cloud path through
// the command with the real GKE provider on the fake: cluster, repository,
// image push with Artifact Registry's auth, kubeconfig; the deploy fails
// (no API server answers), the run exits 3, and teardown deletes the
// cluster and the repository.
func TestCloudRunFailedDeployDeletesWhatItMade(t *testing.T) {
	g := newGKERig(t)
	refBin := filepath.Join(g.dir, "scaleproof-ref")
	if err := os.WriteFile(refBin, []byte("not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	art := filepath.Join(g.dir, "art")
	_, code := execute(t, newRunCmd(), g.flags("--ttl", "2h", "--ref-bin", refBin, "--artifacts", art, "--quiet", "--screenshots=false")...)
	if code != exitInfra {
		t.Errorf("exit %d, want %d", code, exitInfra)
	}
	reqs := strings.Join(g.f.Requests(), "\n")
	for _, want := range []string{"POST /v1/projects/p1/locations/us-central1/clusters", "POST /v1/projects/p1/locations/us-central1/repositories",
		"DELETE /v1/projects/p1/locations/us-central1/clusters/scaleproof-", "DELETE /v1/projects/p1/locations/us-central1/repositories/scaleproof-"} {
		if !strings.Contains(reqs, want) {
			t.Errorf("no %q in the requests:\n%s", want, reqs)
		}
	}
	if c, r := g.f.Clusters(), g.f.Repositories(); len(c)+len(r) != 0 {
		t.Errorf("left behind: %v %v", c, r)
	}
	junit, err := os.ReadFile(filepath.Join(art, "junit_runner.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gke: create cluster scaleproof-", "gke: push image", "gke: credentials", "gke: deploy", "gke: delete cluster scaleproof-", "gke: delete repository"} {
		if !strings.Contains(string(junit), want) {
			t.Errorf("junit_runner.xml lacks %q", want)
		}
	}
	// No secret under the artifacts (they are published): neither the
	// token, nor the kubeconfig that reads it, nor any API key.
	if err := filepath.WalkDir(art, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if e.Name() == "kubeconfig" || e.Name() == "token" {
			t.Errorf("a credentials file under the artifacts: %s", p)
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("fake-token")) {
			t.Errorf("the cluster token is in %s", p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range secretsUnder(t, art) {
		t.Errorf("a secret under the artifacts: %s", f)
	}
}

func TestCloudRunAdoptedClusterStays(t *testing.T) {
	g := newGKERig(t)
	g.f.AddCluster("projects/p1/locations/us-central1", "theirs", map[string]string{"team": "payments"})
	refBin := filepath.Join(g.dir, "scaleproof-ref")
	_ = os.WriteFile(refBin, []byte("x"), 0o755)
	_, code := execute(t, newRunCmd(), g.flags("--ttl", "2h", "--cluster", "theirs", "--ref-bin", refBin,
		"--artifacts", filepath.Join(g.dir, "art"), "--quiet", "--screenshots=false")...)
	if code != exitInfra {
		t.Errorf("exit %d, want %d", code, exitInfra)
	}
	if c := g.f.Clusters(); len(c) != 1 || !strings.HasSuffix(c[0], "/theirs") {
		t.Errorf("clusters %v: the adopted one must stay", c)
	}
	for _, r := range g.f.Requests() {
		if strings.HasPrefix(r, "DELETE") && strings.Contains(r, "/clusters/") || strings.HasPrefix(r, "POST") && strings.HasSuffix(r, "/clusters") {
			t.Errorf("request %q on an adopted cluster", r)
		}
	}
	if len(g.f.Repositories()) != 0 {
		t.Errorf("the run's repository stayed: %v", g.f.Repositories())
	}
}

// TestCloudRunRefusalsExit3: a quota or permission refusal exits 3 and the
// reason (the permission named) is in table.md.
func TestCloudRunRefusalsExit3(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*gkefake.Fake)
		want string
	}{
		{"permission", func(f *gkefake.Fake) { f.Deny = []string{"container.clusters.create"} }, "missing permission container.clusters.create"},
		{"quota", func(f *gkefake.Fake) { f.Quota = true }, `quota: Insufficient regional quota to satisfy request: resource "CPUS"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGKERig(t)
			g.f.Set(tc.set)
			refBin := filepath.Join(g.dir, "scaleproof-ref")
			_ = os.WriteFile(refBin, []byte("x"), 0o755)
			art := filepath.Join(g.dir, "art")
			if _, code := execute(t, newRunCmd(), g.flags("--ttl", "2h", "--ref-bin", refBin, "--artifacts", art, "--quiet", "--screenshots=false")...); code != exitInfra {
				t.Errorf("exit %d, want %d", code, exitInfra)
			}
			md, _ := os.ReadFile(filepath.Join(art, "table.md"))
			if !strings.Contains(string(md), tc.want) {
				t.Errorf("table.md lacks %q:\n%s", tc.want, md)
			}
		})
	}
}

func TestCloudPlanContactsNothing(t *testing.T) {
	g := newGKERig(t)
	out, code := execute(t, newCloudCmd(), append([]string{"plan"}, g.flags("--ttl", "3h")...)...)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"cluster     scaleproof-", "node pool   scaleproof", "repository  scaleproof-", "autoscaling: 1..4 nodes",
		cloud.LabelExpiresAt + "=", "container.googleapis.com", "projects.locations.clusters.create", "artifactregistry.googleapis.com"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if reqs := g.f.Requests(); len(reqs) != 0 {
		t.Errorf("plan made requests: %v", reqs)
	}
	if _, code := execute(t, newCloudCmd(), "plan", "--platform", "gke"); code != exitUsage {
		t.Errorf("plan without --project: exit %d", code)
	}
}

func TestCloudJanitor(t *testing.T) {
	g := newGKERig(t)
	const parent = "projects/p1/locations/us-central1"
	now := time.Now()
	g.f.AddCluster(parent, "scaleproof-old", cloud.Labels("old", now, -time.Hour))
	g.f.AddCluster(parent, "scaleproof-new", cloud.Labels("new", now, time.Hour))
	g.f.AddCluster(parent, "prod", map[string]string{"team": "payments", cloud.LabelExpiresAt: "1"})
	g.f.AddRepository(parent, "scaleproof-old", cloud.Labels("old", now, -time.Hour))
	g.f.AddRepository(parent, "images", nil)

	out, code := execute(t, newCloudCmd(), append([]string{"janitor", "--dry-run"}, g.flags()...)...)
	if code != exitOK || !strings.Contains(out, "would delete  cluster scaleproof-old") || !strings.Contains(out, "would delete 2,") {
		t.Errorf("dry run: exit %d\n%s", code, out)
	}
	if len(g.f.Clusters()) != 3 || len(g.f.Repositories()) != 2 {
		t.Fatalf("dry run deleted: %v %v", g.f.Clusters(), g.f.Repositories())
	}
	out, code = execute(t, newCloudCmd(), append([]string{"janitor"}, g.flags()...)...)
	if code != exitOK {
		t.Errorf("exit %d\n%s", code, out)
	}
	if c, r := strings.Join(g.f.Clusters(), " "), strings.Join(g.f.Repositories(), " "); strings.Contains(c, "scaleproof-old") || strings.Contains(r, "scaleproof-old") ||
		!strings.Contains(c, "prod") || !strings.Contains(c, "scaleproof-new") || !strings.Contains(r, "images") {
		t.Errorf("after: clusters %s; repositories %s", c, r)
	}

	g.f.Set(func(f *gkefake.Fake) { f.Deny = []string{"container.clusters.list"} })
	if _, code := execute(t, newCloudCmd(), append([]string{"janitor"}, g.flags()...)...); code != exitInfra {
		t.Errorf("denied list: exit %d, want %d", code, exitInfra)
	}
}
