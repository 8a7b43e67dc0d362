package eksfake

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/scaleproof/scaleproof/cloud/cloudfake"
)

// The EKS bearer token as the cluster's authenticator reads it
// (kubernetes-sigs/aws-iam-authenticator, pkg/token/token.go, Verify): the
// prefix, then a base64url presigned sts:GetCallerIdentity URL whose query
// holds only the parameters it allows, which signs the x-k8s-aws-id header
// naming the cluster, and whose X-Amz-Date is at most 15 minutes old; STS
// then checks the signature (here: the fake signs the same request again
// with the secret it knows and compares).
const (
	tokenPrefix     = "k8s-aws-v1."
	tokenMaxLen     = 4096 // aws-iam-authenticator's maxTokenLenBytes: 1024*4
	tokenLifetime   = 15 * time.Minute
	clusterIDHeader = "x-k8s-aws-id"
)

// allowedQuery are the parameters aws-iam-authenticator accepts in the
// presigned URL (parameterWhitelist), lower-cased.
var allowedQuery = map[string]bool{"action": true, "version": true, "x-amz-algorithm": true, "x-amz-credential": true,
	"x-amz-date": true, "x-amz-expires": true, "x-amz-security-token": true, "x-amz-signature": true, "x-amz-signedheaders": true}

var credentialScope = regexp.MustCompile(`^([^/]+)/(\d{8})/([^/]+)/sts/aws4_request$`)

// SetClock sets the clock ClusterAuth judges a token's age by (default
// time.Now).
func (s *Server) SetClock(now func() time.Time) { s.mu.Lock(); s.now = now; s.mu.Unlock() }

// SetCredentials tells the fake an access key and its secret: the only
// keys whose EKS tokens its clusters' API (ClusterAuth) accepts, and the
// key that signed CreateCluster is the cluster's creator.
func (s *Server) SetCredentials(accessKeyID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secrets == nil {
		s.secrets = map[string]string{}
	}
	s.secrets[accessKeyID] = secret
}

// ClusterAuth is the access check of cluster name's API server for a
// cloudfake.Front: 401 unless the bearer token is an EKS token for this
// cluster signed with a key SetCredentials gave, not older than 15 minutes;
// then 401 unless the key has an access entry: the cluster was created with
// authenticationMode API (or API_AND_CONFIG_MAP) and
// bootstrapClusterCreatorAdminPermissions true by that key, and is ACTIVE
// (EKS, "Grant IAM users access to Kubernetes with EKS access entries": an
// IAM principal without an access entry or aws-auth mapping is not
// authenticated).
func (s *Server) ClusterAuth(name string) func(*http.Request) *cloudfake.Refusal {
	return func(r *http.Request) *cloudfake.Refusal {
		key, err := s.verifyToken(cloudfake.BearerToken(r), name)
		if err != nil {
			return &cloudfake.Refusal{Status: http.StatusUnauthorized, Reason: "Unauthorized: " + err.Error()}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		c := s.clusters[name]
		if c == nil || c.status != "ACTIVE" {
			return &cloudfake.Refusal{Status: http.StatusUnauthorized, Reason: "Unauthorized: no active cluster " + name}
		}
		access, _ := c.request["accessConfig"].(map[string]any)
		mode, _ := access["authenticationMode"].(string)
		if c.creator != key || (mode != "API" && mode != "API_AND_CONFIG_MAP") || access["bootstrapClusterCreatorAdminPermissions"] != true {
			return &cloudfake.Refusal{Status: http.StatusUnauthorized, Reason: "Unauthorized: " + key + " has no access entry on " + name}
		}
		return nil
	}
}

// verifyToken checks an EKS token for cluster and returns the access key id
// that signed it.
func (s *Server) verifyToken(tok, cluster string) (string, error) {
	if !strings.HasPrefix(tok, tokenPrefix) || len(tok) > tokenMaxLen {
		return "", fmt.Errorf("token lacks the %q prefix or is over %d bytes", tokenPrefix, tokenMaxLen)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, tokenPrefix))
	if err != nil {
		return "", fmt.Errorf("token is not base64url: %v", err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		return "", fmt.Errorf("token is not a URL: %v", err)
	}
	if want, _ := url.Parse(s.URL); u.Host != want.Host || u.Path != "/" {
		return "", fmt.Errorf("token URL %s://%s%s is not this fake's STS endpoint", u.Scheme, u.Host, u.Path)
	}
	q := u.Query()
	for k := range q {
		if !allowedQuery[strings.ToLower(k)] {
			return "", fmt.Errorf("non-whitelisted query parameter %q", k)
		}
	}
	if q.Get("Action") != "GetCallerIdentity" || q.Get("Version") != "2011-06-15" {
		return "", fmt.Errorf("unexpected action %q version %q", q.Get("Action"), q.Get("Version"))
	}
	signed := strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	hasID := false
	for _, h := range signed {
		hasID = hasID || h == clusterIDHeader
	}
	if !hasID {
		return "", fmt.Errorf("X-Amz-SignedHeaders %q lacks %s", q.Get("X-Amz-SignedHeaders"), clusterIDHeader)
	}
	date, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return "", fmt.Errorf("X-Amz-Date %q: %v", q.Get("X-Amz-Date"), err)
	}
	s.mu.Lock()
	now := s.now
	s.mu.Unlock()
	if now == nil {
		now = time.Now
	}
	if age := now().Sub(date); age > tokenLifetime || age < -time.Minute {
		return "", fmt.Errorf("token issued %s ago: expired (valid %s)", age.Round(time.Second), tokenLifetime)
	}
	m := credentialScope.FindStringSubmatch(q.Get("X-Amz-Credential"))
	if m == nil || q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" {
		return "", fmt.Errorf("credential %q, algorithm %q: not a SigV4 sts presign", q.Get("X-Amz-Credential"), q.Get("X-Amz-Algorithm"))
	}
	key, region := m[1], m[3]
	s.mu.Lock()
	secret, known := s.secrets[key]
	s.mu.Unlock()
	if !known {
		return "", fmt.Errorf("InvalidClientTokenId: the access key %s is not known", key)
	}
	// STS: sign the same request again and compare.
	given := q.Get("X-Amz-Signature")
	for _, k := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token"} {
		q.Del(k)
	}
	again := *u
	again.RawQuery = q.Encode()
	req, err := http.NewRequest(http.MethodGet, again.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set(clusterIDHeader, cluster)
	empty := sha256.Sum256(nil)
	signedURL, _, err := v4.NewSigner().PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: key, SecretAccessKey: secret},
		req, hex.EncodeToString(empty[:]), "sts", region, date)
	if err != nil {
		return "", err
	}
	su, err := url.Parse(signedURL)
	if err != nil || su.Query().Get("X-Amz-Signature") != given {
		return "", fmt.Errorf("SignatureDoesNotMatch: the token is not signed for cluster %s with %s's secret", cluster, key)
	}
	return key, nil
}

// accessKeyOf is the access key id in a SigV4 Authorization header
// ("AWS4-HMAC-SHA256 Credential=AKID/date/region/service/aws4_request, ..."),
// "" when there is none.
func accessKeyOf(r *http.Request) string {
	h := r.Header.Get("Authorization")
	i := strings.Index(h, "Credential=")
	if i < 0 {
		return ""
	}
	cred := h[i+len("Credential="):]
	if j := strings.IndexByte(cred, '/'); j >= 0 {
		return cred[:j]
	}
	return ""
}
