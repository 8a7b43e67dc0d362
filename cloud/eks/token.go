package eks

import (
	"context"
	"encoding/base64"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/scaleproof/scaleproof/cloud"
)

// The EKS bearer token (the format aws-iam-authenticator defines and the
// EKS API server checks).
const (
	tokenPrefix = "k8s-aws-v1."
	// clusterIDHeader is the signed header naming the cluster.
	clusterIDHeader = "x-k8s-aws-id"
	// presignExpires is the presigned URL's X-Amz-Expires, as
	// aws-iam-authenticator sets it; the API server accepts the token for
	// tokenLifetime after its X-Amz-Date.
	presignExpires = "60"
	tokenLifetime  = 15 * time.Minute
	// tokenMargin is taken off the lifetime so a token is renewed before
	// the server refuses it.
	tokenMargin = time.Minute
)

// Token makes the EKS bearer token for c in-process: an
// sts:GetCallerIdentity request presigned (SigV4, no request is sent) with
// the signed header x-k8s-aws-id: <cluster> and X-Amz-Expires, then
// "k8s-aws-v1." + base64url (no padding) of the URL. It expires 15 minutes
// from now less a minute's margin. Never aws-iam-authenticator.
func (p *Provider) Token(ctx context.Context, c cloud.Cluster) (cloud.Token, error) {
	op := "make a token for cluster " + c.Name
	now := p.now()
	ps := sts.NewPresignClient(p.sts)
	req, err := ps.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(po *sts.PresignOptions) {
		po.ClientOptions = append(po.ClientOptions, func(o *sts.Options) {
			o.APIOptions = append(o.APIOptions,
				smithyhttp.AddHeaderValue(clusterIDHeader, c.Name),
				addQuery("X-Amz-Expires", presignExpires))
		})
	})
	if err != nil {
		return cloud.Token{}, apiError(op, "sts:GetCallerIdentity", err)
	}
	return cloud.Token{
		Value:  tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL)),
		Expiry: now.Add(tokenLifetime - tokenMargin),
	}, nil
}

// addQuery sets a query parameter on the request before it is signed.
func addQuery(key, value string) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Build.Add(middleware.BuildMiddlewareFunc("scaleproofQuery"+key,
			func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					q := req.URL.Query()
					q.Set(key, value)
					req.URL.RawQuery = q.Encode()
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
	}
}
