package eks_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/cloudfake"
	"github.com/scaleproof/scaleproof/cloud/eks"
	"github.com/scaleproof/scaleproof/cloud/eks/eksfake"
)

// TestClusterTokenMeetsTheAuthenticator: the provider's own token, sent to
// the fake cluster's API as aws-iam-authenticator and EKS access entries
// judge it, is accepted; a token for another cluster, signed with a wrong
// secret, by a key without an access entry, or older than 15 minutes is
// refused with 401, and nothing reaches the API server behind.
func TestClusterTokenMeetsTheAuthenticator(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	fake.SetCredentials("AKIDTEST", "test-secret")
	fake.SetCredentials("AKIDOTHER", "other-secret")
	api, up, reached := cloudfake.StubAPIServer()
	defer api.Close()
	name := cloud.ClusterName("20261202-0310")
	front, err := cloudfake.NewFront(up, fake.ClusterAuth(name))
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	fake.APIServer, fake.CAData = front.URL, front.CA

	p := newProvider(t, fake)
	ctx := context.Background()
	c, err := p.Create(ctx, name, labels())
	if err != nil {
		t.Fatal(err)
	}
	other := cloud.Cluster{Name: "scaleproof-other", Server: c.Server}
	withKey := func(id, secret string) *eks.Provider {
		p, err := eks.NewWithConfig(cloud.Options{Region: fake.Region, RunID: "20261202-0310", TTL: time.Hour, Endpoint: fake.URL},
			aws.Config{Region: fake.Region, Credentials: credentials.NewStaticCredentialsProvider(id, secret, "")})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CAData)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, tc := range []struct {
		name    string
		p       *eks.Provider
		cluster cloud.Cluster
		age     time.Duration
		want    int
	}{
		{"the creator's token for this cluster", p, c, 0, http.StatusOK},
		{"14 minutes old", p, c, 14 * time.Minute, http.StatusOK},
		{"16 minutes old", p, c, 16 * time.Minute, http.StatusUnauthorized},
		{"a token for another cluster", p, other, 0, http.StatusUnauthorized},
		{"signed with a wrong secret", withKey("AKIDTEST", "not-the-secret"), c, 0, http.StatusUnauthorized},
		{"a key the cloud does not know", withKey("AKIDNOBODY", "x"), c, 0, http.StatusUnauthorized},
		{"a key without an access entry", withKey("AKIDOTHER", "other-secret"), c, 0, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached()
			tok, err := tc.p.Token(ctx, tc.cluster)
			if err != nil {
				t.Fatal(err)
			}
			fake.SetClock(func() time.Time { return time.Now().Add(tc.age) })
			defer fake.SetClock(nil)
			req, _ := http.NewRequest(http.MethodGet, c.Server+"/api", nil)
			req.Header.Set("Authorization", "Bearer "+tok.Value)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("GET /api = %d, want %d", resp.StatusCode, tc.want)
			}
			if got := reached() - before; (tc.want == http.StatusOK) != (got == 1) {
				t.Errorf("the API server behind saw %d requests", got)
			}
		})
	}
}
