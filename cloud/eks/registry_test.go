package eks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/eks/eksfake"
)

// ecrRegistry is go-containerregistry's in-memory registry behind the auth
// ECR uses: HTTP Basic, user AWS, the password of the authorization token.
func ecrRegistry(t *testing.T, password string) *httptest.Server {
	t.Helper()
	reg := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "AWS" || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="fake ECR"`)
			http.Error(w, "Not Authorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestEnsureRegistryPushesWithECRAuth(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	fake.RegistryPassword = "eyJwYXlsb2FkIjoiZmFrZSJ9"
	regSrv := ecrRegistry(t, fake.RegistryPassword)
	p := newProvider(t, fake, func(o *cloud.Options) { o.RegistryEndpoint = regSrv.URL })
	ctx := context.Background()

	reg, err := p.EnsureRegistry(ctx, labels())
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(regSrv.URL, "http://")
	if reg.Repository != host+"/scaleproof-ref/20261202-0310" {
		t.Errorf("Repository = %q, want %s/scaleproof-ref/20261202-0310", reg.Repository, host)
	}
	if len(reg.Created) != 1 || reg.Created[0].Name != "scaleproof-ref/20261202-0310" || !reg.Created[0].Ours() {
		t.Errorf("Created = %v, want the new repository with our labels", reg.Created)
	}
	if tags, _ := fake.RepositoryTags("scaleproof-ref/20261202-0310"); tags[cloud.LabelRunID] != "20261202-0310" {
		t.Errorf("repository tags = %v", tags)
	}

	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(reg.Repository+":test", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(authn.Anonymous), remote.WithContext(ctx)); err == nil {
		t.Fatal("push without auth succeeded: the registry does not check ECR's auth")
	}
	if err := remote.Write(ref, img, remote.WithAuth(reg.Auth), remote.WithContext(ctx)); err != nil {
		t.Fatalf("push with the ECR token's auth: %v", err)
	}
	got, err := remote.Image(ref, remote.WithAuth(reg.Auth))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if d, _ := got.Digest(); d != want {
		t.Errorf("pulled %v, pushed %v", d, want)
	}

	// A second run finds the repository: nothing created, and its expiry
	// moves later so the janitor leaves it while that run uses it.
	later := cloud.Labels("next-run", t0.Add(2*time.Hour), 3*time.Hour)
	reg2, err := p.EnsureRegistry(ctx, later)
	if err != nil {
		t.Fatal(err)
	}
	if len(reg2.Created) != 0 || reg2.Repository != reg.Repository {
		t.Errorf("second EnsureRegistry = %+v, want the same repository, not created", reg2)
	}
	if tags, _ := fake.RepositoryTags("scaleproof-ref/20261202-0310"); tags[cloud.LabelExpiresAt] != later[cloud.LabelExpiresAt] {
		t.Errorf("repository expiry = %v, want moved to %v", tags[cloud.LabelExpiresAt], later[cloud.LabelExpiresAt])
	}
	// An earlier expiry never shortens it.
	if _, err := p.EnsureRegistry(ctx, labels()); err != nil {
		t.Fatal(err)
	}
	if tags, _ := fake.RepositoryTags("scaleproof-ref/20261202-0310"); tags[cloud.LabelExpiresAt] != later[cloud.LabelExpiresAt] {
		t.Errorf("repository expiry = %v, want kept at %v", tags[cloud.LabelExpiresAt], later[cloud.LabelExpiresAt])
	}
}

func TestEnsureRegistryLeavesForeignRepository(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	fake.AddRepository("scaleproof-ref/20261202-0310", map[string]string{"team": "payments"})
	p := newProvider(t, fake)
	reg, err := p.EnsureRegistry(context.Background(), labels())
	if err != nil {
		t.Fatal(err)
	}
	if want := eksfake.DefaultAccount + ".dkr.ecr." + fake.Region + ".amazonaws.com/scaleproof-ref/20261202-0310"; reg.Repository != want || len(reg.Created) != 0 {
		t.Errorf("registry = %+v, want %s, not created", reg, want)
	}
	if tags, _ := fake.RepositoryTags("scaleproof-ref/20261202-0310"); len(tags) != 1 || tags["team"] != "payments" {
		t.Errorf("a foreign repository's tags changed: %v", tags)
	}
}

func TestEnsureRegistryErrors(t *testing.T) {
	tests := []struct {
		name, kind, permission string
		setup                  func(*eksfake.Server)
	}{
		{"create quota", "quota", "", func(f *eksfake.Server) { f.Quota("ecr:CreateRepository") }},
		{"token denied", "permission", "ecr:GetAuthorizationToken", func(f *eksfake.Server) { f.Deny("ecr:GetAuthorizationToken") }},
		{"describe denied", "permission", "ecr:DescribeRepositories", func(f *eksfake.Server) { f.Deny("ecr:DescribeRepositories") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := eksfake.New()
			defer fake.Close()
			tt.setup(fake)
			_, err := newProvider(t, fake).EnsureRegistry(context.Background(), labels())
			if !isKind(err, tt.kind) || !strings.Contains(err.Error(), tt.permission) {
				t.Errorf("EnsureRegistry: %v, want kind %s naming %q", err, tt.kind, tt.permission)
			}
		})
	}
}
