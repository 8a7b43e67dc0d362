package gke

import (
	"context"
	"net/url"
	"strings"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"github.com/google/go-containerregistry/pkg/authn"
	"golang.org/x/oauth2"

	"github.com/scaleproof/scaleproof/cloud"
)

// repoName is the run's Artifact Registry repository id: "scaleproof-" and
// the run id's label value, '_' made '-', at most 63 characters, ending in
// a letter or digit.
func repoName(runLabel string) string {
	s := strings.ReplaceAll("scaleproof-"+runLabel, "_", "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.TrimRight(s, "-")
}

// host is the registry host: <region>-docker.pkg.dev, or RegistryEndpoint's.
func (p *Provider) host() string {
	if p.o.RegistryEndpoint != "" {
		if u, err := url.Parse(p.o.RegistryEndpoint); err == nil && u.Host != "" {
			return u.Host
		}
	}
	return p.region() + "-docker.pkg.dev"
}

// EnsureRegistry finds the run's Docker repository in the location's region
// or creates it, labelled, and returns it with its auth: the user
// oauth2accesstoken and a fresh access token on every request.
func (p *Provider) EnsureRegistry(ctx context.Context, labels map[string]string) (cloud.Registry, error) {
	ts, _, ar, err := p.clients(ctx)
	if err != nil {
		return cloud.Registry{}, err
	}
	id := repoName(labels[cloud.LabelRunID])
	parent := "projects/" + p.o.Project + "/locations/" + p.region()
	full := parent + "/repositories/" + id
	reg := cloud.Registry{Repository: p.host() + "/" + p.o.Project + "/" + id + "/" + ImageName, Auth: TokenAuth{TS: ts}}
	_, err = ar.GetRepository(ctx, &artifactregistrypb.GetRepositoryRequest{Name: full})
	if err == nil {
		return reg, nil // there already (a run id used twice): not ours to delete
	}
	if !isNotFound(err) {
		return reg, cloudErr("read repository "+full, err)
	}
	op := "create repository " + id
	cr, err := ar.CreateRepository(ctx, &artifactregistrypb.CreateRepositoryRequest{
		Parent: parent, RepositoryId: id,
		Repository: &artifactregistrypb.Repository{Format: artifactregistrypb.Repository_DOCKER, Labels: labels,
			Description: "scaleproof run " + labels[cloud.LabelRunID] + " (deleted with the run, or by the janitor after its expiry)"},
	})
	if err != nil {
		return reg, cloudErr(op, err)
	}
	reg.Created = []cloud.Resource{{Kind: "repository", Name: id, ID: full, Labels: labels}}
	if err := p.pollLRO(ctx, op, cr.Done, func(ctx context.Context) error { _, err := cr.Poll(ctx); return err }); err != nil {
		return reg, err
	}
	return reg, nil
}

// TokenAuth is Artifact Registry's Docker auth: the user oauth2accesstoken
// and an access token of TS as the password, fresh on each request.
type TokenAuth struct{ TS oauth2.TokenSource }

// Authorization returns the basic auth config.
func (a TokenAuth) Authorization() (*authn.AuthConfig, error) {
	t, err := a.TS.Token()
	if err != nil {
		return nil, tokenErr("token for the registry", err)
	}
	return &authn.AuthConfig{Username: "oauth2accesstoken", Password: t.AccessToken}, nil
}

var _ authn.Authenticator = TokenAuth{}
