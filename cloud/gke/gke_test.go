package gke

import (
	"context"
	"errors"
	"io"
	stdlog "log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/gke/gkefake"
)

const parent = "projects/p1/locations/us-central1"

// setup starts the fake, points Application Default Credentials at its
// token endpoint, and makes a provider on it.
func setup(t *testing.T, mod func(*cloud.Options)) (*gkefake.Fake, *Provider) {
	t.Helper()
	f := gkefake.New()
	t.Cleanup(f.Close)
	path, err := f.CredentialsFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	o := cloud.Options{Project: "p1", Location: "us-central1", RunID: "20261202-031000-abcdef", TTL: time.Hour,
		Endpoint: f.URL, RegistryEndpoint: f.URL, PollInterval: time.Millisecond, OperationTimeout: 10 * time.Second}
	if mod != nil {
		mod(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return f, p
}

func labels(now time.Time, ttl time.Duration) map[string]string {
	return cloud.Labels("20261202-031000-abcdef", now, ttl)
}

func TestNewNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		o    cloud.Options
		want string
	}{
		{cloud.Options{Location: "l"}, "--project is required for gke"},
		{cloud.Options{Project: "p"}, "--location is required for gke"},
		{cloud.Options{Project: "p", Location: "l", NodeMin: 3, NodeMax: 2}, "node pool bounds"},
		{cloud.Options{Project: "p", Location: "l", Endpoint: "::"}, "--cloud-endpoint"},
	} {
		if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	if _, err := New(cloud.Options{Project: "p", Location: "l"}); err != nil {
		t.Errorf("no credentials needed to make it: %v", err)
	}
}

func TestLifecycle(t *testing.T) {
	f, p := setup(t, nil)
	f.Set(func(f *gkefake.Fake) { f.Polls = 2; f.Endpoint = "10.0.0.1:443"; f.CA = []byte("PEM") })
	ctx := context.Background()
	name := cloud.ClusterName("20261202-031000-abcdef")
	c, err := p.Create(ctx, name, labels(time.Now(), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server != "https://10.0.0.1:443" || string(c.CAData) != "PEM" || c.Adopted || len(c.Created) != 2 {
		t.Errorf("cluster %+v", c)
	}
	got := f.Cluster(parent + "/clusters/" + name)
	if got == nil || got.GetResourceLabels()[cloud.LabelManagedBy] != cloud.ManagedByValue {
		t.Fatalf("cluster in the fake: %v", got)
	}
	np := got.GetNodePools()[0]
	if as := np.GetAutoscaling(); !as.GetEnabled() || as.GetMinNodeCount() != 1 || as.GetMaxNodeCount() != 4 || np.GetConfig().GetMachineType() != DefaultMachineType {
		t.Errorf("node pool %v", np)
	}
	polls := 0
	for _, r := range f.Requests() {
		if strings.Contains(r, "/operations/") {
			polls++
		}
	}
	if polls < 3 {
		t.Errorf("the create returned after %d polls, the operation takes 3", polls)
	}

	tok, err := p.Token(ctx, c)
	if err != nil || !f.IssuedToken(tok.Value) || tok.Expiry.IsZero() {
		t.Errorf("token %+v, %v", tok, err)
	}
	// a refresh gets a new token, not the cached one
	if tok2, err := p.Token(ctx, c); err != nil || tok2.Value == tok.Value || !f.IssuedToken(tok2.Value) {
		t.Errorf("second token %+v (first %s), %v", tok2, tok.Value, err)
	}

	reg, err := p.EnsureRegistry(ctx, labels(time.Now(), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	wantRepo := strings.TrimPrefix(f.URL, "http://") + "/p1/scaleproof-20261202-031000-abcdef/scaleproof-ref"
	if reg.Repository != wantRepo || len(reg.Created) != 1 || len(f.Repositories()) != 1 {
		t.Errorf("registry %+v, want %s; fake has %v", reg, wantRepo, f.Repositories())
	}
	// a second Ensure finds it and claims nothing
	again, err := p.EnsureRegistry(ctx, labels(time.Now(), time.Hour))
	if err != nil || len(again.Created) != 0 {
		t.Errorf("second ensure: %+v %v", again, err)
	}

	adopted, err := p.Adopt(ctx, name)
	if err != nil || !adopted.Adopted || len(adopted.Created) != 0 || adopted.Server != c.Server {
		t.Errorf("adopt %+v %v", adopted, err)
	}

	for _, r := range slices.Backward(append(c.Created, reg.Created...)) {
		if err := p.Delete(ctx, r); err != nil {
			t.Errorf("delete %s: %v", r, err)
		}
	}
	if n := len(f.Clusters()) + len(f.Repositories()); n != 0 {
		t.Errorf("left %v %v", f.Clusters(), f.Repositories())
	}
	// gone already: not an error
	if err := p.Delete(ctx, c.Created[0]); err != nil {
		t.Errorf("delete again: %v", err)
	}
}

func TestCreateFailures(t *testing.T) {
	name := "scaleproof-x"
	for _, tc := range []struct {
		name        string
		set         func(*gkefake.Fake)
		timeout     time.Duration
		wantKind    string
		wantPerm    string
		wantMsg     []string
		wantCreated int
	}{
		{name: "quota", set: func(f *gkefake.Fake) { f.Quota = true }, wantKind: "quota", wantMsg: []string{"create cluster " + name, `resource "CPUS"`}},
		{name: "permission", set: func(f *gkefake.Fake) { f.Deny = []string{"container.clusters.create"} }, wantKind: "permission",
			wantPerm: "container.clusters.create", wantMsg: []string{"missing permission container.clusters.create"}},
		{name: "halfway", set: func(f *gkefake.Fake) { f.FailHalfway = true; f.Polls = 1 }, wantKind: "other", wantCreated: 2,
			wantMsg: []string{"node pool scaleproof could not be created"}},
		{name: "never finishes", set: func(f *gkefake.Fake) { f.NeverFinish = true }, timeout: 30 * time.Millisecond, wantKind: "timeout", wantCreated: 2,
			wantMsg: []string{"create cluster " + name, "operation operation-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts cloud.Options
			f, p := setup(t, func(o *cloud.Options) {
				defer func() { opts = *o }()
				if tc.timeout > 0 {
					o.OperationTimeout = tc.timeout
				}
				// The delete's busy retries end at a deadline on the
				// provider's clock; frozen, only the fake's BusyDeletes
				// bound them, so a slow machine cannot turn the 30 ms
				// operation timeout of a create into a failed delete.
				frozen := time.Now()
				o.Now = func() time.Time { return frozen }
			})
			f.Set(tc.set)
			c, err := p.Create(context.Background(), name, labels(time.Now(), time.Hour))
			var ce *cloud.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err %v (%T), want a *cloud.Error", err, err)
			}
			t.Log(err)
			if ce.Kind != tc.wantKind || ce.Permission != tc.wantPerm {
				t.Errorf("kind %q permission %q, want %q %q: %v", ce.Kind, ce.Permission, tc.wantKind, tc.wantPerm, err)
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%q lacks %q", err, m)
				}
			}
			if len(c.Created) != tc.wantCreated {
				t.Fatalf("created %v, want %d", c.Created, tc.wantCreated)
			}
			// Down deletes what exists: the cluster (its node pool with it)
			f.Set(func(f *gkefake.Fake) { f.NeverFinish = false; f.BusyDeletes = 2 }) // still creating: GKE refuses the delete a while
			if tc.wantCreated > 0 {
				// Only the create under test has the short timeout: the
				// delete's wait gets the default, so a loaded machine
				// cannot fail it.
				opts.OperationTimeout = 10 * time.Second
				p, err := New(opts)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				if err := p.Delete(context.Background(), c.Created[0]); err != nil {
					t.Fatalf("delete after a failed create: %v", err)
				}
			}
			if left := f.Clusters(); len(left) != 0 {
				t.Errorf("left %v", left)
			}
			if tc.wantCreated > 0 {
				n := 0
				for _, r := range f.Requests() {
					if strings.HasPrefix(r, "DELETE") {
						n++
					}
				}
				if n != 3 {
					t.Errorf("%d deletes, want 3 (two refused while busy, then accepted)", n)
				}
			}
		})
	}
}

func TestRegistryPermission(t *testing.T) {
	f, p := setup(t, nil)
	f.Set(func(f *gkefake.Fake) { f.Deny = []string{"artifactregistry.repositories.create"} })
	_, err := p.EnsureRegistry(context.Background(), labels(time.Now(), time.Hour))
	var ce *cloud.Error
	if !errors.As(err, &ce) || ce.Kind != "permission" || ce.Permission != "artifactregistry.repositories.create" {
		t.Errorf("err %v", err)
	}
}

func TestBadCredentialsArePermission(t *testing.T) {
	_, p := setup(t, nil)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", t.TempDir()+"/none.json")
	_, err := p.List(context.Background())
	var ce *cloud.Error
	if !errors.As(err, &ce) || ce.Kind != "permission" || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Errorf("err %v", err)
	}
}

func TestList(t *testing.T) {
	f, p := setup(t, nil)
	now := time.Now()
	f.AddCluster(parent, "scaleproof-old", labels(now, -time.Hour))
	f.AddCluster(parent, "scaleproof-new", labels(now, time.Hour))
	f.AddCluster(parent, "prod", map[string]string{"team": "payments"})
	f.AddCluster("projects/p1/locations/europe-west1", "elsewhere", labels(now, -time.Hour))
	f.AddRepository("projects/p1/locations/us-central1", "scaleproof-old", labels(now, -time.Hour))
	f.AddRepository("projects/p1/locations/us-central1", "images", nil)
	rs, err := p.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cloud.Resource{}
	for _, r := range rs {
		got[r.Kind+" "+r.ID] = r
	}
	old := got["cluster "+parent+"/clusters/scaleproof-old"]
	if exp, ok := old.ExpiresAt(); !old.Ours() || !ok || !exp.Before(now) {
		t.Errorf("expired cluster: %+v", old)
	}
	if n := got["cluster "+parent+"/clusters/scaleproof-new"]; !n.Ours() {
		t.Errorf("unexpired cluster: %+v", n)
	}
	if pr := got["cluster "+parent+"/clusters/prod"]; pr.Ours() || pr.Labels["team"] != "payments" {
		t.Errorf("foreign cluster: %+v", pr)
	}
	if np := got["node pool "+parent+"/clusters/scaleproof-old/nodePools/default-pool"]; !np.Ours() {
		t.Errorf("node pool of the expired cluster: %+v", np)
	}
	if r := got["repository projects/p1/locations/us-central1/repositories/scaleproof-old"]; !r.Ours() || r.Name != "scaleproof-old" {
		t.Errorf("repository: %+v", r)
	}
	if _, ok := got["repository projects/p1/locations/us-central1/repositories/images"]; !ok {
		t.Errorf("foreign repository not listed")
	}
	if _, ok := got["cluster projects/p1/locations/europe-west1/clusters/elsewhere"]; ok {
		t.Errorf("listed another location's cluster")
	}
	if len(rs) != 8 {
		t.Errorf("%d resources: %v", len(rs), rs)
	}
}

// TestRegistryAuth pushes an image with the provider's registry auth to
// go-containerregistry's in-memory registry behind Artifact Registry's
// auth: basic, user oauth2accesstoken, an access token the token endpoint
// issued.
func TestRegistryAuth(t *testing.T) {
	var f *gkefake.Fake
	mem := registry.New(registry.Logger(stdlog.New(io.Discard, "", 0)))
	var refused atomic.Int32
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, pw, ok := r.BasicAuth()
		if !ok || u != "oauth2accesstoken" || !f.IssuedToken(pw) {
			refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="Artifact Registry"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication failed"}]}`, http.StatusUnauthorized)
			return
		}
		mem.ServeHTTP(w, r)
	}))
	defer reg.Close()
	f, p2 := setup(t, func(o *cloud.Options) { o.RegistryEndpoint = reg.URL; o.Location = "us-central1-a" })
	r, err := p2.EnsureRegistry(context.Background(), labels(time.Now(), time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Repositories()) != 1 || !strings.HasPrefix(f.Repositories()[0], "projects/p1/locations/us-central1/") {
		t.Errorf("a zone's repository goes in its region: %v", f.Repositories())
	}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(r.Repository + ":sha-0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img, remote.WithAuth(r.Auth)); err != nil {
		t.Fatalf("push: %v", err)
	}
	if _, err := remote.Head(tag, remote.WithAuth(r.Auth)); err != nil {
		t.Errorf("pushed image not there: %v", err)
	}
	// without the auth the registry refuses: the check above could fail
	before := refused.Load()
	if err := remote.Write(tag, img); err == nil || refused.Load() == before {
		t.Errorf("anonymous push: %v (refused %d)", err, refused.Load()-before)
	}
}

func TestPlan(t *testing.T) {
	p, err := New(cloud.Options{Project: "p1", Location: "us-central1-a", RunID: "R1"})
	if err != nil {
		t.Fatal(err)
	}
	pl := p.Plan(cloud.Options{RunID: "R1"})
	var kinds []string
	for _, r := range pl.Resources {
		kinds = append(kinds, r.String())
	}
	want := []string{"cluster scaleproof-r1", "node pool scaleproof", "repository scaleproof-r1"}
	if !slices.Equal(kinds, want) || len(pl.Calls) < 10 {
		t.Errorf("plan %v, %d calls", kinds, len(pl.Calls))
	}
	if pl := p.Plan(cloud.Options{RunID: "R1", Cluster: "mine"}); len(pl.Resources) != 1 {
		t.Errorf("adopting plans a cluster: %v", pl.Resources)
	}
}

// TestClusterTokenScopes: with a service account key (the nightly's
// workload identity federation likewise asks per scope), the cluster's
// bearer token is asked with cloud-platform and userinfo.email, as
// gke-gcloud-auth-plugin asks it; the fake's token endpoint checks the
// key's signature and records the scopes the JWT asked for.
func TestClusterTokenScopes(t *testing.T) {
	f, p := setup(t, nil)
	path, err := f.ServiceAccountFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	tok, err := p.Token(context.Background(), cloud.Cluster{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	got := f.TokenScopes(tok.Value)
	for _, want := range []string{Scope, UserinfoEmailScope} {
		if !slices.Contains(got, want) {
			t.Errorf("the cluster token's scopes %v lack %s", got, want)
		}
	}
}
