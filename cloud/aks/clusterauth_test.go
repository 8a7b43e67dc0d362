package aks_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"testing"

	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/aks"
	"github.com/scaleproof/scaleproof/cloud/aks/aksfake"
	"github.com/scaleproof/scaleproof/cloud/cloudfake"
)

// TestClusterAPINeedsTheRoleAssignment: with the real azidentity client
// secret credential against the fake's Entra, the provider's token for the
// cluster meets an API server that judges it as AKS with Azure RBAC does:
// refused (403, and a SelfSubjectAccessReview answered "not allowed") until
// the run's "RBAC Cluster Admin" assignment has propagated, then let
// through; an ARM token, a token of an app without the assignment, and the
// run's token after Down deleted the assignment are refused, and nothing
// refused reaches the API server behind.
func TestClusterAPINeedsTheRoleAssignment(t *testing.T) {
	f := aksfake.New(sub)
	defer f.Close()
	f.AddApp("tenant-1", "client-run", "secret-run", runOID)
	f.AddApp("tenant-1", "client-other", "secret-other", "44444444-4444-4444-4444-444444444444")
	f.SetRBACPropagation(2)
	api, up, reached := cloudfake.StubAPIServer()
	defer api.Close()
	name := cloud.ClusterName(runID)
	front, err := cloudfake.NewFront(up, f.ClusterAuth(name))
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	f.SetClusterEndpoint(front.Host(), front.CA)

	cred := func(client, secret string) *azidentity.ClientSecretCredential {
		c, err := azidentity.NewClientSecretCredential("tenant-1", client, secret, &azidentity.ClientSecretCredentialOptions{
			ClientOptions:            policy.ClientOptions{Cloud: azcloud.Configuration{ActiveDirectoryAuthorityHost: f.AuthorityHost()}, Transport: f.Client()},
			DisableInstanceDiscovery: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	provider := func(client, secret string) *aks.Provider {
		o := options(f)
		p, err := aks.NewWith(o, aks.Deps{Credential: cred(client, secret), Transport: f.Client()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	if _, err := cred("client-run", "not-the-secret").GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{aks.AKSScope}}); err == nil {
		t.Errorf("Entra gave a token for a wrong client secret")
	}
	p := provider("client-run", "secret-run")
	c, err := p.Create(ctx, name, labels())
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CAData)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	do := func(method, path, token string) (int, map[string]any) {
		t.Helper()
		var body *bytes.Reader
		if method == http.MethodPost {
			body = bytes.NewReader([]byte(`{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"verb":"create","resource":"namespaces"}}}`))
		} else {
			body = bytes.NewReader(nil)
		}
		req, _ := http.NewRequest(method, c.Server+path, body)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	tok, err := p.Token(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	armTok, err := cred("client-run", "secret-run").GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{f.Endpoint() + "/.default"}})
	if err != nil {
		t.Fatal(err)
	}
	otherTok, err := provider("client-other", "secret-other").Token(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	const ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
	steps := []struct {
		name, method, path, token string
		want                      int
		allowed                   any
	}{
		{"an ARM token", http.MethodGet, "/api", armTok.Token, http.StatusUnauthorized, nil},
		{"an app without the assignment", http.MethodGet, "/api", otherTok.Value, http.StatusForbidden, nil},
		{"the run, before the assignment applies", http.MethodGet, "/api", tok.Value, http.StatusForbidden, nil},
		{"the run's access review, before it applies", http.MethodPost, ssar, tok.Value, http.StatusCreated, false},
		{"the run, once it applies", http.MethodGet, "/api", tok.Value, http.StatusOK, nil},
	}
	for _, s := range steps {
		before := reached()
		code, body := do(s.method, s.path, s.token)
		if code != s.want {
			t.Errorf("%s: %s %s = %d %v, want %d", s.name, s.method, s.path, code, body, s.want)
		}
		if s.allowed != nil {
			st, _ := body["status"].(map[string]any)
			if st["allowed"] != s.allowed {
				t.Errorf("%s: review status = %v, want allowed %v", s.name, st, s.allowed)
			}
		}
		if got := reached() - before; (code == http.StatusOK) != (got == 1) {
			t.Errorf("%s: the API server behind saw %d requests", s.name, got)
		}
	}
	down(t, p, c.Created[len(c.Created)-1:]) // the role assignment only
	if code, _ := do(http.MethodGet, "/api", tok.Value); code != http.StatusForbidden {
		t.Errorf("after the assignment was deleted: GET /api = %d, want 403", code)
	}
}
