// Package eks is the EKS cloud.Provider, with aws-sdk-go-v2 (eks, ec2, iam,
// sts, ecr).
//
// Up creates, in this order (cloud.Cluster.Created keeps the order, so a
// failure halfway leaves Down able to delete what exists, in reverse):
//
//   - the cluster IAM role (trusted by eks.amazonaws.com, with the AWS
//     managed policies EKS Auto Mode needs) under the IAM path /scaleproof/;
//   - the node IAM role (trusted by ec2.amazonaws.com, the Auto Mode node
//     policies) under the same path;
//   - the cluster itself, in the subnets of the region's default VPC (one
//     default subnet an Availability Zone, leaving out the zones EKS refuses,
//     matched by zone ID since names map to IDs per account; Create refuses with a clear error
//     when the region has no default VPC or it has subnets in fewer than two
//     zones), with authentication mode API and an admin access entry for the
//     caller, and EKS Auto Mode on (compute, block storage and load
//     balancing): the cloud adds and removes nodes for the pods the console
//     asks for, with no Cluster Autoscaler to install.
//
// Every resource is tagged with the run's cloud.Labels. The kube API token is
// made in-process (Token: a presigned sts:GetCallerIdentity URL), never with
// aws-iam-authenticator. The image goes to the ECR repository scaleproof-ref
// (EnsureRegistry).
//
// No AWS endpoint is reachable where this is built: every call is tested
// against eksfake, a local fake of the five APIs (docs/cloud.md).
package eks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/scaleproof/scaleproof/cloud"
)

// RolePath is the IAM path every role a run creates lives under; List reads
// only roles under it.
const RolePath = "/scaleproof/"

// RepositoryName is the run's own ECR repository the scaleproof-ref image
// is pushed to: scaleproof-ref/<run id>. One per run, as on GKE and AKS,
// because Down deletes what the run created: a repository shared by every
// run was deleted by one run's Down under another run that had found it
// and pushed to it. The janitor deletes a repository a crashed run left.
func RepositoryName(runID string) string {
	return "scaleproof-ref/" + strings.Trim(cloud.RunIDLabelValue(runID), "-_")
}

// Provider is EKS in one region. Build it with New.
type Provider struct {
	o   cloud.Options
	log *slog.Logger
	out io.Writer
	now func() time.Time

	eks *eks.Client
	ec2 *ec2.Client
	iam *iam.Client
	sts *sts.Client
	ecr *ecr.Client
}

var _ cloud.Provider = (*Provider)(nil)

// New returns the EKS provider for o.Region (--region, required). It loads
// the AWS credentials the SDK's default chain finds (environment, shared
// files, web identity from the nightly workflow's OIDC federation). With
// o.Endpoint set (a local fake) every client goes there, shared config files
// and the instance metadata service are not read, and, unless
// AWS_ACCESS_KEY_ID is set, static test credentials are used, so nothing
// leaves the fake.
func New(o cloud.Options) (*Provider, error) {
	if o.Region == "" {
		return nil, errors.New("--region is required for eks")
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(o.Region)}
	if o.Endpoint != "" {
		opts = append(opts,
			config.WithSharedConfigFiles([]string{}),
			config.WithSharedCredentialsFiles([]string{}),
			config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
			opts = append(opts, config.WithCredentialsProvider(
				credentials.NewStaticCredentialsProvider("AKIDSCALEPROOFFAKE", "fake-secret", "")))
		}
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("eks: load AWS config: %w", err)
	}
	return NewWithConfig(o, cfg)
}

// NewWithConfig is New with an aws.Config the caller made (tests: static
// credentials). cfg.Region is set to o.Region.
func NewWithConfig(o cloud.Options, cfg aws.Config) (*Provider, error) {
	if o.Region == "" {
		return nil, errors.New("--region is required for eks")
	}
	cfg.Region = o.Region
	if o.NodeMin <= 0 && o.NodeMax <= 0 {
		// 0 or below for both: the defaults (WithDefaults fills only 0, 0)
		o.NodeMin, o.NodeMax = cloud.DefaultNodeMin, cloud.DefaultNodeMax
	}
	o = o.WithDefaults("")
	if o.NodeMax < o.NodeMin {
		return nil, fmt.Errorf("eks: the node maximum (%d) is below the minimum (%d)", o.NodeMax, o.NodeMin)
	}
	p := &Provider{o: o, log: o.Log, out: o.Out, now: o.Now}
	var base *string
	if o.Endpoint != "" {
		base = aws.String(strings.TrimRight(o.Endpoint, "/"))
	}
	p.eks = eks.NewFromConfig(cfg, func(c *eks.Options) { c.BaseEndpoint = base })
	p.ec2 = ec2.NewFromConfig(cfg, func(c *ec2.Options) { c.BaseEndpoint = base })
	p.iam = iam.NewFromConfig(cfg, func(c *iam.Options) { c.BaseEndpoint = base })
	p.sts = sts.NewFromConfig(cfg, func(c *sts.Options) { c.BaseEndpoint = base })
	p.ecr = ecr.NewFromConfig(cfg, func(c *ecr.Options) { c.BaseEndpoint = base })
	return p, nil
}

// Name is the Platform column.
func (p *Provider) Name() string { return "EKS" }

func (p *Provider) progress(format string, args ...any) {
	fmt.Fprintf(p.out, "eks: "+format+"\n", args...)
	p.log.Info(fmt.Sprintf(format, args...), "platform", "eks")
}

// partition is the ARN partition of region: "aws-cn" for the China regions,
// "aws-us-gov" for GovCloud, "aws" otherwise.
func partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

// roleNames are the names of the two IAM roles a cluster named cluster gets
// (at most 48 characters: IAM allows 64).
func roleNames(cluster string) (clusterRole, nodeRole string) {
	return cluster + "-cluster", cluster + "-node"
}
