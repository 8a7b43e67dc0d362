package aks

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/scaleproof/scaleproof/cloud"
)

// Token is an AAD access token for AKSScope from the provider's credential,
// in-process (never kubelogin). The API server accepts it when the caller
// holds an Azure RBAC role on the cluster, such as "Azure Kubernetes
// Service RBAC Cluster Admin".
func (p *Provider) Token(ctx context.Context, c cloud.Cluster) (cloud.Token, error) {
	t, err := p.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{AKSScope}})
	if err != nil {
		return cloud.Token{}, &cloud.Error{Op: "AAD token for cluster " + c.Name, Kind: "permission", Msg: err.Error(), Err: err}
	}
	return cloud.Token{Value: t.Token, Expiry: t.ExpiresOn}, nil
}
