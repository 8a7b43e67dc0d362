package aks_test

import (
	"context"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/aks"
	"github.com/scaleproof/scaleproof/cloud/aks/aksfake"
	"github.com/scaleproof/scaleproof/cloud/janitor"
)

const (
	sub      = "00000000-1111-2222-3333-444444444444"
	group    = "rg-scaleproof-run"
	location = "westeurope"
	runID    = "20261202-0310"
	// armToken is a JWT whose payload names the run's identity (oid), as
	// Entra's access tokens do; header and signature are placeholders.
	armToken = "eyJhbGciOiJub25lIn0.eyJhdWQiOiJodHRwczovL21hbmFnZW1lbnQuYXp1cmUuY29tIiwib2lkIjoiMzMzMzMzMzMtMzMzMy0zMzMzLTMzMzMtMzMzMzMzMzMzMzMzIiwiaWR0eXAiOiJhcHAifQ.c2ln"
	runOID   = "33333333-3333-3333-3333-333333333333"
	aksToken = "fake-aks-token"
)

var now = time.Date(2026, 12, 2, 3, 10, 0, 0, time.UTC)

// fakeCred is an azcore.TokenCredential: the AKS scope gets aksToken, any
// other (ARM) armToken.
type fakeCred struct {
	mu     sync.Mutex
	scopes []string
}

func (c *fakeCred) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scopes = append(c.scopes, o.Scopes...)
	tok := armToken
	if slices.Contains(o.Scopes, aks.AKSScope) {
		tok = aksToken
	}
	return azcore.AccessToken{Token: tok, ExpiresOn: now.Add(time.Hour)}, nil
}

func newFake(t *testing.T) *aksfake.Server {
	t.Helper()
	f := aksfake.New(sub)
	f.ARMToken = armToken
	t.Cleanup(f.Close)
	return f
}

func options(f *aksfake.Server) cloud.Options {
	return cloud.Options{
		Subscription: sub, ResourceGroup: group, Location: location,
		RunID: runID, TTL: 3 * time.Hour,
		Endpoint: f.Endpoint(), RegistryEndpoint: f.Host(),
		PollInterval: time.Millisecond, OperationTimeout: 10 * time.Second,
		Now: func() time.Time { return now },
	}
}

func newProvider(t *testing.T, f *aksfake.Server, edit func(*cloud.Options)) (*aks.Provider, *fakeCred) {
	t.Helper()
	o := options(f)
	if edit != nil {
		edit(&o)
	}
	cred := &fakeCred{}
	p, err := aks.NewWith(o, aks.Deps{Credential: cred, Transport: f.Client()})
	if err != nil {
		t.Fatalf("NewWith: %v", err)
	}
	return p, cred
}

func labels() map[string]string { return cloud.Labels(runID, now, 3*time.Hour) }

// down deletes created in reverse order, as the platform's Down does.
func down(t *testing.T, p *aks.Provider, created ...[]cloud.Resource) {
	t.Helper()
	var all []cloud.Resource
	for _, c := range created {
		all = append(all, c...)
	}
	for i := len(all) - 1; i >= 0; i-- {
		if err := p.Delete(context.Background(), all[i]); err != nil {
			t.Fatalf("Delete %s: %v", all[i], err)
		}
	}
}

func kinds(rs []cloud.Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Kind+" "+r.Name)
	}
	return out
}

func TestNewNamesTheMissingFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*cloud.Options)
		want string
	}{
		{"no subscription", func(o *cloud.Options) { o.Subscription = "" }, "--subscription is required for aks"},
		{"no resource group", func(o *cloud.Options) { o.ResourceGroup = " " }, "--resource-group is required for aks"},
		{"no location", func(o *cloud.Options) { o.Location = "" }, "--location is required for aks"},
		{"plain http endpoint", func(o *cloud.Options) { o.Endpoint = "http://127.0.0.1:1" }, "want an https:// URL"},
		{"max below min", func(o *cloud.Options) { o.NodeMin, o.NodeMax = 3, 2 }, "node pool bounds 3..2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := cloud.Options{Subscription: sub, ResourceGroup: group, Location: location, Endpoint: "https://127.0.0.1:1"}
			tc.edit(&o)
			_, err := aks.NewWith(o, aks.Deps{Credential: &fakeCred{}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLifecycle: create → running → credentials → token → registry and
// AcrPull → delete, with a resource group that is missing (created, listed,
// deleted) and one that exists (used, never listed, never deleted).
func TestLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name          string
		existingGroup bool
	}{
		{"creates the resource group", false},
		{"uses the existing resource group", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			foreign := map[string]string{"owner": "someone-else"}
			if tc.existingGroup {
				f.Add(aksfake.ResourceGroups, "", group, location, foreign)
			}
			p, cred := newProvider(t, f, nil)
			ctx := context.Background()
			name := cloud.ClusterName(runID)

			c, err := p.Create(ctx, name, labels())
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			want := []string{"resource group " + group, "cluster " + name}
			if tc.existingGroup {
				want = want[1:]
			}
			// and the run's own cluster admin role assignment (Azure RBAC)
			if got := kinds(c.Created); len(got) != len(want)+1 || !slices.Equal(got[:len(want)], want) || !strings.HasPrefix(got[len(want)], "role assignment ") {
				t.Fatalf("Created = %v, want %v and the cluster admin role assignment", got, want)
			}
			if admins := assigned(f, aks.ClusterAdminRoleID); len(admins) != 1 || admins[0].Properties["principalId"] != runOID ||
				!strings.EqualFold(admins[0].Properties["scope"].(string), c.Created[len(c.Created)-1].ID[:strings.Index(c.Created[len(c.Created)-1].ID, "/providers/Microsoft.Authorization")]) {
				t.Fatalf("cluster admin assignments %+v, want one for the run's identity %s on the cluster", admins, runOID)
			}
			if c.Adopted {
				t.Error("Adopted = true for a created cluster")
			}
			if wantServer := "https://" + name + "-fake.hcp." + location + ".azmk8s.io:443"; c.Server != wantServer {
				t.Errorf("Server = %q, want %q", c.Server, wantServer)
			}
			block, _ := pem.Decode(c.CAData)
			if block == nil || string(block.Bytes) != string(f.Certificate().Raw) {
				t.Errorf("CAData is not the kubeconfig's CA: %q", c.CAData)
			}

			mc := f.Resources(aksfake.ManagedClusters)
			if len(mc) != 1 {
				t.Fatalf("fake has %d clusters, want 1", len(mc))
			}
			if mc[0].Properties["provisioningState"] != "Succeeded" {
				t.Errorf("cluster state %v, want Succeeded", mc[0].Properties["provisioningState"])
			}
			if !mapsEqual(mc[0].Tags, labels()) {
				t.Errorf("cluster tags %v, want %v", mc[0].Tags, labels())
			}
			pools, _ := mc[0].Properties["agentPoolProfiles"].([]any)
			if len(pools) != 1 {
				t.Fatalf("agent pools %v, want one", pools)
			}
			pool := pools[0].(map[string]any)
			if pool["enableAutoScaling"] != true || pool["minCount"] != float64(1) || pool["maxCount"] != float64(4) || pool["mode"] != "System" {
				t.Errorf("agent pool %v: want a System pool with enableAutoScaling 1..4", pool)
			}
			aad, _ := mc[0].Properties["aadProfile"].(map[string]any)
			if aad["managed"] != true || aad["enableAzureRBAC"] != true {
				t.Errorf("aadProfile %v: want managed AAD with Azure RBAC", aad)
			}
			var rgs []aksfake.Resource
			for _, g := range f.Resources(aksfake.ResourceGroups) {
				if g.ManagedBy == "" { // not the node resource group AKS made
					rgs = append(rgs, g)
				}
			}
			if len(rgs) != 1 {
				t.Fatalf("fake has %d resource groups, want 1", len(rgs))
			}
			wantRGTags := labels()
			if tc.existingGroup {
				wantRGTags = foreign
			}
			if !mapsEqual(rgs[0].Tags, wantRGTags) {
				t.Errorf("resource group tags %v, want %v", rgs[0].Tags, wantRGTags)
			}

			tok, err := p.Token(ctx, c)
			if err != nil || tok.Value != aksToken || !tok.Expiry.Equal(now.Add(time.Hour)) {
				t.Fatalf("Token = %+v, %v; want %q", tok, err, aksToken)
			}
			if !slices.Contains(cred.scopes, aks.AKSScope) {
				t.Errorf("scopes asked %v, want %s", cred.scopes, aks.AKSScope)
			}

			reg, err := p.EnsureRegistry(ctx, labels())
			if err != nil {
				t.Fatalf("EnsureRegistry: %v", err)
			}
			if got, want := kinds(reg.Created), []string{"registry " + aks.RegistryName(runID)}; len(got) != 2 || got[0] != want[0] || !strings.HasPrefix(got[1], "role assignment ") {
				t.Fatalf("registry Created = %v, want the registry and a role assignment", got)
			}
			ras := assigned(f, aks.AcrPullRoleID)
			if len(ras) != 1 {
				t.Fatalf("AcrPull role assignments %v, want one", ras)
			}
			kubelet := mc[0].Properties["identityProfile"].(map[string]any)["kubeletidentity"].(map[string]any)["objectId"]
			if ras[0].Properties["principalId"] != kubelet || !strings.HasSuffix(ras[0].Properties["roleDefinitionId"].(string), "/"+aks.AcrPullRoleID) ||
				!strings.HasSuffix(ras[0].Properties["scope"].(string), "/registries/"+aks.RegistryName(runID)) {
				t.Errorf("role assignment %v: want AcrPull on the registry for kubelet %v", ras[0].Properties, kubelet)
			}

			down(t, p, c.Created, reg.Created)
			left := f.Resources("")
			if tc.existingGroup {
				if len(left) != 1 || left[0].Type != aksfake.ResourceGroups || !mapsEqual(left[0].Tags, foreign) {
					t.Fatalf("after Down: %v, want only the existing resource group, untouched", left)
				}
			} else if len(left) != 0 {
				t.Fatalf("after Down: %v, want nothing", left)
			}
			// Deleting again: already gone is not an error.
			down(t, p, c.Created, reg.Created)
		})
	}
}

// TestCreateFailures: quota, permission, a failure halfway, an operation
// that never finishes. The error is a *cloud.Error of the right Kind;
// Created lists what exists and Down deletes it.
func TestCreateFailures(t *testing.T) {
	name := cloud.ClusterName(runID)
	for _, tc := range []struct {
		name       string
		inject     func(f *aksfake.Server)
		timeout    time.Duration
		kind       string
		permission string
		msg        string // in the error
		created    []string
	}{
		{
			name: "quota refused at the PUT",
			inject: func(f *aksfake.Server) {
				f.FailPut(aksfake.ManagedClusters, 400, "QuotaExceeded", "Provisioning of resource(s) for container service failed: exceeding quota of 4 Total Regional Cores")
			},
			kind: "quota", msg: "QuotaExceeded", created: []string{"resource group " + group},
		},
		{
			name: "quota in the operation",
			inject: func(f *aksfake.Server) {
				f.FailOperation(aksfake.ManagedClusters, "OperationNotAllowed", "Operation could not be completed as it results in exceeding approved standardDSv5Family Cores quota.")
			},
			kind: "quota", msg: "standardDSv5Family Cores quota", created: []string{"resource group " + group, "cluster " + name},
		},
		{
			name: "the agent pool fails after the cluster exists",
			inject: func(f *aksfake.Server) {
				f.FailOperation(aksfake.ManagedClusters, "ReconcileVMSSAgentPoolFailed", "Agent pool system: VMSS provisioning failed")
			},
			kind: "other", msg: "ReconcileVMSSAgentPoolFailed", created: []string{"resource group " + group, "cluster " + name},
		},
		{
			name:   "no right to create clusters",
			inject: func(f *aksfake.Server) { f.Deny("Microsoft.ContainerService/managedClusters/write") },
			kind:   "permission", permission: "Microsoft.ContainerService/managedClusters/write",
			msg: "AuthorizationFailed", created: []string{"resource group " + group},
		},
		{
			name:   "no right to create resource groups",
			inject: func(f *aksfake.Server) { f.Deny("Microsoft.Resources/subscriptions/resourceGroups/write") },
			kind:   "permission", permission: "Microsoft.Resources/subscriptions/resourceGroups/write",
			msg: "create resource group " + group,
		},
		{
			name: "credentials refused after the cluster is running",
			inject: func(f *aksfake.Server) {
				f.Deny("Microsoft.ContainerService/managedClusters/listClusterUserCredential/action")
			},
			kind: "permission", permission: "Microsoft.ContainerService/managedClusters/listClusterUserCredential/action",
			msg: "read credentials of cluster " + name, created: []string{"resource group " + group, "cluster " + name},
		},
		{
			name:    "the create never finishes",
			inject:  func(f *aksfake.Server) { f.NeverFinish(aksfake.ManagedClusters) },
			timeout: 30 * time.Millisecond,
			kind:    "timeout", msg: "create cluster " + name + ": timeout", created: []string{"resource group " + group, "cluster " + name},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			tc.inject(f)
			p, _ := newProvider(t, f, func(o *cloud.Options) {
				if tc.timeout > 0 {
					o.OperationTimeout = tc.timeout
				}
			})
			c, err := p.Create(context.Background(), name, labels())
			var ce *cloud.Error
			if !errors.As(err, &ce) {
				t.Fatalf("Create error %v (%T), want a *cloud.Error", err, err)
			}
			t.Logf("error: %v", err)
			if ce.Kind != tc.kind || ce.Permission != tc.permission || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q: kind %q permission %q, want kind %q permission %q and %q", err, ce.Kind, ce.Permission, tc.kind, tc.permission, tc.msg)
			}
			if got := kinds(c.Created); !slices.Equal(got, tc.created) {
				t.Fatalf("Created = %v, want %v", got, tc.created)
			}
			if got := len(unmanaged(f.Resources(""))); got != len(tc.created) {
				t.Fatalf("the fake holds %d resources, Created lists %d", got, len(tc.created))
			}
			f.Reset()
			// The teardown gets the default timeout: only the step under
			// test has the short one, so a loaded machine cannot fail it.
			pd, _ := newProvider(t, f, nil)
			down(t, pd, c.Created)
			if left := f.Resources(""); len(left) != 0 {
				t.Fatalf("after Down: %v, want nothing", left)
			}
		})
	}
}

func TestDeleteThatNeverFinishesNamesTheOperation(t *testing.T) {
	f := newFake(t)
	// The create gets the default timeout, the delete under test the short one.
	pc, _ := newProvider(t, f, nil)
	p, _ := newProvider(t, f, func(o *cloud.Options) { o.OperationTimeout = 30 * time.Millisecond })
	name := cloud.ClusterName(runID)
	c, err := pc.Create(context.Background(), name, labels())
	if err != nil {
		t.Fatal(err)
	}
	f.NeverFinish(aksfake.ManagedClusters)
	err = p.Delete(context.Background(), c.Created[1])
	var ce *cloud.Error
	if !errors.As(err, &ce) || ce.Kind != "timeout" || ce.Op != "delete cluster "+name {
		t.Fatalf("Delete error %v, want a timeout of %q", err, "delete cluster "+name)
	}
}

func TestAdopt(t *testing.T) {
	f := newFake(t)
	f.Add(aksfake.ResourceGroups, "", group, location, nil)
	f.Add(aksfake.ManagedClusters, group, "team-cluster", location, map[string]string{"team": "a"})
	p, _ := newProvider(t, f, nil)
	ctx := context.Background()
	reg, err := p.EnsureRegistry(ctx, labels())
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(reg.Created); !slices.Equal(got, []string{"registry " + aks.RegistryName(runID)}) {
		t.Fatalf("registry Created = %v before any cluster, want only the registry", got)
	}
	c, err := p.Adopt(ctx, "team-cluster")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Adopted || c.Server == "" || len(c.CAData) == 0 {
		t.Fatalf("Adopt = %+v, want an adopted cluster with server and CA", c)
	}
	for _, r := range c.Created {
		if r.Kind != aks.KindRoleAssignment {
			t.Fatalf("Adopt created %s; it may only grant AcrPull", r)
		}
	}
	if n := len(f.Resources(aksfake.RoleAssignments)); n != 1 {
		t.Fatalf("%d role assignments, want AcrPull for the adopted cluster's kubelet", n)
	}
	if _, err := p.Adopt(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("Adopt of a missing cluster: %v, want not found", err)
	}
}

// TestListForTheJanitor: List returns ours expired, ours unexpired and
// foreign resources of the whole subscription with their tags; deleting the
// expired ones of ours leaves the rest; a foreign resource group is never
// deleted.
func TestListForTheJanitor(t *testing.T) {
	f := newFake(t)
	expired := cloud.Labels("old-run", now.Add(-5*time.Hour), 3*time.Hour)
	fresh := cloud.Labels("new-run", now, 3*time.Hour)
	foreign := map[string]string{"env": "prod"}
	f.Add(aksfake.ResourceGroups, "", "rg-old", location, expired)
	f.Add(aksfake.ResourceGroups, "", "rg-new", location, fresh)
	f.Add(aksfake.ResourceGroups, "", "rg-prod", location, foreign)
	f.Add(aksfake.ManagedClusters, "rg-old", "scaleproof-old-run", location, expired)
	f.Add(aksfake.ManagedClusters, "rg-shared", "scaleproof-old-run-2", location, expired)
	f.Add(aksfake.ManagedClusters, "rg-new", "scaleproof-new-run", location, fresh)
	f.Add(aksfake.ManagedClusters, "rg-prod", "prod", location, foreign)
	f.Add(aksfake.Registries, "rg-prod", "prodacr", location, nil)
	f.Add(aksfake.Registries, "rg-shared", "scaleproololdrun", location, expired)
	p, _ := newProvider(t, f, nil)
	ctx := context.Background()

	all, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 9 {
		t.Fatalf("List = %v, want all 9", kinds(all))
	}
	var doomed, kept []string
	for _, r := range all {
		exp, ok := r.ExpiresAt()
		if r.Ours() && ok && exp.Before(now) {
			// clusters and registries first, then groups, as the janitor does
			if r.Kind == aks.KindResourceGroup {
				defer func(r cloud.Resource) {
					if err := p.Delete(ctx, r); err != nil {
						t.Errorf("Delete %s: %v", r, err)
					}
				}(r)
			} else if err := p.Delete(ctx, r); err != nil {
				t.Fatalf("Delete %s: %v", r, err)
			}
			doomed = append(doomed, r.String())
		} else {
			kept = append(kept, r.String())
		}
	}
	slices.Sort(doomed)
	wantDoomed := []string{"cluster scaleproof-old-run", "cluster scaleproof-old-run-2", "registry scaleproololdrun", "resource group rg-old"}
	if !slices.Equal(doomed, wantDoomed) {
		t.Fatalf("expired of ours = %v, want %v", doomed, wantDoomed)
	}
	for _, r := range all {
		if r.Name == "prod" && r.Labels["env"] != "prod" {
			t.Errorf("foreign cluster's tags lost: %v", r.Labels)
		}
	}
	// A foreign group is refused even when asked for.
	err = p.Delete(ctx, cloud.Resource{Kind: aks.KindResourceGroup, Name: "rg-prod", ID: "/subscriptions/" + sub + "/resourceGroups/rg-prod"})
	if err == nil || !strings.Contains(err.Error(), "did not create it") {
		t.Fatalf("Delete of a foreign resource group: %v, want a refusal", err)
	}
	t.Cleanup(func() {
		var left []string
		for _, r := range f.Resources("") {
			left = append(left, r.Name)
		}
		slices.Sort(left)
		if want := []string{"prod", "prodacr", "rg-new", "rg-prod", "scaleproof-new-run"}; !slices.Equal(left, want) {
			t.Errorf("left after the janitor: %v, want %v", left, want)
		}
	})
}

// TestRegistryPush: the registry's auth (ACR refresh token for the AAD
// token, Basic 00000000-...:<refresh token>) pushes an image to the
// in-memory registry, and nothing else does.
func TestRegistryPush(t *testing.T) {
	f := newFake(t)
	p, _ := newProvider(t, f, nil)
	reg, err := p.EnsureRegistry(context.Background(), labels())
	if err != nil {
		t.Fatal(err)
	}
	if want := f.Host() + "/" + aks.ImageRepository; reg.Repository != want {
		t.Fatalf("Repository = %q, want %q", reg.Repository, want)
	}
	if f.RefreshTokens() != 1 {
		t.Fatalf("%d refresh tokens issued, want 1", f.RefreshTokens())
	}
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(reg.Repository + ":test")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		auth authn.Authenticator
		ok   bool
	}{
		{"the exchanged refresh token", reg.Auth, true},
		{"anonymous", authn.Anonymous, false},
		{"the AAD token itself", &authn.Basic{Username: aks.ACRUsername, Password: armToken}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := remote.Write(ref, img, remote.WithAuth(tc.auth), remote.WithTransport(f.Client().Transport))
			if (err == nil) != tc.ok {
				t.Fatalf("push: %v, want ok %v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			got, err := remote.Image(ref, remote.WithAuth(tc.auth), remote.WithTransport(f.Client().Transport))
			if err != nil {
				t.Fatal(err)
			}
			gd, _ := got.Digest()
			wd, _ := img.Digest()
			if gd != wd {
				t.Fatalf("pulled %s, pushed %s", gd, wd)
			}
		})
	}
}

// TestActionsCoverTheCalls: every RBAC action the fake saw the provider
// need over a whole run is one Actions (and so docs/cloud.md) lists.
func TestActionsCoverTheCalls(t *testing.T) {
	f := newFake(t)
	p, _ := newProvider(t, f, nil)
	ctx := context.Background()
	c, err := p.Create(ctx, cloud.ClusterName(runID), labels())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := p.EnsureRegistry(ctx, labels())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.List(ctx); err != nil {
		t.Fatal(err)
	}
	down(t, p, c.Created, reg.Created)
	for _, a := range f.Actions() {
		if !slices.Contains(aks.Actions(), a) {
			t.Errorf("the run needed %s, which Actions does not list", a)
		}
	}
	plan := p.Plan(options(f))
	if got := kinds(plan.Resources); len(got) != 5 || !strings.Contains(got[1], cloud.ClusterName(runID)) || !strings.Contains(got[2], "Cluster Admin") {
		t.Errorf("Plan resources %v: want group, cluster, its cluster admin role assignment, registry, AcrPull role assignment", got)
	}
	if len(plan.Calls) != len(aks.Calls()) {
		t.Errorf("Plan has %d calls, Calls %d", len(plan.Calls), len(aks.Calls()))
	}
	for _, r := range f.Requests() {
		if strings.Contains(strings.ToLower(r), "kubelogin") {
			t.Errorf("request %s", r)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAcrPull: the role assignment when the kubelet identity is new to AAD
// (retried), when the caller may not assign roles (the error says how to
// grant it by hand), and when it is there already (not listed again).
func TestAcrPull(t *testing.T) {
	for _, tc := range []struct {
		name       string
		inject     func(f *aksfake.Server)
		wantErr    string
		permission string
		assigned   int
	}{
		{"granted", func(*aksfake.Server) {}, "", "", 1},
		{
			name: "the kubelet identity is not in AAD yet",
			inject: func(f *aksfake.Server) {
				f.FailPutTimes(aksfake.RoleAssignments, 2, 400, "PrincipalNotFound", "Principal 22222222 does not exist in the directory.")
			},
			assigned: 1,
		},
		{
			name:    "no right to assign roles",
			inject:  func(f *aksfake.Server) { f.Deny("Microsoft.Authorization/roleAssignments/write") },
			wantErr: "az role assignment create", permission: "Microsoft.Authorization/roleAssignments/write",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			p, _ := newProvider(t, f, nil)
			ctx := context.Background()
			c, err := p.Create(ctx, cloud.ClusterName(runID), labels())
			if err != nil {
				t.Fatal(err)
			}
			tc.inject(f)
			reg, err := p.EnsureRegistry(ctx, labels())
			if tc.wantErr != "" {
				var ce *cloud.Error
				if !errors.As(err, &ce) || ce.Permission != tc.permission || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("EnsureRegistry: %v, want %q naming %s", err, tc.wantErr, tc.permission)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if n := len(assigned(f, aks.AcrPullRoleID)); n != tc.assigned {
				t.Fatalf("%d AcrPull role assignments, want %d", n, tc.assigned)
			}
			if got := kinds(reg.Created); len(got) != 1+tc.assigned {
				t.Fatalf("registry Created = %v, want the registry and %d role assignment", got, tc.assigned)
			}
			again, err := p.EnsureRegistry(ctx, labels())
			if tc.wantErr == "" && (err != nil || len(again.Created) != 0) {
				t.Fatalf("EnsureRegistry again: Created %v, %v; want nothing new", kinds(again.Created), err)
			}
			f.Reset()
			down(t, p, c.Created, reg.Created)
			if left := f.Resources(""); len(left) != 0 {
				t.Fatalf("after Down: %v", left)
			}
		})
	}
}

// TestClusterEndpointHandoff: a fake that reports another API server (a
// kind cluster's, for the end-to-end run) is what the Cluster says.
func TestClusterEndpointHandoff(t *testing.T) {
	f := newFake(t)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("kind CA")})
	f.SetClusterEndpoint("127.0.0.1:6443", ca)
	p, _ := newProvider(t, f, nil)
	c, err := p.Create(context.Background(), cloud.ClusterName(runID), labels())
	if err != nil {
		t.Fatal(err)
	}
	if c.Server != "https://127.0.0.1:6443" || string(c.CAData) != string(ca) {
		t.Fatalf("Cluster server %q CA %q, want the kind cluster's", c.Server, c.CAData)
	}
}

// TestRegistryFirst: EnsureRegistry before Create makes the resource group
// and lists it; Create then grants AcrPull and lists it; Down in reverse
// leaves nothing.
func TestRegistryFirst(t *testing.T) {
	f := newFake(t)
	p, _ := newProvider(t, f, nil)
	ctx := context.Background()
	reg, err := p.EnsureRegistry(ctx, labels())
	if err != nil {
		t.Fatal(err)
	}
	name := cloud.ClusterName(runID)
	c, err := p.Create(ctx, name, labels())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(reg.Created), []string{"resource group " + group, "registry " + aks.RegistryName(runID)}; !slices.Equal(got, want) {
		t.Fatalf("registry Created = %v, want %v", got, want)
	}
	if got := kinds(c.Created); len(got) != 3 || got[0] != "cluster "+name || !strings.HasPrefix(got[1], "role assignment ") || !strings.HasPrefix(got[2], "role assignment ") {
		t.Fatalf("cluster Created = %v, want the cluster, the run's cluster admin and the AcrPull role assignments", got)
	}
	down(t, p, reg.Created, c.Created)
	if left := f.Resources(""); len(left) != 0 {
		t.Fatalf("after Down: %v", left)
	}
}

func TestRegistryName(t *testing.T) {
	for _, tc := range []struct{ runID, want string }{
		{"20261202-0310", "scaleproof202612020310"},
		{"Run_A.b", "scaleproofrunab"},
		{strings.Repeat("x", 80), "scaleproof" + strings.Repeat("x", 40)},
		{"", "scaleproof"},
	} {
		if got := aks.RegistryName(tc.runID); got != tc.want || len(got) < 5 || len(got) > 50 {
			t.Errorf("RegistryName(%q) = %q, want %q (5..50 letters and digits)", tc.runID, got, tc.want)
		}
	}
}

// TestReusedGroupKeepsTheLiveRun: a run that reuses a scaleproof resource
// group left by an earlier run moves the group's expiry to its own, so the
// janitor, run during the live run, deletes nothing of it (the group, and
// the live cluster with it). A foreign group's tags are left as they are.
func TestReusedGroupKeepsTheLiveRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tags   map[string]string
		extend bool
	}{
		{"a leftover of ours, expired", cloud.Labels("old-run", now.Add(-5*time.Hour), 3*time.Hour), true},
		{"ours, later than this run", cloud.Labels("long-run", now.Add(time.Hour), 3*time.Hour), false},
		{"a foreign group", map[string]string{"env": "prod"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.Add(aksfake.ResourceGroups, "", group, location, tc.tags)
			p, _ := newProvider(t, f, nil)
			ctx := context.Background()
			c, err := p.Create(ctx, cloud.ClusterName(runID), labels())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range c.Created {
				if r.Kind == aks.KindResourceGroup {
					t.Errorf("the existing group is listed as created (Down would delete it): %s", r)
				}
			}
			// The janitor, an hour into the live run.
			res, err := janitor.Run(ctx, janitor.Config{Provider: p, Now: func() time.Time { return now.Add(time.Hour) }})
			if err != nil {
				t.Fatal(err)
			}
			var live []string
			for _, r := range f.Resources("") {
				live = append(live, r.Name)
			}
			if !slices.Contains(live, group) || !slices.Contains(live, cloud.ClusterName(runID)) {
				t.Fatalf("the janitor deleted the live run's group or cluster (deleted %d): left %v", res.Deleted, live)
			}
			var got map[string]string
			for _, r := range f.Resources("") {
				if r.Name == group {
					got = r.Tags
				}
			}
			want := tc.tags[cloud.LabelExpiresAt]
			if tc.extend {
				want = labels()[cloud.LabelExpiresAt]
			}
			if got[cloud.LabelExpiresAt] != want {
				t.Errorf("group expiry %q, want %q (tags %v)", got[cloud.LabelExpiresAt], want, got)
			}
			if tc.tags["env"] != "" && (got["env"] != "prod" || got[cloud.LabelManagedBy] != "") {
				t.Errorf("a foreign group's tags changed: %v", got)
			}
		})
	}
}

// assigned is the fake's role assignments of the built-in role roleID.
func assigned(f *aksfake.Server, roleID string) []aksfake.Resource {
	var out []aksfake.Resource
	for _, r := range f.Resources(aksfake.RoleAssignments) {
		if def, _ := r.Properties["roleDefinitionId"].(string); strings.HasSuffix(def, "/"+roleID) {
			out = append(out, r)
		}
	}
	return out
}

// unmanaged is rs without the node resource groups AKS manages.
func unmanaged(rs []aksfake.Resource) []aksfake.Resource {
	var out []aksfake.Resource
	for _, r := range rs {
		if r.ManagedBy == "" {
			out = append(out, r)
		}
	}
	return out
}

// TestNodeResourceGroupIsNotOurs: AKS makes a node resource group for each
// cluster (managedBy the cluster) and gives it the cluster's tags, so it
// carries the run's labels; List leaves it out (the cluster's delete takes
// it, and the janitor must not delete it under a live cluster), and the
// cluster's Down leaves nothing.
func TestNodeResourceGroupIsNotOurs(t *testing.T) {
	f := newFake(t)
	p, _ := newProvider(t, f, nil)
	ctx := context.Background()
	name := cloud.ClusterName(runID)
	c, err := p.Create(ctx, name, labels())
	if err != nil {
		t.Fatal(err)
	}
	node := "MC_" + group + "_" + name + "_" + location
	var held bool
	for _, g := range f.Resources(aksfake.ResourceGroups) {
		if g.Name == node && g.ManagedBy != "" && (cloud.Resource{Labels: g.Tags}).Ours() {
			held = true
		}
	}
	if !held {
		t.Fatalf("the fake made no node resource group %s with the run's labels: %v", node, f.Resources(aksfake.ResourceGroups))
	}
	all, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		if r.Name == node {
			t.Errorf("List returned the node resource group %s, which AKS manages", r)
		}
	}
	down(t, p, c.Created)
	if left := f.Resources(""); len(left) != 0 {
		t.Errorf("after Down: %v", left)
	}
}
