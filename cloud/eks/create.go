package eks

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/google/uuid"

	"github.com/scaleproof/scaleproof/cloud"
)

// The trust policies of the two roles: EKS (with sts:TagSession, which Auto
// Mode needs) and EC2 for the nodes.
const (
	clusterTrust = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"eks.amazonaws.com"},"Action":["sts:AssumeRole","sts:TagSession"]}]}`
	nodeTrust    = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":["sts:AssumeRole"]}]}`
)

// unsupportedZoneIDs are the Availability Zone IDs the EKS control plane
// refuses (UnsupportedAvailabilityZoneException); their default subnets are
// left out. EKS names them by zone ID, and zone names map to IDs differently
// in each account, so the subnets are matched by their AvailabilityZoneId
// (DescribeSubnets returns it): "Your cluster can't use subnets in these
// Availability Zones: us-east-1 use1-az3, us-west-1 usw1-az2, ca-central-1
// cac1-az3" (Amazon EKS User Guide, networking requirements,
// https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html).
var unsupportedZoneIDs = map[string]bool{"use1-az3": true, "usw1-az2": true, "cac1-az3": true}

// Create makes the two IAM roles, then the cluster named name in the
// default VPC's subnets with EKS Auto Mode, all tagged with labels, and waits
// (DescribeCluster every PollInterval, at most OperationTimeout) until it is
// ACTIVE. On error the Cluster's Created lists what exists, in creation
// order.
func (p *Provider) Create(ctx context.Context, name string, labels map[string]string) (cloud.Cluster, error) {
	c := cloud.Cluster{Name: name}
	op := "create cluster " + name
	// The default VPC first: a region without one is refused before
	// anything exists.
	subnets, err := p.defaultSubnets(ctx, op)
	if err != nil {
		return c, err
	}
	clusterRole, nodeRole := roleNames(name)
	clusterARN, err := p.createRole(ctx, &c, clusterRole, clusterTrust, clusterPolicies, labels)
	if err != nil {
		return c, err
	}
	nodeARN, err := p.createRole(ctx, &c, nodeRole, nodeTrust, nodePolicies, labels)
	if err != nil {
		return c, err
	}

	p.progress("creating cluster %s in subnets %v (EKS Auto Mode)", name, subnets)
	in := &eks.CreateClusterInput{
		Name:    aws.String(name),
		RoleArn: aws.String(clusterARN),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{
			SubnetIds:             subnets,
			EndpointPublicAccess:  aws.Bool(true),
			EndpointPrivateAccess: aws.Bool(true),
		},
		AccessConfig: &ekstypes.CreateAccessConfigRequest{
			AuthenticationMode:                      ekstypes.AuthenticationModeApi,
			BootstrapClusterCreatorAdminPermissions: aws.Bool(true),
		},
		// EKS Auto Mode: the three go together, and self-managed add-ons
		// are off with it.
		ComputeConfig: &ekstypes.ComputeConfigRequest{
			Enabled:     aws.Bool(true),
			NodePools:   []string{"general-purpose", "system"},
			NodeRoleArn: aws.String(nodeARN),
		},
		StorageConfig: &ekstypes.StorageConfigRequest{BlockStorage: &ekstypes.BlockStorage{Enabled: aws.Bool(true)}},
		KubernetesNetworkConfig: &ekstypes.KubernetesNetworkConfigRequest{
			ElasticLoadBalancing: &ekstypes.ElasticLoadBalancing{Enabled: aws.Bool(true)},
		},
		BootstrapSelfManagedAddons: aws.Bool(false),
		Tags:                       labels,
	}
	// A role IAM has just made may not be assumable by EKS for some
	// seconds (IAM is eventually consistent): EKS then says it "could not
	// be assumed". That answer is retried every PollInterval, at most
	// OperationTimeout.
	//
	// Each attempt is a new request with its own client token: the SDK
	// writes the token it generates into the input it is given, and EKS
	// answers a repeated token with the first answer (EKS API Reference,
	// CreateCluster, clientRequestToken), so reusing one input would
	// replay the first refusal until the timeout. Only our own two roles
	// are waited for: any other role that "could not be assumed" (the
	// service-linked role AWSServiceRoleForAmazonEKS, which EKS creates
	// only when the caller may iam:CreateServiceLinkedRole) will not
	// appear by waiting, so it fails at once.
	var out *eks.CreateClusterOutput
	err = p.poll(ctx, op+" (waiting for IAM to propagate the new roles)", func(ctx context.Context) (bool, string, error) {
		o, done, state, err := p.createClusterAttempt(ctx, op, in, clusterARN, nodeARN)
		out = o
		return done, state, err
	})
	if err != nil {
		return c, err
	}
	c.Created = append(c.Created, clusterResource(out.Cluster, name, labels))

	p.progress("waiting for cluster %s to be ACTIVE", name)
	var active *ekstypes.Cluster
	err = p.poll(ctx, op, func(ctx context.Context) (bool, string, error) {
		d, err := p.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
		if err != nil {
			return false, "", apiError(op, "eks:DescribeCluster", err)
		}
		switch d.Cluster.Status {
		case ekstypes.ClusterStatusActive:
			active = d.Cluster
			return true, string(d.Cluster.Status), nil
		case ekstypes.ClusterStatusFailed, ekstypes.ClusterStatusDeleting:
			return false, string(d.Cluster.Status), &cloud.Error{Op: op, Kind: "other",
				Msg: fmt.Sprintf("the cluster is %s%s", d.Cluster.Status, healthIssues(d.Cluster))}
		}
		return false, string(d.Cluster.Status), nil
	})
	if err != nil {
		return c, err
	}
	if err := fillEndpoint(&c, active, op); err != nil {
		return c, err
	}
	p.progress("cluster %s is ACTIVE at %s", name, c.Server)
	return c, nil
}

// createRole creates an IAM role under RolePath trusted per trust and
// attaches the managed policies; the role goes into c.Created as soon as it
// exists.
func (p *Provider) createRole(ctx context.Context, c *cloud.Cluster, name, trust string, policies []string, labels map[string]string) (string, error) {
	op := "create IAM role " + name
	p.progress("creating IAM role %s%s", RolePath, name)
	out, err := p.iam.CreateRole(ctx, &iam.CreateRoleInput{
		RoleName:                 aws.String(name),
		Path:                     aws.String(RolePath),
		AssumeRolePolicyDocument: aws.String(trust),
		Description:              aws.String("scaleproof run " + labels[cloud.LabelRunID]),
		Tags:                     awsTags(labels, func(k, v *string) iamtypes.Tag { return iamtypes.Tag{Key: k, Value: v} }),
	})
	if err != nil {
		return "", apiError(op, "iam:CreateRole", err)
	}
	arn := aws.ToString(out.Role.Arn)
	c.Created = append(c.Created, cloud.Resource{Kind: "role", Name: name, ID: arn, Labels: maps.Clone(labels)})
	for _, pol := range policies {
		if _, err := p.iam.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{
			RoleName:  aws.String(name),
			PolicyArn: aws.String(policyARN(p.o.Region, pol)),
		}); err != nil {
			return "", apiError(op, "iam:AttachRolePolicy", err)
		}
	}
	return arn, nil
}

// defaultSubnets is the default VPC's default subnets, one an Availability
// Zone the EKS control plane accepts, sorted by zone. It refuses a region
// without a default VPC, or with default subnets in fewer than two zones
// (EKS needs two).
func (p *Provider) defaultSubnets(ctx context.Context, op string) ([]string, error) {
	vpcs, err := p.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{
		Filters: []ec2types.Filter{{Name: aws.String("isDefault"), Values: []string{"true"}}},
	})
	if err != nil {
		return nil, apiError(op, "ec2:DescribeVpcs", err)
	}
	if len(vpcs.Vpcs) == 0 {
		return nil, &cloud.Error{Op: op, Kind: "other", Msg: fmt.Sprintf(
			"region %s has no default VPC; EKS clusters here use the default VPC's subnets (create one with `aws ec2 create-default-vpc --region %s`, or adopt an existing cluster with --cluster)",
			p.o.Region, p.o.Region)}
	}
	vpc := aws.ToString(vpcs.Vpcs[0].VpcId)
	sn, err := p.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("vpc-id"), Values: []string{vpc}},
			{Name: aws.String("default-for-az"), Values: []string{"true"}},
		},
	})
	if err != nil {
		return nil, apiError(op, "ec2:DescribeSubnets", err)
	}
	byZone := map[string]string{}
	for _, s := range sn.Subnets {
		z := aws.ToString(s.AvailabilityZone)
		if unsupportedZoneIDs[aws.ToString(s.AvailabilityZoneId)] || byZone[z] != "" {
			continue
		}
		byZone[z] = aws.ToString(s.SubnetId)
	}
	if len(byZone) < 2 {
		return nil, &cloud.Error{Op: op, Kind: "other", Msg: fmt.Sprintf(
			"the default VPC %s of region %s has default subnets in %d Availability Zones; EKS needs two", vpc, p.o.Region, len(byZone))}
	}
	zones := slices.Sorted(maps.Keys(byZone))
	ids := make([]string, len(zones))
	for i, z := range zones {
		ids[i] = byZone[z]
	}
	return ids, nil
}

func clusterResource(cl *ekstypes.Cluster, name string, labels map[string]string) cloud.Resource {
	r := cloud.Resource{Kind: "cluster", Name: name, Labels: maps.Clone(labels)}
	if cl != nil {
		r.ID = aws.ToString(cl.Arn)
		if cl.Tags != nil {
			r.Labels = maps.Clone(cl.Tags)
		}
	}
	return r
}

// fillEndpoint sets c's Server and CAData from an ACTIVE cluster.
func fillEndpoint(c *cloud.Cluster, cl *ekstypes.Cluster, op string) error {
	c.Server = aws.ToString(cl.Endpoint)
	if c.Server == "" {
		return &cloud.Error{Op: op, Kind: "other", Msg: "the cluster has no API server endpoint"}
	}
	if cl.CertificateAuthority != nil && cl.CertificateAuthority.Data != nil {
		ca, err := base64.StdEncoding.DecodeString(aws.ToString(cl.CertificateAuthority.Data))
		if err != nil {
			return &cloud.Error{Op: op, Kind: "other", Msg: "the cluster's CA is not base64", Err: err}
		}
		c.CAData = ca
	}
	if len(c.CAData) == 0 {
		return &cloud.Error{Op: op, Kind: "other", Msg: "the cluster has no certificate authority data", Err: errors.New("no CA")}
	}
	return nil
}

func healthIssues(cl *ekstypes.Cluster) string {
	if cl.Health == nil || len(cl.Health.Issues) == 0 {
		return ""
	}
	s := ":"
	for _, i := range cl.Health.Issues {
		s += fmt.Sprintf(" %s: %s;", i.Code, aws.ToString(i.Message))
	}
	return s[:len(s)-1]
}

// awsTags is labels as AWS tags sorted by key, mk making one of a key and
// its value (IAM's and ECR's tag types are alike but distinct types).
func awsTags[T any](labels map[string]string, mk func(k, v *string) T) []T {
	keys := slices.Sorted(maps.Keys(labels))
	t := make([]T, len(keys))
	for i, k := range keys {
		t[i] = mk(aws.String(k), aws.String(labels[k]))
	}
	return t
}

// createClusterAttempt is one CreateCluster with a new client token: done
// when EKS accepted it; not done, no error, while one of the run's own
// roles (clusterARN, nodeARN) cannot be assumed yet; an error otherwise.
func (p *Provider) createClusterAttempt(ctx context.Context, op string, in *eks.CreateClusterInput, clusterARN, nodeARN string) (*eks.CreateClusterOutput, bool, string, error) {
	attempt := *in
	attempt.ClientRequestToken = aws.String(uuid.NewString())
	out, err := p.eks.CreateCluster(ctx, &attempt)
	if code(err) == "InvalidParameterException" && strings.Contains(err.Error(), "could not be assumed") {
		if strings.Contains(err.Error(), clusterARN) || strings.Contains(err.Error(), nodeARN) {
			return nil, false, "role not yet assumable", nil
		}
		if strings.Contains(err.Error(), "aws-service-role") {
			return nil, false, "", &cloud.Error{Op: op, Kind: "permission", Err: err,
				Msg: "EKS's service-linked role AWSServiceRoleForAmazonEKS does not exist and could not be made: allow iam:CreateServiceLinkedRole for eks.amazonaws.com (docs/cloud.md, Permissions), or create it once with `aws iam create-service-linked-role --aws-service-name eks.amazonaws.com`: " + err.Error()}
		}
	}
	return out, err == nil, "", apiError(op, "eks:CreateCluster", err)
}
