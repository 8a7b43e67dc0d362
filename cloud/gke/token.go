package gke

import (
	"context"
	"errors"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/scaleproof/scaleproof/cloud"
)

// Token is a new OAuth2 access token of the Application Default
// Credentials (scopes cloud-platform and userinfo.email), which the GKE API server takes as a
// bearer token (what gke-gcloud-auth-plugin hands kubectl), made
// in-process. It is fetched afresh each time, not from the API clients'
// cache (which renews only 10 s before expiry): the cloud platform asks
// minutes before the old one expires.
func (p *Provider) Token(ctx context.Context, c cloud.Cluster) (cloud.Token, error) {
	if _, _, _, err := p.clients(ctx); err != nil {
		return cloud.Token{}, err
	}
	p.mu.Lock()
	hctx := p.hctx
	p.mu.Unlock()
	creds, err := google.FindDefaultCredentials(hctx, Scope, UserinfoEmailScope)
	if err != nil {
		return cloud.Token{}, tokenErr("token for cluster "+c.Name, err)
	}
	t, err := creds.TokenSource.Token()
	if err != nil {
		return cloud.Token{}, tokenErr("token for cluster "+c.Name, err)
	}
	return cloud.Token{Value: t.AccessToken, Expiry: t.Expiry}, nil
}

// tokenErr names the token endpoint's refusal (an *oauth2.RetrieveError)
// as a permission error.
func tokenErr(op string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
		msg := re.ErrorDescription
		if msg == "" {
			msg = re.ErrorCode
		}
		if msg == "" {
			msg = string(re.Body)
		}
		return &cloud.Error{Op: op, Kind: "permission", Msg: "the OAuth token endpoint refused the credentials: " + msg, Err: err}
	}
	return cloudErr(op, err)
}
