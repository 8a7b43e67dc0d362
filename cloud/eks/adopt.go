package eks

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/scaleproof/scaleproof/cloud"
)

// Adopt reads the existing cluster name (DescribeCluster): its endpoint and
// CA. It must be ACTIVE. Adopted is true and Created empty, so Down never
// deletes it. The caller needs an access entry on it (or its aws-auth
// mapping) to deploy.
func (p *Provider) Adopt(ctx context.Context, name string) (cloud.Cluster, error) {
	op := "adopt cluster " + name
	d, err := p.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
	if err != nil {
		return cloud.Cluster{}, apiError(op, "eks:DescribeCluster", err)
	}
	if d.Cluster.Status != ekstypes.ClusterStatusActive {
		return cloud.Cluster{}, &cloud.Error{Op: op, Kind: "other",
			Msg: fmt.Sprintf("the cluster is %s, not ACTIVE", d.Cluster.Status)}
	}
	c := cloud.Cluster{Name: name, Adopted: true}
	if err := fillEndpoint(&c, d.Cluster, op); err != nil {
		return cloud.Cluster{}, err
	}
	return c, nil
}
