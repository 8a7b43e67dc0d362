package cloudfake

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// Refusal is how a managed cluster's API server refuses a request: Status
// 401 when the bearer token does not authenticate (Kubernetes,
// "Authenticating": an authenticator that rejects the token ends the request
// with 401), 403 when it does but the caller may not (the cloud's
// authorizer).
type Refusal struct {
	Status int
	Reason string
}

// Upstream is the real API server a Front forwards to: its URL, its CA
// (PEM) and a bearer token it accepts (a kind cluster's, say).
type Upstream struct {
	Server string
	CA     []byte
	Token  string
}

// Front stands for a managed cluster's API server in an end-to-end test: a
// TLS server on 127.0.0.1 that checks every request's bearer token the way
// the cloud does (Check, given by the cloud's fake: an EKS token verified as
// STS would, an Entra token plus an Azure RBAC assignment) and forwards what
// passes to a real API server as Upstream.Token. So the provider's own token
// and the cloud's own access rules meet a real Kubernetes API, not a
// stand-in that accepts whatever it is shown.
type Front struct {
	// URL is https://127.0.0.1:port; CA the PEM of its certificate.
	URL string
	CA  []byte

	srv *httptest.Server
}

// NewFront starts a Front. check returns nil to forward the request, or
// the refusal. A refused POST of a SelfSubjectAccessReview with Status 403
// is answered as Kubernetes does for an authenticated caller the authorizer
// denies: 201 with status.allowed false (any authenticated user may create
// one; the review says what the caller may do).
func NewFront(up Upstream, check func(*http.Request) *Refusal) (*Front, error) {
	u, err := url.Parse(up.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("front: upstream %q: want https://host:port", up.Server)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(up.CA) {
		return nil, errors.New("front: upstream CA: no PEM certificate")
	}
	// HTTP/1.1 only, both sides: port-forwards are an Upgrade (SPDY or
	// WebSocket), which the proxy passes through on HTTP/1.1.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Header.Set("Authorization", "Bearer "+up.Token)
		},
		Transport:     tr,
		FlushInterval: -1, // watches and logs stream
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rf := check(r); rf != nil {
			refuse(w, r, rf)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	srv.StartTLS()
	return &Front{URL: srv.URL, CA: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), srv: srv}, nil
}

// Host is the Front's host:port.
func (f *Front) Host() string { return strings.TrimPrefix(f.URL, "https://") }

// Close stops the Front.
func (f *Front) Close() { f.srv.Close() }

func refuse(w http.ResponseWriter, r *http.Request, rf *Refusal) {
	w.Header().Set("Content-Type", "application/json")
	if rf.Status == http.StatusForbidden && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/selfsubjectaccessreviews") {
		var review map[string]any
		if err := json.NewDecoder(r.Body).Decode(&review); err == nil {
			review["status"] = map[string]any{"allowed": false, "reason": rf.Reason}
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(review)
			return
		}
	}
	reason := map[int]string{http.StatusUnauthorized: "Unauthorized", http.StatusForbidden: "Forbidden"}[rf.Status]
	w.WriteHeader(rf.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": rf.Reason, "reason": reason, "code": rf.Status})
}

// BearerToken is the token of r's "Authorization: Bearer" header, "" when
// there is none.
func BearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// StubAPIServer is a TLS server standing for the real API server behind a
// Front in unit tests: it answers GET /api with APIVersions to the bearer
// token up.Token and 401 to any other, and reached counts the requests it
// answered. Close srv when done.
func StubAPIServer() (srv *httptest.Server, up Upstream, reached func() int) {
	var mu sync.Mutex
	n := 0
	const token = "upstream-token"
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if BearerToken(r) != token {
			http.Error(w, "bad upstream token", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		n++
		mu.Unlock()
		_, _ = w.Write([]byte(`{"kind":"APIVersions","versions":["v1"]}`))
	}))
	up = Upstream{Server: srv.URL, Token: token, CA: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	return srv, up, func() int { mu.Lock(); defer mu.Unlock(); return n }
}
