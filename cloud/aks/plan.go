package aks

import (
	"fmt"

	"github.com/scaleproof/scaleproof/cloud"
)

// call is one SDK call and the Azure RBAC action it needs ("" for the
// calls that need none).
type call struct {
	service, method, action, what string
}

// calls is every call the provider makes, in the order a run makes them.
var calls = []call{
	{"Microsoft.Resources", "ResourceGroups.Get", "Microsoft.Resources/subscriptions/resourceGroups/read",
		"GET the --resource-group: is it there (then it is used as is and never deleted)"},
	{"Microsoft.Resources", "ResourceGroups.CreateOrUpdate", "Microsoft.Resources/subscriptions/resourceGroups/write",
		"PUT the --resource-group, tagged, when it is not there"},
	{"Microsoft.ContainerService", "ManagedClusters.BeginCreateOrUpdate", "Microsoft.ContainerService/managedClusters/write",
		"PUT the cluster, tagged: one system agent pool with enableAutoScaling min..max, AAD with Azure RBAC, local accounts off; polled (Azure-AsyncOperation) until Succeeded"},
	{"Microsoft.ContainerService", "ManagedClusters.Get", "Microsoft.ContainerService/managedClusters/read",
		"GET the cluster: the final read of the create, and Adopt (--cluster)"},
	{"Microsoft.ContainerService", "ManagedClusters.ListClusterUserCredentials", "Microsoft.ContainerService/managedClusters/listClusterUserCredential/action",
		"POST listClusterUserCredential: the kubeconfig, of which only the cluster CA is read (never its exec plugin)"},
	{"Azure AD", "TokenCredential.GetToken", "",
		"an AAD token for " + AKSScope + " (the API server's bearer token) and for ARM (the registry exchange), in-process"},
	{"Microsoft.ContainerRegistry", "Registries.Get", "Microsoft.ContainerRegistry/registries/read",
		"GET the run's registry: is it there"},
	{"Microsoft.ContainerRegistry", "Registries.BeginCreate", "Microsoft.ContainerRegistry/registries/write",
		"PUT the run's registry (Basic SKU, admin user off), tagged; polled until Succeeded"},
	{"ACR", "POST /oauth2/exchange", "Microsoft.ContainerRegistry/registries/push/write",
		"exchange the ARM AAD token for an ACR refresh token (grant_type=access_token); the push authenticates as " + ACRUsername + " with it (a data action: AcrPush, or Owner/Contributor on the registry)"},
	{"Microsoft.Authorization", "RoleAssignments.Create", "Microsoft.Authorization/roleAssignments/write",
		"PUT an AcrPull role assignment on the registry for the cluster's kubelet identity, and Azure Kubernetes Service RBAC Cluster Admin on the cluster for the run's own identity (its object id from the ARM token's oid claim)"},
	{"Microsoft.ContainerService", "ManagedClusters.NewListPager", "Microsoft.ContainerService/managedClusters/read",
		"GET every managed cluster of the subscription with its tags (janitor)"},
	{"Microsoft.ContainerRegistry", "Registries.NewListPager", "Microsoft.ContainerRegistry/registries/read",
		"GET every registry of the subscription with its tags (janitor)"},
	{"Microsoft.Resources", "ResourceGroups.NewListPager", "Microsoft.Resources/subscriptions/resourceGroups/read",
		"GET every resource group of the subscription with its tags (janitor)"},
	{"Microsoft.Authorization", "RoleAssignments.DeleteByID", "Microsoft.Authorization/roleAssignments/delete",
		"DELETE the role assignments the run made (Down)"},
	{"Microsoft.ContainerRegistry", "Registries.BeginDelete", "Microsoft.ContainerRegistry/registries/delete",
		"DELETE the registry; polled until gone (Down, janitor)"},
	{"Microsoft.ContainerService", "ManagedClusters.BeginDelete", "Microsoft.ContainerService/managedClusters/delete",
		"DELETE the cluster; polled until gone (Down, janitor; never an adopted cluster)"},
	{"Microsoft.Resources", "ResourceGroups.BeginDelete", "Microsoft.Resources/subscriptions/resourceGroups/delete",
		"DELETE the resource group, only when it carries our tags; polled (Location) until gone (Down, janitor)"},
}

// Calls is every API call the provider can make, with the Azure RBAC
// action each needs in What.
func Calls() []cloud.Call {
	out := make([]cloud.Call, 0, len(calls))
	for _, c := range calls {
		what := c.what
		if c.action != "" {
			what += " [" + c.action + "]"
		}
		out = append(out, cloud.Call{Service: c.service, Method: c.method, What: what})
	}
	return out
}

// Plan is what Create and EnsureRegistry would make for o, and the calls,
// changing nothing (it calls nothing either, so the resource group is
// listed with "if missing").
func (p *Provider) Plan(o cloud.Options) cloud.Plan {
	o = o.WithDefaults(DefaultMachineType)
	labels := cloud.Labels(o.RunID, o.Now(), o.TTL)
	group := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s", o.Subscription, o.ResourceGroup)
	var rs []cloud.Resource
	rs = append(rs, cloud.Resource{Kind: KindResourceGroup, Name: o.ResourceGroup + " (if missing)", ID: group, Labels: labels})
	if o.Cluster == "" {
		name := cloud.ClusterName(o.RunID)
		clusterID := group + "/providers/Microsoft.ContainerService/managedClusters/" + name
		rs = append(rs, cloud.Resource{Kind: KindCluster, Name: fmt.Sprintf("%s (%d..%d × %s, cluster autoscaler)", name, o.NodeMin, o.NodeMax, o.MachineType),
			ID: clusterID, Labels: labels},
			cloud.Resource{Kind: KindRoleAssignment, Name: "Azure Kubernetes Service RBAC Cluster Admin on " + name + " for the run's identity",
				ID: clusterID + "/providers/Microsoft.Authorization/roleAssignments/…"})
	}
	reg := RegistryName(o.RunID)
	regID := group + "/providers/Microsoft.ContainerRegistry/registries/" + reg
	rs = append(rs,
		cloud.Resource{Kind: KindRegistry, Name: reg, ID: regID, Labels: labels},
		cloud.Resource{Kind: KindRoleAssignment, Name: "AcrPull on " + reg + " for the kubelet identity", ID: regID + "/providers/Microsoft.Authorization/roleAssignments/…"},
	)
	return cloud.Plan{Resources: rs, Calls: Calls()}
}
