package aks

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scaleproof/scaleproof/cloud"
)

// Create makes, in order: the resource group (only if --resource-group does
// not exist; an existing one is used as is, never tagged, never listed in
// Created, so Down never deletes it), the managed cluster name tagged with
// labels, with one system agent pool of MachineType that the cluster
// autoscaler grows between NodeMin and NodeMax, AAD-integrated with Azure
// RBAC and local accounts off, and waits (OperationTimeout) until it has
// succeeded. Then it reads the API server's address and CA, assigns the run's
// own identity "Azure Kubernetes Service RBAC Cluster Admin" on the cluster
// (with Azure RBAC nothing else lets it reach the Kubernetes API;
// clusteradmin.go), and, when EnsureRegistry has already run, grants the
// kubelet AcrPull on the registry. On error Created lists what exists.
func (p *Provider) Create(ctx context.Context, name string, labels map[string]string) (cloud.Cluster, error) {
	c := cloud.Cluster{Name: name}
	rg, err := p.ensureResourceGroup(ctx, labels)
	if c.Created, err = made(c.Created, rg, err); err != nil {
		return c, err
	}

	op := "create cluster " + name
	p.progress("creating cluster %s in %s (%s, %d..%d nodes of %s)", name, p.o.ResourceGroup, p.o.Location, p.o.NodeMin, p.o.NodeMax, p.o.MachineType)
	poller, err := p.clusters.BeginCreateOrUpdate(ctx, p.o.ResourceGroup, name, p.managedCluster(name, labels), nil)
	if err != nil {
		return c, asError(op, err)
	}
	// ARM accepted the PUT: the cluster exists from here on, even if its
	// agent pool then fails.
	c.Created = append(c.Created, cloud.Resource{Kind: KindCluster, Name: name, ID: p.clusterID(name), Labels: labels})
	res, err := wait(ctx, p, op, poller)
	if err != nil {
		return c, err
	}
	if err := p.fill(ctx, &c, &res.ManagedCluster); err != nil {
		return c, err
	}
	admin, err := p.grantClusterAdmin(ctx, c)
	if c.Created, err = made(c.Created, admin, err); err != nil {
		return c, err
	}
	ra, err := p.grantPull(ctx)
	if c.Created, err = made(c.Created, ra, err); err != nil {
		return c, err
	}
	p.progress("cluster %s is running at %s", name, c.Server)
	return c, nil
}

// Adopt reads the existing cluster name in --resource-group (Adopted, no
// Created) and, when EnsureRegistry has already run, grants its kubelet
// AcrPull on the run's registry.
func (p *Provider) Adopt(ctx context.Context, name string) (cloud.Cluster, error) {
	c := cloud.Cluster{Name: name, Adopted: true}
	res, err := p.clusters.Get(ctx, p.o.ResourceGroup, name, nil)
	if err != nil {
		return c, asError("adopt cluster "+name, err)
	}
	if s := deref(res.Properties).ProvisioningState; s != nil && *s != "Succeeded" {
		return c, &cloud.Error{Op: "adopt cluster " + name, Kind: "other", Msg: "provisioning state " + *s + ", want Succeeded"}
	}
	if err := p.fill(ctx, &c, &res.ManagedCluster); err != nil {
		return c, err
	}
	ra, err := p.grantPull(ctx)
	c.Created, err = made(c.Created, ra, err)
	return c, err
}

// made is created with r appended when a step made one, and the step's err.
func made(created []cloud.Resource, r *cloud.Resource, err error) ([]cloud.Resource, error) {
	if r != nil {
		created = append(created, *r)
	}
	return created, err
}

// managedCluster is the cluster Create asks for.
func (p *Provider) managedCluster(name string, labels map[string]string) armcontainerservice.ManagedCluster {
	return armcontainerservice.ManagedCluster{
		Location: to(p.o.Location),
		Tags:     tags(labels),
		Identity: &armcontainerservice.ManagedClusterIdentity{Type: to(armcontainerservice.ResourceIdentityTypeSystemAssigned)},
		Properties: &armcontainerservice.ManagedClusterProperties{
			DNSPrefix:            to(name),
			EnableRBAC:           to(true),
			DisableLocalAccounts: to(true),
			AADProfile: &armcontainerservice.ManagedClusterAADProfile{
				Managed:         to(true),
				EnableAzureRBAC: to(true),
			},
			AgentPoolProfiles: []*armcontainerservice.ManagedClusterAgentPoolProfile{{
				Name:              to(SystemPoolName),
				Mode:              to(armcontainerservice.AgentPoolModeSystem),
				Type:              to(armcontainerservice.AgentPoolTypeVirtualMachineScaleSets),
				OSType:            to(armcontainerservice.OSTypeLinux),
				VMSize:            to(p.o.MachineType),
				Count:             to(int32(max(p.o.NodeMin, 1))),
				EnableAutoScaling: to(true),
				MinCount:          to(int32(max(p.o.NodeMin, 1))),
				MaxCount:          to(int32(p.o.NodeMax)),
				Tags:              tags(labels),
			}},
		},
	}
}

// fill sets c's Server (https://FQDN:443), CAData (the CA of the first
// cluster of ListClusterUserCredentials' kubeconfig; its users, an exec
// plugin, are never read) and remembers the kubelet identity.
func (p *Provider) fill(ctx context.Context, c *cloud.Cluster, mc *armcontainerservice.ManagedCluster) error {
	props := deref(mc.Properties)
	fqdn := deref(props.Fqdn)
	if fqdn == "" {
		fqdn = deref(props.PrivateFQDN)
	}
	if fqdn == "" {
		return &cloud.Error{Op: "read cluster " + c.Name, Kind: "other", Msg: "the cluster has no FQDN"}
	}
	if _, _, err := net.SplitHostPort(fqdn); err != nil {
		fqdn = net.JoinHostPort(fqdn, "443")
	}
	c.Server = "https://" + fqdn

	op := "read credentials of cluster " + c.Name
	creds, err := p.clusters.ListClusterUserCredentials(ctx, p.o.ResourceGroup, c.Name, nil)
	if err != nil {
		return asError(op, err)
	}
	for _, kc := range creds.Kubeconfigs {
		if kc == nil || len(kc.Value) == 0 {
			continue
		}
		cfg, err := clientcmd.Load(kc.Value)
		if err != nil {
			return &cloud.Error{Op: op, Kind: "other", Msg: "kubeconfig: " + err.Error(), Err: err}
		}
		for _, cl := range cfg.Clusters {
			if len(cl.CertificateAuthorityData) > 0 {
				c.CAData = cl.CertificateAuthorityData
				break
			}
		}
		if len(c.CAData) > 0 {
			break
		}
	}
	if len(c.CAData) == 0 {
		return &cloud.Error{Op: op, Kind: "other", Msg: "the kubeconfig has no certificate-authority-data"}
	}
	if k := props.IdentityProfile["kubeletidentity"]; k != nil && k.ObjectID != nil {
		p.mu.Lock()
		p.kubeletObjectID = *k.ObjectID
		p.mu.Unlock()
	}
	return nil
}

// ensureResourceGroup creates --resource-group tagged with labels when it
// does not exist and returns it; nil when it was there (or this Provider
// created it already).
func (p *Provider) ensureResourceGroup(ctx context.Context, labels map[string]string) (*cloud.Resource, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.groupCreated {
		return nil, nil
	}
	name := p.o.ResourceGroup
	g, err := p.groups.Get(ctx, name, nil)
	if err == nil {
		return nil, p.extendResourceGroup(ctx, name, g.ResourceGroup, labels)
	}
	if !isNotFound(err) {
		return nil, asError("read resource group "+name, err)
	}
	p.progress("creating resource group %s in %s", name, p.o.Location)
	res, err := p.groups.CreateOrUpdate(ctx, name, armresources.ResourceGroup{Location: to(p.o.Location), Tags: tags(labels)}, nil)
	if err != nil {
		return nil, asError("create resource group "+name, err)
	}
	p.groupCreated = true
	id := deref(res.ID)
	if id == "" {
		id = p.groupID()
	}
	return &cloud.Resource{Kind: KindResourceGroup, Name: name, ID: id, Labels: labels}, nil
}

// extendResourceGroup keeps an existing resource group that the run uses
// (not deleted by Down). When it is a scaleproof group (a leftover of an
// earlier run, or one a person made with our labels) whose expiry is
// earlier than this run's, its tags get this run's labels: otherwise the
// janitor, which deletes expired scaleproof groups with everything in them,
// would delete the live run's cluster with it. A group that is not ours is
// left as it is. The update is a PUT of the group with its own location and
// the merged tags (Resource Groups - Create Or Update: "Creates or updates a
// resource group"; the location of an existing group cannot change),
// https://learn.microsoft.com/rest/api/resources/resource-groups/create-or-update.
func (p *Provider) extendResourceGroup(ctx context.Context, name string, g armresources.ResourceGroup, labels map[string]string) error {
	have := cloud.Resource{Labels: labelsOf(g.Tags)}
	old, _ := strconv.ParseInt(have.Labels[cloud.LabelExpiresAt], 10, 64)
	want, err := strconv.ParseInt(labels[cloud.LabelExpiresAt], 10, 64)
	if !have.Ours() || err != nil || want <= old {
		p.progress("using the existing resource group %s (not deleted by Down)", name)
		return nil
	}
	merged := make(map[string]*string, len(g.Tags)+len(labels))
	maps.Copy(merged, g.Tags)
	maps.Copy(merged, tags(labels))
	if _, err := p.groups.CreateOrUpdate(ctx, name, armresources.ResourceGroup{Location: g.Location, Tags: merged}, nil); err != nil {
		return asError("extend the expiry of resource group "+name, err)
	}
	p.progress("using the existing resource group %s (not deleted by Down); its expiry moved to this run's", name)
	return nil
}

func (p *Provider) groupID() string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s", p.o.Subscription, p.o.ResourceGroup)
}

func (p *Provider) clusterID(name string) string {
	return p.groupID() + "/providers/Microsoft.ContainerService/managedClusters/" + name
}

// The Kinds of the resources this provider creates and lists.
const (
	KindResourceGroup  = "resource group"
	KindCluster        = "cluster"
	KindRegistry       = "registry"
	KindRoleAssignment = "role assignment"
)
