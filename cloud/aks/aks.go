package aks

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/authorization/armauthorization/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerregistry/armcontainerregistry"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"

	"github.com/scaleproof/scaleproof/cloud"
)

// The default machine type of a run's cluster (cloud.Options.WithDefaults
// fills the other zero values), and names.
const (
	DefaultMachineType = "Standard_D2s_v5" // 2 vCPU, 8 GiB
	// SystemPoolName is the one agent pool's name (lower-case letters and
	// digits, at most 12 for Linux pools).
	SystemPoolName = "system"
	// ImageRepository is the repository path in the registry.
	ImageRepository = "scaleproof-ref"
)

// AKSScope is the scope of an AAD token for the API server of any
// AAD-integrated AKS cluster (the AKS AAD server application's id).
const AKSScope = "6dae42f8-4368-4678-94ff-3960e28e3630/.default"

// Provider is AKS through the Azure SDK for Go. Create and EnsureRegistry
// remember the cluster's kubelet identity and the registry so that whichever
// comes second grants AcrPull; a Provider is one run's and is safe for
// concurrent use.
type Provider struct {
	o         cloud.Options
	cred      azcore.TokenCredential
	transport policy.Transporter // nil: the SDK's default
	armScope  string             // the ARM token scope (the ACR exchange uses an ARM token)
	log       *slog.Logger
	out       io.Writer

	clusters   *armcontainerservice.ManagedClustersClient
	groups     *armresources.ResourceGroupsClient
	registries *armcontainerregistry.RegistriesClient
	roles      *armauthorization.RoleAssignmentsClient

	mu sync.Mutex
	// kubeletObjectID is the object id of the kubelet identity of the
	// cluster Create or Adopt returned ("" before).
	kubeletObjectID string
	// registryID is the id of the registry EnsureRegistry returned.
	registryID string
	// groupCreated: this Provider created Options.ResourceGroup.
	groupCreated bool
}

var _ cloud.Provider = (*Provider)(nil)

// Deps are what New takes from the environment and tests replace.
type Deps struct {
	// Credential makes AAD tokens; nil is, in a GitHub Actions job with an
	// ID token, a client assertion credential that asks GitHub for a fresh
	// ID token per assertion (githuboidc.go), and elsewhere azidentity's
	// DefaultAzureCredential.
	Credential azcore.TokenCredential
	// Transport sends every HTTP request (ARM and the ACR token exchange);
	// nil is the SDK's default. Tests pass the fake's TLS client.
	Transport policy.Transporter
}

// New is the AKS provider of o with DefaultAzureCredential. It needs
// --subscription, --resource-group and --location.
func New(o cloud.Options) (*Provider, error) { return NewWith(o, Deps{}) }

// NewWith is New with d's credential and transport.
func NewWith(o cloud.Options, d Deps) (*Provider, error) {
	for _, f := range []struct{ v, flag string }{
		{o.Subscription, "--subscription"},
		{o.ResourceGroup, "--resource-group"},
		{o.Location, "--location"},
	} {
		if strings.TrimSpace(f.v) == "" {
			return nil, fmt.Errorf("%s is required for aks", f.flag)
		}
	}
	o = o.WithDefaults(DefaultMachineType)
	if o.Endpoint == "" && o.PollInterval < time.Second {
		o.PollInterval = time.Second // the SDK's floor against Azure
	}
	if o.NodeMin < 0 || o.NodeMax < o.NodeMin || o.NodeMax < 1 {
		return nil, fmt.Errorf("aks: node pool bounds %d..%d: want 0 <= min <= max, max >= 1", o.NodeMin, o.NodeMax)
	}
	p := &Provider{o: o, cred: d.Credential, transport: d.Transport, log: o.Log, out: o.Out}

	cfg := azcloud.AzurePublic
	if o.Endpoint != "" {
		ep := strings.TrimRight(o.Endpoint, "/")
		if !strings.HasPrefix(ep, "https://") {
			// The SDK sends bearer tokens over TLS only.
			return nil, fmt.Errorf("aks: endpoint %q: want an https:// URL", o.Endpoint)
		}
		cfg = azcloud.Configuration{
			ActiveDirectoryAuthorityHost: azcloud.AzurePublic.ActiveDirectoryAuthorityHost,
			Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{
				azcloud.ResourceManager: {Audience: ep, Endpoint: ep},
			},
		}
	}
	p.armScope = cfg.Services[azcloud.ResourceManager].Audience + "/.default"

	if p.cred == nil {
		// In GitHub Actions: a fresh GitHub ID token per assertion
		// (githuboidc.go); elsewhere azidentity's default chain.
		if c, ok, err := gitHubActionsCredential(nil); err != nil {
			return nil, err
		} else if ok {
			p.cred = c
		}
	}
	if p.cred == nil {
		var opts *azidentity.DefaultAzureCredentialOptions
		if o.Endpoint != "" {
			// A local fake of ARM (tests): its Entra is at
			// AZURE_AUTHORITY_HOST, which Microsoft's instance discovery
			// (login.microsoftonline.com) does not know.
			opts = &azidentity.DefaultAzureCredentialOptions{DisableInstanceDiscovery: true}
		}
		c, err := azidentity.NewDefaultAzureCredential(opts)
		if err != nil {
			return nil, fmt.Errorf("aks: Azure credential (DefaultAzureCredential: environment, workload identity, managed identity or az login): %w", err)
		}
		p.cred = c
	}
	co := &arm.ClientOptions{ClientOptions: policy.ClientOptions{Cloud: cfg}}
	if d.Transport != nil {
		co.Transport = d.Transport
	}
	var err error
	if p.clusters, err = armcontainerservice.NewManagedClustersClient(o.Subscription, p.cred, co); err != nil {
		return nil, fmt.Errorf("aks: managed clusters client: %w", err)
	}
	if p.groups, err = armresources.NewResourceGroupsClient(o.Subscription, p.cred, co); err != nil {
		return nil, fmt.Errorf("aks: resource groups client: %w", err)
	}
	if p.registries, err = armcontainerregistry.NewRegistriesClient(o.Subscription, p.cred, co); err != nil {
		return nil, fmt.Errorf("aks: registries client: %w", err)
	}
	if p.roles, err = armauthorization.NewRoleAssignmentsClient(o.Subscription, p.cred, co); err != nil {
		return nil, fmt.Errorf("aks: role assignments client: %w", err)
	}
	return p, nil
}

// Name is the Platform column.
func (p *Provider) Name() string { return "AKS" }

func (p *Provider) progress(format string, args ...any) {
	fmt.Fprintf(p.out, "aks: "+format+"\n", args...)
}

// httpDo sends req through the injected transport, or a client with a
// 60 s timeout.
func (p *Provider) httpDo(req *http.Request) (*http.Response, error) {
	if p.transport != nil {
		return p.transport.Do(req)
	}
	c := &http.Client{Timeout: 60 * time.Second}
	return c.Do(req)
}

// tags is labels as Azure tags.
func tags(labels map[string]string) map[string]*string {
	t := make(map[string]*string, len(labels))
	for k, v := range labels {
		t[k] = to(v)
	}
	return t
}

// labelsOf is Azure tags as labels.
func labelsOf(t map[string]*string) map[string]string {
	l := make(map[string]string, len(t))
	for k, v := range t {
		if v != nil {
			l[k] = *v
		}
	}
	return l
}

func to[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
