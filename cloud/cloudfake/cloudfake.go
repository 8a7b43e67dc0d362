// Package cloudfake is an in-memory cloud.Provider for the tests of what is
// built on the interface (the cloud platform, the janitor, the command):
// resources with labels, a call log, and failures on demand. Each cloud's
// own fake of its REST API is in cloud/<name>/<name>fake.
package cloudfake

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/scaleproof/scaleproof/cloud"
)

// Provider is the fake. Set its fields before use; read them with its
// methods while it is in use.
type Provider struct {
	// Server, CAData are what Create and Adopt return for the cluster.
	Server string
	CAData []byte
	// Repository is the Registry's repository (host/path); Auth its auth.
	Repository string
	Auth       authn.Authenticator
	// TokenTTL is each token's lifetime (0: never expires); Now the clock.
	TokenTTL time.Duration
	Now      func() time.Time
	// FailCreate fails Create after the cluster exists (it is in Created);
	// FailRegistry fails EnsureRegistry; FailToken fails Token; FailDelete
	// fails the Delete of the resources named by String ("cluster x").
	FailCreate, FailRegistry, FailToken error
	FailDelete                          map[string]error
	// AdoptClaims makes Adopt (wrongly) list the cluster in Created: the
	// platform must still never delete an adopted cluster.
	AdoptClaims bool

	mu     sync.Mutex
	res    []cloud.Resource
	calls  []string
	tokens int
}

var _ cloud.Provider = (*Provider)(nil)

// Name is "Fake".
func (p *Provider) Name() string { return "Fake" }

// Plan lists a cluster and a repository.
func (p *Provider) Plan(o cloud.Options) cloud.Plan {
	return cloud.Plan{
		Resources: []cloud.Resource{{Kind: "cluster", Name: cloud.ClusterName(o.RunID)}, {Kind: "repository", Name: "scaleproof"}},
		Calls:     []cloud.Call{{Service: "fake", Method: "clusters.create", What: "the cluster"}},
	}
}

// Add puts resources into the fake cloud (what List returns).
func (p *Provider) Add(rs ...cloud.Resource) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.res = append(p.res, rs...)
}

// Resources is what exists now.
func (p *Provider) Resources() []cloud.Resource {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.res)
}

// Calls is every call so far ("create scaleproof-x", "delete cluster x").
func (p *Provider) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// Tokens is how many tokens were made.
func (p *Provider) Tokens() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokens
}

func (p *Provider) call(s string) {
	p.mu.Lock()
	p.calls = append(p.calls, s)
	p.mu.Unlock()
}

// Create adds a cluster and its node pool, labelled; with FailCreate both
// exist and are in Created, and the error is returned.
func (p *Provider) Create(ctx context.Context, name string, labels map[string]string) (cloud.Cluster, error) {
	p.call("create " + name)
	if err := ctx.Err(); err != nil {
		return cloud.Cluster{}, err
	}
	cl := cloud.Resource{Kind: "cluster", Name: name, ID: "clusters/" + name, Labels: labels}
	np := cloud.Resource{Kind: "node pool", Name: "scaleproof", ID: "clusters/" + name + "/nodePools/scaleproof", Labels: labels}
	p.Add(cl, np)
	c := cloud.Cluster{Name: name, Server: p.Server, CAData: p.CAData, Created: []cloud.Resource{cl, np}}
	return c, p.FailCreate
}

// Adopt returns the named cluster, which must exist.
func (p *Provider) Adopt(_ context.Context, name string) (cloud.Cluster, error) {
	p.call("adopt " + name)
	for _, r := range p.Resources() {
		if r.Kind == "cluster" && r.Name == name {
			c := cloud.Cluster{Name: name, Server: p.Server, CAData: p.CAData, Adopted: true}
			if p.AdoptClaims {
				c.Adopted, c.Created = false, []cloud.Resource{r}
			}
			return c, nil
		}
	}
	return cloud.Cluster{}, &cloud.Error{Op: "adopt cluster " + name, Kind: "not found", Msg: "no such cluster"}
}

// Token returns "token-N", expiring TokenTTL from Now.
func (p *Provider) Token(context.Context, cloud.Cluster) (cloud.Token, error) {
	p.call("token")
	if p.FailToken != nil {
		return cloud.Token{}, p.FailToken
	}
	p.mu.Lock()
	p.tokens++
	n := p.tokens
	p.mu.Unlock()
	t := cloud.Token{Value: fmt.Sprintf("token-%d", n)}
	if p.TokenTTL > 0 {
		now := time.Now
		if p.Now != nil {
			now = p.Now
		}
		t.Expiry = now().Add(p.TokenTTL)
	}
	return t, nil
}

// EnsureRegistry adds a labelled repository (Created lists it).
func (p *Provider) EnsureRegistry(_ context.Context, labels map[string]string) (cloud.Registry, error) {
	p.call("ensure registry")
	if p.FailRegistry != nil {
		return cloud.Registry{}, p.FailRegistry
	}
	r := cloud.Resource{Kind: "repository", Name: "scaleproof-" + labels[cloud.LabelRunID], ID: "repositories/scaleproof", Labels: labels}
	p.Add(r)
	return cloud.Registry{Repository: p.Repository, Auth: p.Auth, Created: []cloud.Resource{r}}, nil
}

// List returns every resource.
func (p *Provider) List(context.Context) ([]cloud.Resource, error) {
	p.call("list")
	return p.Resources(), nil
}

// Delete removes r (and a cluster's node pools); an absent r is no error.
func (p *Provider) Delete(_ context.Context, r cloud.Resource) error {
	p.call("delete " + r.String())
	if err := p.FailDelete[r.String()]; err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.res = slices.DeleteFunc(p.res, func(x cloud.Resource) bool {
		if x.Kind == r.Kind && x.Name == r.Name {
			return true
		}
		// a cluster's node pools go with it
		return r.Kind == "cluster" && x.Kind == "node pool" && x.ID == r.ID+"/nodePools/"+x.Name
	})
	return nil
}
