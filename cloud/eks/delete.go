package eks

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/scaleproof/scaleproof/cloud"
)

// Delete deletes r and, for a cluster or node group, waits until it is gone
// (polled every PollInterval, at most OperationTimeout each). A cluster's
// node groups go first, and a cluster still CREATING is waited for, since
// EKS refuses to delete it then. A role is detached from its policies and
// instance profiles first; a repository is deleted with its images. A
// resource already gone is not an error.
func (p *Provider) Delete(ctx context.Context, r cloud.Resource) error {
	switch r.Kind {
	case "cluster":
		return p.deleteCluster(ctx, r.Name)
	case "node group":
		cluster, group, ok := strings.Cut(r.Name, "/")
		if !ok {
			return &cloud.Error{Op: "delete " + r.String(), Kind: "other", Msg: `a node group's name is "<cluster>/<node group>"`}
		}
		return p.deleteNodegroup(ctx, cluster, group)
	case "role":
		return p.deleteRole(ctx, r.Name)
	case "repository":
		return p.deleteRepository(ctx, r.Name)
	}
	return &cloud.Error{Op: "delete " + r.String(), Kind: "other", Msg: "eks makes no resources of kind " + r.Kind}
}

func (p *Provider) deleteCluster(ctx context.Context, name string) error {
	op := "delete cluster " + name
	// EKS refuses DeleteCluster while the cluster is CREATING or UPDATING.
	gone := false
	err := p.poll(ctx, op+" (waiting for it to finish creating)", func(ctx context.Context) (bool, string, error) {
		d, err := p.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
		if notFound(err) {
			gone = true
			return true, "gone", nil
		}
		if err != nil {
			return false, "", apiError(op, "eks:DescribeCluster", err)
		}
		s := d.Cluster.Status
		return s != ekstypes.ClusterStatusCreating && s != ekstypes.ClusterStatusUpdating, string(s), nil
	})
	if err != nil || gone {
		return err
	}
	groups, err := p.nodegroups(ctx, op, name)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if err := p.deleteNodegroup(ctx, name, g); err != nil {
			return err
		}
	}
	p.progress("deleting cluster %s", name)
	if _, err := p.eks.DeleteCluster(ctx, &eks.DeleteClusterInput{Name: aws.String(name)}); err != nil && !notFound(err) {
		return apiError(op, "eks:DeleteCluster", err)
	}
	return p.poll(ctx, op, func(ctx context.Context) (bool, string, error) {
		d, err := p.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
		if notFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", apiError(op, "eks:DescribeCluster", err)
		}
		if d.Cluster.Status == ekstypes.ClusterStatusFailed {
			return false, "FAILED", &cloud.Error{Op: op, Kind: "other", Msg: "the cluster is FAILED while deleting" + healthIssues(d.Cluster)}
		}
		return false, string(d.Cluster.Status), nil
	})
}

func (p *Provider) deleteNodegroup(ctx context.Context, cluster, group string) error {
	op := fmt.Sprintf("delete node group %s of cluster %s", group, cluster)
	p.progress("deleting node group %s/%s", cluster, group)
	if _, err := p.eks.DeleteNodegroup(ctx, &eks.DeleteNodegroupInput{ClusterName: aws.String(cluster), NodegroupName: aws.String(group)}); err != nil {
		if notFound(err) {
			return nil
		}
		return apiError(op, "eks:DeleteNodegroup", err)
	}
	return p.poll(ctx, op, func(ctx context.Context) (bool, string, error) {
		d, err := p.eks.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String(cluster), NodegroupName: aws.String(group)})
		if notFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", apiError(op, "eks:DescribeNodegroup", err)
		}
		if d.Nodegroup.Status == ekstypes.NodegroupStatusDeleteFailed {
			return false, string(d.Nodegroup.Status), &cloud.Error{Op: op, Kind: "other", Msg: "the node group is DELETE_FAILED"}
		}
		return false, string(d.Nodegroup.Status), nil
	})
}

func (p *Provider) deleteRole(ctx context.Context, name string) error {
	op := "delete IAM role " + name
	p.progress("deleting IAM role %s", name)
	ap := iam.NewListAttachedRolePoliciesPaginator(p.iam, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String(name)})
	for ap.HasMorePages() {
		page, err := ap.NextPage(ctx)
		if notFound(err) {
			return nil
		}
		if err != nil {
			return apiError(op, "iam:ListAttachedRolePolicies", err)
		}
		for _, pol := range page.AttachedPolicies {
			if _, err := p.iam.DetachRolePolicy(ctx, &iam.DetachRolePolicyInput{RoleName: aws.String(name), PolicyArn: pol.PolicyArn}); err != nil && !notFound(err) {
				return apiError(op, "iam:DetachRolePolicy", err)
			}
		}
	}
	ip := iam.NewListInstanceProfilesForRolePaginator(p.iam, &iam.ListInstanceProfilesForRoleInput{RoleName: aws.String(name)})
	for ip.HasMorePages() {
		page, err := ip.NextPage(ctx)
		if notFound(err) {
			return nil
		}
		if err != nil {
			return apiError(op, "iam:ListInstanceProfilesForRole", err)
		}
		for _, prof := range page.InstanceProfiles {
			if _, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
				RoleName: aws.String(name), InstanceProfileName: prof.InstanceProfileName,
			}); err != nil && !notFound(err) {
				return apiError(op, "iam:RemoveRoleFromInstanceProfile", err)
			}
			// A profile that held only this role is the one EKS Auto Mode
			// made for it, which nothing deletes with the cluster: it goes
			// too. A profile shared with another role stays.
			if len(prof.Roles) != 1 {
				continue
			}
			if _, err := p.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: prof.InstanceProfileName}); err != nil && !notFound(err) {
				return apiError(op, "iam:DeleteInstanceProfile", err)
			}
		}
	}
	if _, err := p.iam.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String(name)}); err != nil && !notFound(err) {
		return apiError(op, "iam:DeleteRole", err)
	}
	return nil
}

func (p *Provider) deleteRepository(ctx context.Context, name string) error {
	p.progress("deleting ECR repository %s", name)
	if _, err := p.ecr.DeleteRepository(ctx, &ecr.DeleteRepositoryInput{RepositoryName: aws.String(name), Force: true}); err != nil && !notFound(err) {
		return apiError("delete ECR repository "+name, "ecr:DeleteRepository", err)
	}
	return nil
}
