package eks

import (
	"context"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/scaleproof/scaleproof/cloud"
)

// List returns, in an order safe to delete in: every managed node group of
// every cluster in the region, every cluster, every IAM role under
// RolePath, every ECR repository; ours and foreign, each with its tags as
// AWS returned them (the janitor filters). A node group's Name is
// "<cluster>/<node group>". A resource gone between listing and reading its
// tags is left out.
func (p *Provider) List(ctx context.Context) ([]cloud.Resource, error) {
	const op = "list EKS resources"
	var groups, clusters, roles, repos []cloud.Resource

	cp := eks.NewListClustersPaginator(p.eks, &eks.ListClustersInput{})
	for cp.HasMorePages() {
		page, err := cp.NextPage(ctx)
		if err != nil {
			return nil, apiError(op, "eks:ListClusters", err)
		}
		for _, name := range page.Clusters {
			d, err := p.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
			if notFound(err) {
				continue
			}
			if err != nil {
				return nil, apiError(op, "eks:DescribeCluster", err)
			}
			clusters = append(clusters, cloud.Resource{Kind: "cluster", Name: name, ID: aws.ToString(d.Cluster.Arn), Labels: maps.Clone(d.Cluster.Tags)})
			ng, err := p.nodegroups(ctx, op, name)
			if err != nil {
				return nil, err
			}
			for _, g := range ng {
				d, err := p.eks.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String(name), NodegroupName: aws.String(g)})
				if notFound(err) {
					continue
				}
				if err != nil {
					return nil, apiError(op, "eks:DescribeNodegroup", err)
				}
				groups = append(groups, cloud.Resource{Kind: "node group", Name: name + "/" + g,
					ID: aws.ToString(d.Nodegroup.NodegroupArn), Labels: maps.Clone(d.Nodegroup.Tags)})
			}
		}
	}

	rp := iam.NewListRolesPaginator(p.iam, &iam.ListRolesInput{PathPrefix: aws.String(RolePath)})
	for rp.HasMorePages() {
		page, err := rp.NextPage(ctx)
		if err != nil {
			return nil, apiError(op, "iam:ListRoles", err)
		}
		for _, r := range page.Roles {
			labels := map[string]string{}
			tp := iam.NewListRoleTagsPaginator(p.iam, &iam.ListRoleTagsInput{RoleName: r.RoleName})
			gone := false
			for tp.HasMorePages() {
				tags, err := tp.NextPage(ctx)
				if notFound(err) {
					gone = true
					break
				}
				if err != nil {
					return nil, apiError(op, "iam:ListRoleTags", err)
				}
				for _, t := range tags.Tags {
					labels[aws.ToString(t.Key)] = aws.ToString(t.Value)
				}
			}
			if !gone {
				roles = append(roles, cloud.Resource{Kind: "role", Name: aws.ToString(r.RoleName), ID: aws.ToString(r.Arn), Labels: labels})
			}
		}
	}

	ep := ecr.NewDescribeRepositoriesPaginator(p.ecr, &ecr.DescribeRepositoriesInput{})
	for ep.HasMorePages() {
		page, err := ep.NextPage(ctx)
		if err != nil {
			return nil, apiError(op, "ecr:DescribeRepositories", err)
		}
		for _, r := range page.Repositories {
			t, err := p.ecr.ListTagsForResource(ctx, &ecr.ListTagsForResourceInput{ResourceArn: r.RepositoryArn})
			if notFound(err) {
				continue
			}
			if err != nil {
				return nil, apiError(op, "ecr:ListTagsForResource", err)
			}
			repos = append(repos, cloud.Resource{Kind: "repository", Name: aws.ToString(r.RepositoryName), ID: aws.ToString(r.RepositoryArn), Labels: fromECRTags(t.Tags)})
		}
	}

	out := append(groups, clusters...)
	out = append(out, roles...)
	return append(out, repos...), nil
}

// nodegroups is the names of cluster's managed node groups.
func (p *Provider) nodegroups(ctx context.Context, op, cluster string) ([]string, error) {
	var names []string
	np := eks.NewListNodegroupsPaginator(p.eks, &eks.ListNodegroupsInput{ClusterName: aws.String(cluster)})
	for np.HasMorePages() {
		page, err := np.NextPage(ctx)
		if notFound(err) {
			return names, nil
		}
		if err != nil {
			return nil, apiError(op, "eks:ListNodegroups", err)
		}
		names = append(names, page.Nodegroups...)
	}
	return names, nil
}
