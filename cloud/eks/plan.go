package eks

import (
	"fmt"

	"github.com/scaleproof/scaleproof/cloud"
)

// The services' names in Calls.
const (
	svcEKS = "eks.amazonaws.com"
	svcEC2 = "ec2.amazonaws.com"
	svcIAM = "iam.amazonaws.com"
	svcSTS = "sts.amazonaws.com"
	svcECR = "ecr.amazonaws.com"
)

// calls is every AWS API call the provider can make, in the order a run
// makes them. Method is the IAM action without its service prefix; the IAM
// permission the run needs is "<service>:<Method>" (plus iam:PassRole on the
// two roles, which CreateCluster checks).
var calls = []cloud.Call{
	call(svcIAM, "CreateRole", "Create: the cluster role and the node role under path "+RolePath+", tagged with the run's labels"),
	call(svcIAM, "AttachRolePolicy", "Create: the AWS managed policies EKS Auto Mode needs, onto each role"),
	call(svcIAM, "PassRole", "Create: (a permission, not a call) CreateCluster hands the two roles to EKS"),
	call(svcEC2, "DescribeVpcs", "Create: the region's default VPC (isDefault=true)"),
	call(svcEC2, "DescribeSubnets", "Create: its default subnets, one an Availability Zone"),
	call(svcEKS, "CreateCluster", "Create: the cluster, tagged, authentication mode API with the caller's admin access entry, EKS Auto Mode (compute, block storage, load balancing); retried while IAM propagates the new roles"),
	call(svcEKS, "DescribeCluster", "Create, Adopt, Delete, List: the cluster's status (polled until ACTIVE or gone), endpoint, CA and tags"),
	call(svcSTS, "GetCallerIdentity", "Token: presigned in-process with the x-k8s-aws-id header (the EKS bearer token); the SDK sends nothing"),
	call(svcECR, "DescribeRepositories", "EnsureRegistry: find the run's repository scaleproof-ref/<run id>; List: every repository"),
	call(svcECR, "CreateRepository", "EnsureRegistry: create the run's repository scaleproof-ref/<run id>, tagged with the run's labels, when it is missing"),
	call(svcECR, "TagResource", "EnsureRegistry: move the run's existing repository's expiry later (a run id used again), so the janitor leaves it while this run uses it"),
	call(svcECR, "GetAuthorizationToken", "EnsureRegistry: the registry's basic auth (user AWS) for the image push"),
	call(svcEKS, "ListClusters", "List: every cluster in the region"),
	call(svcEKS, "ListNodegroups", "List, Delete: a cluster's managed node groups (Auto Mode has none; other runs' or foreign clusters may)"),
	call(svcEKS, "DescribeNodegroup", "List: a node group's tags; Delete: polled until gone"),
	call(svcIAM, "ListRoles", "List: the roles under path "+RolePath),
	call(svcIAM, "ListRoleTags", "List: each such role's tags"),
	call(svcECR, "ListTagsForResource", "List: each repository's tags"),
	call(svcEKS, "DeleteNodegroup", "Delete: a node group (before its cluster)"),
	call(svcEKS, "DeleteCluster", "Delete: the cluster (after waiting for a CREATING one to settle)"),
	call(svcIAM, "ListAttachedRolePolicies", "Delete: a role's managed policies"),
	call(svcIAM, "DetachRolePolicy", "Delete: each of them"),
	call(svcIAM, "ListInstanceProfilesForRole", "Delete: instance profiles holding the node role"),
	call(svcIAM, "RemoveRoleFromInstanceProfile", "Delete: take the role out of each"),
	call(svcIAM, "DeleteInstanceProfile", "Delete: an instance profile that held only the role (the one EKS Auto Mode made for the node role, which the cluster delete leaves)"),
	call(svcIAM, "DeleteRole", "Delete: the role"),
	call(svcECR, "DeleteRepository", "Delete: the repository, force (with its images)"),
}

// Calls is every AWS API call the EKS provider can make (service, action,
// when and why), for `cloud plan` and docs/cloud.md.
func Calls() []cloud.Call { return append([]cloud.Call(nil), calls...) }

// Calls is the package's Calls.
func (p *Provider) Calls() []cloud.Call { return Calls() }

// The AWS managed policies on the two roles (EKS Auto Mode's documented
// sets).
var (
	clusterPolicies = []string{
		"AmazonEKSClusterPolicy",
		"AmazonEKSComputePolicy",
		"AmazonEKSBlockStoragePolicy",
		"AmazonEKSLoadBalancingPolicy",
		"AmazonEKSNetworkingPolicy",
	}
	nodePolicies = []string{
		"AmazonEKSWorkerNodeMinimalPolicy",
		"AmazonEC2ContainerRegistryPullOnly",
	}
)

func policyARN(region, name string) string {
	return "arn:" + partition(region) + ":iam::aws:policy/" + name
}

// Plan lists what Create and EnsureRegistry would make for o (its RunID,
// TTL, Cluster) and every call, changing nothing and calling nothing. The
// cluster's subnets are not known until Create reads the default VPC; the
// plan says so.
func (p *Provider) Plan(o cloud.Options) cloud.Plan {
	now := p.now()
	if o.Now != nil {
		now = o.Now()
	}
	labels := cloud.Labels(o.RunID, now, o.TTL)
	var rs []cloud.Resource
	if o.Cluster == "" {
		name := cloud.ClusterName(o.RunID)
		cr, nr := roleNames(name)
		rs = append(rs,
			cloud.Resource{Kind: "role", Name: cr, ID: "path " + RolePath + ", trusted by eks.amazonaws.com, policies " + fmt.Sprint(clusterPolicies), Labels: labels},
			cloud.Resource{Kind: "role", Name: nr, ID: "path " + RolePath + ", trusted by ec2.amazonaws.com, policies " + fmt.Sprint(nodePolicies), Labels: labels},
			cloud.Resource{Kind: "cluster", Name: name, ID: "region " + p.o.Region + ", the default VPC's default subnets (refused if the region has none), EKS Auto Mode: the cloud grows and shrinks the nodes (the node bounds and machine type are not applied: Auto Mode picks them)", Labels: labels},
		)
	}
	rs = append(rs, cloud.Resource{Kind: "repository", Name: RepositoryName(p.o.RunID), ID: "ECR in " + p.o.Region + " (created only if missing; deleted by Down with its images)", Labels: labels})
	return cloud.Plan{Resources: rs, Calls: Calls()}
}

func call(service, method, what string) cloud.Call {
	return cloud.Call{Service: service, Method: method, What: what}
}
