package eks

import (
	"context"
	"encoding/base64"
	"maps"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	ecrtypes "github.com/aws/aws-sdk-go-v2/service/ecr/types"
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/scaleproof/scaleproof/cloud"
)

// EnsureRegistry finds the ECR repository scaleproof-ref
// (DescribeRepositories) or creates it tagged with labels
// (CreateRepository; it is then in Created), and returns its auth: user
// "AWS" and the password of GetAuthorizationToken's token (base64 of
// "AWS:<password>", valid 12 hours). An existing scaleproof repository whose
// expiry is earlier than labels' gets labels' tags (TagResource), so the
// janitor does not delete it under this run. Repository is
// <account>.dkr.ecr.<region>.amazonaws.com/scaleproof-ref, its host replaced
// by Options.RegistryEndpoint when set (tests).
func (p *Provider) EnsureRegistry(ctx context.Context, labels map[string]string) (cloud.Registry, error) {
	op := "ensure ECR repository " + RepositoryName(p.o.RunID)
	var reg cloud.Registry
	var repo *ecrtypes.Repository
	d, err := p.ecr.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{RepositoryName(p.o.RunID)}})
	switch {
	case err == nil && len(d.Repositories) > 0:
		repo = &d.Repositories[0]
		if err := p.extendRepository(ctx, op, repo, labels); err != nil {
			return reg, err
		}
	case err == nil || notFound(err):
		p.progress("creating ECR repository %s", RepositoryName(p.o.RunID))
		out, err := p.ecr.CreateRepository(ctx, &ecr.CreateRepositoryInput{
			RepositoryName: aws.String(RepositoryName(p.o.RunID)),
			Tags:           ecrTags(labels),
		})
		if err != nil {
			return reg, apiError(op, "ecr:CreateRepository", err)
		}
		repo = out.Repository
		reg.Created = []cloud.Resource{{Kind: "repository", Name: RepositoryName(p.o.RunID), ID: aws.ToString(repo.RepositoryArn), Labels: maps.Clone(labels)}}
	default:
		return reg, apiError(op, "ecr:DescribeRepositories", err)
	}

	reg.Repository = aws.ToString(repo.RepositoryUri)
	if reg.Repository == "" {
		reg.Repository = aws.ToString(repo.RegistryId) + ".dkr.ecr." + p.o.Region + ".amazonaws.com/" + RepositoryName(p.o.RunID)
	}
	if h := registryHost(p.o.RegistryEndpoint); h != "" {
		_, path, _ := strings.Cut(reg.Repository, "/")
		reg.Repository = h + "/" + path
	}

	tok, err := p.ecr.GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{})
	if err != nil {
		return reg, apiError(op, "ecr:GetAuthorizationToken", err)
	}
	if len(tok.AuthorizationData) == 0 {
		return reg, &cloud.Error{Op: op, Kind: "other", Msg: "GetAuthorizationToken returned no authorization data"}
	}
	raw, err := base64.StdEncoding.DecodeString(aws.ToString(tok.AuthorizationData[0].AuthorizationToken))
	if err != nil {
		return reg, &cloud.Error{Op: op, Kind: "other", Msg: "the ECR authorization token is not base64", Err: err}
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return reg, &cloud.Error{Op: op, Kind: "other", Msg: "the ECR authorization token is not user:password"}
	}
	reg.Auth = &authn.Basic{Username: user, Password: pass}
	return reg, nil
}

// extendRepository moves an existing scaleproof repository's expiry up to
// labels' when it is earlier; a foreign repository is left as it is.
func (p *Provider) extendRepository(ctx context.Context, op string, repo *ecrtypes.Repository, labels map[string]string) error {
	t, err := p.ecr.ListTagsForResource(ctx, &ecr.ListTagsForResourceInput{ResourceArn: repo.RepositoryArn})
	if err != nil {
		return apiError(op, "ecr:ListTagsForResource", err)
	}
	have := cloud.Resource{Labels: fromECRTags(t.Tags)}
	if !have.Ours() {
		return nil
	}
	old, _ := strconv.ParseInt(have.Labels[cloud.LabelExpiresAt], 10, 64)
	want, err := strconv.ParseInt(labels[cloud.LabelExpiresAt], 10, 64)
	if err != nil || want <= old {
		return nil
	}
	if _, err := p.ecr.TagResource(ctx, &ecr.TagResourceInput{ResourceArn: repo.RepositoryArn, Tags: ecrTags(labels)}); err != nil {
		return apiError(op, "ecr:TagResource", err)
	}
	return nil
}

// registryHost is the host[:port] of a RegistryEndpoint given as a host or a
// URL.
func registryHost(s string) string {
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return u.Host
	}
	return strings.TrimRight(s, "/")
}

func ecrTags(labels map[string]string) []ecrtypes.Tag {
	return awsTags(labels, func(k, v *string) ecrtypes.Tag { return ecrtypes.Tag{Key: k, Value: v} })
}

func fromECRTags(tags []ecrtypes.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}
