package aksfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/cloud/cloudfake"
)

// Microsoft Entra ID, as much of it as a client secret credential
// (azidentity.NewDefaultAzureCredential's EnvironmentCredential with
// AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET and
// AZURE_AUTHORITY_HOST pointing here) uses: the tenant's OpenID
// configuration and the v2.0 token endpoint's client credentials grant
// (Microsoft identity platform, "OAuth 2.0 client credentials flow": POST
// /{tenant}/oauth2/v2.0/token with client_id, client_secret and one
// "<resource>/.default" scope). Each token is a JWT whose aud is the
// resource and whose oid is the app's service principal ("Access token
// claims reference"); ARM refuses one issued for another audience and the
// clusters' API (ClusterAuth) one not issued for AKS's server app.

// AKSServerApp is the audience of tokens for an AKS cluster with Microsoft
// Entra integration (AKS, "Use kubelogin": the fixed server application id
// 6dae42f8-4368-4678-94ff-3960e28e3630).
const AKSServerApp = "6dae42f8-4368-4678-94ff-3960e28e3630"

// ClusterAdminRole is the role definition id of "Azure Kubernetes Service
// RBAC Cluster Admin" (Azure built-in roles, Containers).
const ClusterAdminRole = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"

type app struct{ tenant, secret, oid string }

type claims struct {
	Aud, Oid, Tid, Appid string
	Exp                  int64
}

// AddApp registers an app (a service principal with a client secret) in
// tenant: its tokens carry oid objectID.
func (s *Server) AddApp(tenant, clientID, secret, objectID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apps == nil {
		s.apps = map[string]app{}
	}
	s.apps[clientID] = app{tenant: tenant, secret: secret, oid: objectID}
}

// AuthorityHost is the AZURE_AUTHORITY_HOST that reaches this fake's Entra.
func (s *Server) AuthorityHost() string { return s.URL + "/" }

func isEntra(path string) bool {
	return strings.HasSuffix(path, "/v2.0/.well-known/openid-configuration") || strings.HasSuffix(path, "/oauth2/v2.0/token")
}

func (s *Server) entra(w http.ResponseWriter, r *http.Request) {
	tenant := strings.Split(strings.Trim(r.URL.Path, "/"), "/")[0]
	base := s.URL + "/" + tenant
	if strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration") {
		writeJSON(w, http.StatusOK, map[string]string{
			"token_endpoint":         base + "/oauth2/v2.0/token",
			"authorization_endpoint": base + "/oauth2/v2.0/authorize",
			"issuer":                 base + "/v2.0",
		})
		return
	}
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		entraError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body must be a form POST.")
		return
	}
	f := r.PostForm
	s.mu.Lock()
	a, ok := s.apps[f.Get("client_id")]
	s.mu.Unlock()
	switch {
	case f.Get("grant_type") != "client_credentials":
		entraError(w, http.StatusBadRequest, "unsupported_grant_type", 70003, "The app requested an unsupported grant type.")
		return
	case !ok || a.tenant != tenant:
		entraError(w, http.StatusBadRequest, "unauthorized_client", 700016, "Application with identifier '"+f.Get("client_id")+"' was not found in the directory '"+tenant+"'.")
		return
	case f.Get("client_secret") != a.secret:
		entraError(w, http.StatusUnauthorized, "invalid_client", 7000215, "Invalid client secret provided.")
		return
	}
	// MSAL adds the OpenID Connect scopes to every request; Entra leaves
	// them out of a client credentials grant.
	var scopes []string
	for _, sc := range strings.Fields(f.Get("scope")) {
		if sc != "openid" && sc != "offline_access" && sc != "profile" {
			scopes = append(scopes, sc)
		}
	}
	if len(scopes) != 1 || !strings.HasSuffix(scopes[0], "/.default") {
		entraError(w, http.StatusBadRequest, "invalid_scope", 1002012, "The provided value for scope is not valid: client credential flows must have one scope value with /.default suffixed to the resource identifier.")
		return
	}
	c := claims{Aud: strings.TrimSuffix(scopes[0], "/.default"), Oid: a.oid, Tid: tenant, Appid: f.Get("client_id"), Exp: time.Now().Add(time.Hour).Unix()}
	payload, _ := json.Marshal(map[string]any{"aud": c.Aud, "oid": c.Oid, "tid": c.Tid, "appid": c.Appid, "exp": c.Exp,
		"iss": "https://sts.windows.net/" + tenant + "/"})
	s.mu.Lock()
	s.seq++
	hdr, _ := json.Marshal(map[string]string{"typ": "JWT", "alg": "RS256", "kid": fmt.Sprintf("fake-%d", s.seq)})
	tok := base64.RawURLEncoding.EncodeToString(hdr) + "." + base64.RawURLEncoding.EncodeToString(payload) + ".ZmFrZQ"
	if s.issued == nil {
		s.issued = map[string]claims{}
	}
	s.issued[tok] = c
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": tok})
}

func entraError(w http.ResponseWriter, status int, code string, aadsts int, msg string) {
	writeJSON(w, status, map[string]any{"error": code, "error_description": fmt.Sprintf("AADSTS%d: %s", aadsts, msg), "error_codes": []int{aadsts}})
}

// tokenClaims are the claims of a token this fake's Entra issued; ok false
// for any other.
func (s *Server) tokenClaims(tok string) (claims, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.issued[tok]
	return c, ok
}

// SetRBACPropagation makes each role assignment take effect for the
// clusters' API only after n checks (Azure RBAC, "Troubleshoot": a new
// assignment can take up to 10 minutes to apply).
func (s *Server) SetRBACPropagation(n int) { s.mu.Lock(); s.rbacDelay = n; s.mu.Unlock() }

// ClusterAuth is the access check of managed cluster name's API server for
// a cloudfake.Front, as AKS with Microsoft Entra integration and Azure RBAC
// for Kubernetes authorization does it: 401 unless the bearer token is one
// this fake's Entra issued for AKSServerApp and not expired; 403 unless the
// cluster has aadProfile.enableAzureRBAC and the token's oid holds "Azure
// Kubernetes Service RBAC Cluster Admin" on the cluster or a scope above it
// (Azure RBAC's inheritance), applied (SetRBACPropagation).
func (s *Server) ClusterAuth(name string) func(*http.Request) *cloudfake.Refusal {
	return func(r *http.Request) *cloudfake.Refusal {
		tok := cloudfake.BearerToken(r)
		c, ok := s.tokenClaims(tok)
		switch {
		case !ok:
			return &cloudfake.Refusal{Status: http.StatusUnauthorized, Reason: "Unauthorized: the token was not issued by Microsoft Entra ID"}
		case c.Aud != AKSServerApp && c.Aud != "api://"+AKSServerApp:
			return &cloudfake.Refusal{Status: http.StatusUnauthorized, Reason: "Unauthorized: the token's audience " + c.Aud + " is not the AKS server app " + AKSServerApp}
		case time.Now().Unix() > c.Exp:
			return &cloudfake.Refusal{Status: http.StatusUnauthorized, Reason: "Unauthorized: the token has expired"}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		var cluster *Resource
		for _, res := range s.res {
			if res.Type == ManagedClusters && res.Name == name {
				cluster = res
			}
		}
		if cluster == nil {
			return &cloudfake.Refusal{Status: http.StatusUnauthorized, Reason: "Unauthorized: no managed cluster " + name}
		}
		aad, _ := cluster.Properties["aadProfile"].(map[string]any)
		denied := &cloudfake.Refusal{Status: http.StatusForbidden, Reason: fmt.Sprintf(
			"User %q does not have access to the resource in Azure. Update role assignment to allow access.", c.Oid)}
		if aad["enableAzureRBAC"] != true {
			return denied
		}
		for id, res := range s.res {
			if res.Type != RoleAssignments || res.Properties["principalId"] != c.Oid {
				continue
			}
			def, _ := res.Properties["roleDefinitionId"].(string)
			scope, _ := res.Properties["scope"].(string)
			if !strings.HasSuffix(strings.ToLower(def), "/"+ClusterAdminRole) || !strings.HasPrefix(strings.ToLower(cluster.ID), strings.ToLower(scope)) {
				continue
			}
			if s.applied[id] < s.rbacDelay {
				s.applied[id]++
				return denied
			}
			return nil
		}
		return denied
	}
}
