// Package aks is the AKS cloud.Provider: a resource group (when the one named
// by --resource-group does not exist), a managed cluster with one system
// agent pool the AKS cluster autoscaler grows between NodeMin and NodeMax,
// AAD-integrated with Azure RBAC, an Azure Container Registry the kubelet may
// pull from (an AcrPull role assignment), an in-process AAD token for the API
// server, and List/Delete for the janitor. It uses the Azure SDK for Go
// (armcontainerservice v6, armresources, armcontainerregistry,
// armauthorization, azidentity), never the az CLI or kubelogin.
//
// Credentials: DefaultAzureCredential (environment, workload identity / OIDC
// federation in CI, managed identity, az login). The caller needs
// "Azure Kubernetes Service RBAC Cluster Admin" on the cluster (or its
// resource group) for the deploy, as the AAD token carries no other right;
// docs/cloud.md lists every Azure RBAC action Calls makes.
//
// Tests run against aksfake, a TLS fake of the ARM REST API and of ACR's
// token exchange on 127.0.0.1; no Azure endpoint is ever called from here.
//
// Must not import scenarios/.
package aks
