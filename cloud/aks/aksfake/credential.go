package aksfake

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Credential is an azcore.TokenCredential that gives Token for every scope,
// valid for an hour: with Server.ARMToken set to the same value, what a test
// outside cloud/aks passes as aks.Deps.Credential (with Transport the
// server's Client()).
type Credential struct{ Token string }

// GetToken returns c.Token.
func (c Credential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: c.Token, ExpiresOn: time.Now().Add(time.Hour)}, nil
}
