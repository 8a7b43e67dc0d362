package gke

import (
	"context"
	"errors"

	"golang.org/x/oauth2"

	"github.com/scaleproof/scaleproof/cloud"
)

// Token is an OAuth2 access token of the Application Default Credentials
// (scope cloud-platform), which the GKE API server takes as a bearer token
// (what gke-gcloud-auth-plugin hands kubectl), made in-process.
func (p *Provider) Token(ctx context.Context, c cloud.Cluster) (cloud.Token, error) {
	ts, _, _, err := p.clients(ctx)
	if err != nil {
		return cloud.Token{}, err
	}
	t, err := ts.Token()
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
