package gke

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"cloud.google.com/go/container/apiv1/containerpb"

	"github.com/scaleproof/scaleproof/cloud"
)

// Adopt reads the existing cluster name (Adopted: Down never deletes it).
func (p *Provider) Adopt(ctx context.Context, name string) (cloud.Cluster, error) {
	c := cloud.Cluster{Name: name, Adopted: true}
	got, err := p.get(ctx, name)
	if err != nil {
		return c, cloudErr("adopt cluster "+name+" in "+p.parent(), err)
	}
	if got.GetStatus() != containerpb.Cluster_RUNNING {
		return c, &cloud.Error{Op: "adopt cluster " + name, Kind: "other", Msg: "cluster is " + got.GetStatus().String() + ", not RUNNING"}
	}
	c.Server, c.CAData, err = endpoint(got)
	return c, err
}

// endpoint is the cluster's API server URL and CA bundle.
func endpoint(c *containerpb.Cluster) (string, []byte, error) {
	ep := c.GetEndpoint()
	if ep == "" {
		return "", nil, fmt.Errorf("cluster %s: %w", c.GetName(), errNoEndpoint)
	}
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	ca, err := base64.StdEncoding.DecodeString(c.GetMasterAuth().GetClusterCaCertificate())
	if err != nil {
		return "", nil, fmt.Errorf("cluster %s: CA certificate: %w", c.GetName(), err)
	}
	return ep, ca, nil
}

func fmtOut(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}
