// Package gke is the GKE cloud.Provider: a cluster with one node pool
// whose autoscaling (NodeMin..NodeMax) the GKE cluster autoscaler grows
// when the console asks for more worker pods than fit, made with the
// Kubernetes Engine API (cloud.google.com/go/container/apiv1, the REST
// client); an Artifact Registry Docker repository for the image
// (cloud.google.com/go/artifactregistry/apiv1, REST) pushed with the
// "oauth2accesstoken" user and an access token; and the cluster's bearer
// token from the same Application Default Credentials (golang.org/x/oauth2/
// google), in-process, never gke-gcloud-auth-plugin.
//
// Credentials are Application Default Credentials: $GOOGLE_APPLICATION_CREDENTIALS
// (a service account key, an authorized user, or a workload identity
// federation config, as the nightly run's OIDC federation makes), else
// gcloud's, else the metadata server. Nothing is contacted until the first
// call: New and Plan need no credentials.
//
// Every call is tested against cloud/gke/gkefake, a local fake of the two
// REST APIs and the OAuth token endpoint; never against Google.
//
// One verb a file: create.go, adopt.go, token.go, registry.go, list.go,
// delete.go; wait.go polls operations, errors.go turns Google's errors into
// *cloud.Error.
package gke

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	artifactregistry "cloud.google.com/go/artifactregistry/apiv1"
	container "cloud.google.com/go/container/apiv1"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"

	"github.com/scaleproof/scaleproof/cloud"
)

// The node pool's default machine type (cloud.Options.WithDefaults fills
// the other zero values), the names and the scopes.
const (
	DefaultMachineType = "e2-standard-4"
	// NodePoolName is the one node pool of a created cluster.
	NodePoolName = "scaleproof"
	// ImageName is the image's name inside the repository.
	ImageName = "scaleproof-ref"
	// Scope is the OAuth scope of every token (the GKE API server accepts it).
	Scope = "https://www.googleapis.com/auth/cloud-platform"
	// UserinfoEmailScope is asked beside Scope for the cluster's bearer
	// token, as gke-gcloud-auth-plugin does
	// (kubernetes/cloud-provider-gcp, cmd/gke-gcloud-auth-plugin: scopes
	// cloud-platform and userinfo.email): GKE identifies the caller by the
	// token's email, which a service account's token carries only with
	// this scope (GKE, "Authenticate to the Kubernetes API server").
	UserinfoEmailScope = "https://www.googleapis.com/auth/userinfo.email"
)

// Provider is GKE in one project and location.
type Provider struct {
	o   cloud.Options
	log *slog.Logger

	mu sync.Mutex
	ts oauth2.TokenSource
	cm *container.ClusterManagerClient
	ar *artifactregistry.Client
	tr *http.Transport
	// hctx carries the transport for the token endpoint (oauth2.HTTPClient)
	hctx context.Context
	now  func() time.Time
}

var _ cloud.Provider = (*Provider)(nil)

// New checks the options GKE needs (--project, --location) and fills the
// defaults; nothing is contacted.
func New(o cloud.Options) (*Provider, error) {
	o = o.WithDefaults(DefaultMachineType)
	var errs []error
	if o.Project == "" {
		errs = append(errs, errors.New("--project is required for gke (the Google Cloud project the cluster and repository go in)"))
	}
	if o.Location == "" {
		errs = append(errs, errors.New("--location is required for gke (a region such as us-central1, or a zone such as us-central1-a)"))
	}
	if o.NodeMin < 0 || o.NodeMax < o.NodeMin || o.NodeMax == 0 {
		errs = append(errs, errors.New("node pool bounds: want 0 <= min <= max and max >= 1"))
	}
	for _, e := range []struct{ flag, v string }{{"--cloud-endpoint", o.Endpoint}, {"--cloud-registry-endpoint", o.RegistryEndpoint}} {
		if e.v == "" {
			continue
		}
		if u, err := url.Parse(e.v); err != nil || u.Host == "" {
			errs = append(errs, errors.New(e.flag+" "+e.v+": want a URL such as http://127.0.0.1:8080"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Provider{o: o, log: o.Log, now: o.Now}, nil
}

// Name is "GKE".
func (p *Provider) Name() string { return "GKE" }

// parent is projects/P/locations/L.
func (p *Provider) parent() string {
	return "projects/" + p.o.Project + "/locations/" + p.o.Location
}

// region is the location's region (a zone's region for Artifact Registry,
// which is regional).
func (p *Provider) region() string {
	l := p.o.Location
	if i := strings.LastIndex(l, "-"); i > 0 && strings.Count(l, "-") == 2 && len(l)-i == 2 {
		return l[:i] // us-central1-a → us-central1
	}
	return l
}

// clients makes the token source and the two API clients on first use.
func (p *Provider) clients(ctx context.Context) (oauth2.TokenSource, *container.ClusterManagerClient, *artifactregistry.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cm != nil {
		return p.ts, p.cm, p.ar, nil
	}
	// one transport for the token endpoint and both APIs, so Close can end
	// its idle connections
	tr := http.DefaultTransport.(*http.Transport).Clone()
	hctx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, &http.Client{Transport: tr})
	creds, err := google.FindDefaultCredentials(hctx, Scope)
	if err != nil {
		return nil, nil, nil, &cloud.Error{Op: "find Google credentials", Kind: "permission",
			Msg: "no Application Default Credentials: set GOOGLE_APPLICATION_CREDENTIALS or run `gcloud auth application-default login`", Err: err}
	}
	ts := oauth2.ReuseTokenSource(nil, creds.TokenSource)
	opts := []option.ClientOption{option.WithHTTPClient(&http.Client{Transport: &oauth2.Transport{Source: ts, Base: tr}})}
	if p.o.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(p.o.Endpoint))
	}
	// the clients outlive this call's ctx: they are closed with the provider's process
	cm, err := container.NewClusterManagerRESTClient(hctx, opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	ar, err := artifactregistry.NewRESTClient(hctx, opts...)
	if err != nil {
		cm.Close()
		return nil, nil, nil, err
	}
	p.ts, p.cm, p.ar, p.tr, p.hctx = ts, cm, ar, tr, hctx
	return ts, cm, ar, nil
}

// Close closes the API clients and their idle connections; the next call
// makes new ones.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cm == nil {
		return nil
	}
	err := errors.Join(p.cm.Close(), p.ar.Close())
	p.tr.CloseIdleConnections()
	p.ts, p.cm, p.ar, p.tr = nil, nil, nil, nil
	return err
}

// Calls is every API call the provider makes.
func Calls() []cloud.Call {
	return []cloud.Call{
		{Service: "oauth2.googleapis.com", Method: "token", What: "an access token from Application Default Credentials: scope cloud-platform for the API calls and the registry, cloud-platform and userinfo.email for the cluster's bearer token"},
		{Service: "container.googleapis.com", Method: "projects.locations.clusters.create", What: "the cluster with its one autoscaling node pool, labelled"},
		{Service: "container.googleapis.com", Method: "projects.locations.operations.get", What: "poll the create and delete operations until DONE"},
		{Service: "container.googleapis.com", Method: "projects.locations.clusters.get", What: "the cluster's endpoint and CA (after create; adopt)"},
		{Service: "container.googleapis.com", Method: "projects.locations.clusters.list", What: "janitor: every cluster in the location with its labels and node pools"},
		{Service: "container.googleapis.com", Method: "projects.locations.clusters.delete", What: "Down and janitor: the cluster (its node pool with it)"},
		{Service: "container.googleapis.com", Method: "projects.locations.clusters.nodePools.delete", What: "janitor: a node pool of ours left without its cluster"},
		{Service: "artifactregistry.googleapis.com", Method: "projects.locations.repositories.get", What: "is the run's repository there"},
		{Service: "artifactregistry.googleapis.com", Method: "projects.locations.repositories.create", What: "the run's Docker repository, labelled"},
		{Service: "artifactregistry.googleapis.com", Method: "projects.locations.operations.get", What: "poll the repository's create and delete operations"},
		{Service: "artifactregistry.googleapis.com", Method: "projects.locations.repositories.list", What: "janitor: every repository in the region with its labels"},
		{Service: "artifactregistry.googleapis.com", Method: "projects.locations.repositories.delete", What: "Down and janitor: the run's repository and its images"},
		{Service: "<region>-docker.pkg.dev", Method: "docker registry v2 push", What: "the scaleproof-ref image (user oauth2accesstoken, the access token)"},
	}
}

// Plan lists the cluster, its node pool and the repository Up creates (for
// run id o.RunID, or the provider's), and the calls.
func (p *Provider) Plan(o cloud.Options) cloud.Plan {
	if o.RunID == "" {
		o.RunID = p.o.RunID
	}
	var res []cloud.Resource
	if o.Cluster == "" {
		name := cloud.ClusterName(o.RunID)
		res = append(res,
			cloud.Resource{Kind: "cluster", Name: name, ID: p.parent() + "/clusters/" + name},
			cloud.Resource{Kind: "node pool", Name: NodePoolName, ID: p.parent() + "/clusters/" + name + "/nodePools/" + NodePoolName,
				Labels: map[string]string{"machine-type": p.o.MachineType, "autoscaling": strconv.Itoa(p.o.NodeMin) + ".." + strconv.Itoa(p.o.NodeMax) + " nodes"}})
	}
	repo := repoName(cloud.RunIDLabelValue(o.RunID))
	res = append(res, cloud.Resource{Kind: "repository", Name: repo, ID: "projects/" + p.o.Project + "/locations/" + p.region() + "/repositories/" + repo})
	return cloud.Plan{Resources: res, Calls: Calls()}
}
