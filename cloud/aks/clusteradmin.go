package aks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/scaleproof/scaleproof/cloud"
)

// The run's access to the cluster's Kubernetes API.
//
// The cluster is made with Microsoft Entra ID integration and Azure RBAC
// for Kubernetes authorization (managedCluster: aadProfile.enableAzureRBAC).
// Then the Kubernetes API authorizes every request against Azure role
// assignments with data actions on the cluster, and the identity that
// created the cluster has none: "you need to assign one of the built-in
// roles ... Azure Kubernetes Service RBAC Cluster Admin" (AKS docs, "Use
// Azure role-based access control for Kubernetes authorization", Create
// role assignments for users to access the cluster;
// https://learn.microsoft.com/azure/aks/manage-azure-rbac). The docs add
// that role assignments "can take up to five minutes to propagate", so the
// deployer waits for an authorized call before it deploys.

// ClusterAdminRoleID is the id of the built-in role "Azure Kubernetes
// Service RBAC Cluster Admin" (Azure built-in roles, Containers;
// https://learn.microsoft.com/azure/role-based-access-control/built-in-roles/containers).
const ClusterAdminRoleID = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"

// callerObjectID is the object id of the identity the provider's
// credential signs in as: the "oid" claim of its ARM access token (Microsoft
// identity platform, "Access token claims reference": oid, the immutable
// identifier of the principal, user or service principal). The token is
// not verified here: it was just issued to us.
func (p *Provider) callerObjectID(ctx context.Context) (string, error) {
	t, err := p.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{p.armScope}})
	if err != nil {
		return "", &cloud.Error{Op: "read the run's identity", Kind: "permission", Msg: err.Error(), Err: err}
	}
	oid, err := tokenOID(t.Token)
	if err != nil {
		return "", &cloud.Error{Op: "read the run's identity", Kind: "other", Msg: err.Error(), Err: err}
	}
	return oid, nil
}

// tokenOID reads the "oid" claim of a JWT's payload.
func tokenOID(jwt string) (string, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("the ARM access token is not a JWT (%d parts)", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return "", fmt.Errorf("the ARM access token's payload: %w", err)
	}
	var claims struct {
		OID string `json:"oid"`
	}
	if err := json.Unmarshal(b, &claims); err != nil || claims.OID == "" {
		return "", fmt.Errorf("the ARM access token has no oid claim (%v)", err)
	}
	return claims.OID, nil
}

// grantClusterAdmin assigns "Azure Kubernetes Service RBAC Cluster Admin"
// on cluster c to the run's own identity and returns the assignment it
// created (nil when it was there), for Down to delete.
func (p *Provider) grantClusterAdmin(ctx context.Context, c cloud.Cluster) (*cloud.Resource, error) {
	oid, err := p.callerObjectID(ctx)
	if err != nil {
		return nil, err
	}
	ra, err := p.assignRole(ctx, p.clusterID(c.Name), oid, "", ClusterAdminRoleID, "Azure Kubernetes Service RBAC Cluster Admin",
		"the run deploys through the cluster's Kubernetes API (Azure RBAC)")
	if ra != nil {
		p.progress("granted Azure Kubernetes Service RBAC Cluster Admin on cluster %s to the run's identity %s (it can take minutes to apply)", c.Name, oid)
	}
	return ra, err
}
