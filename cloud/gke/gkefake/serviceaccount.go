package gkefake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The service account key flow of Google's token endpoint (Google Identity,
// "Using OAuth 2.0 for Server to Server Applications"): the client signs a
// JWT (RS256) with the key's private half, claims iss (the account), aud
// (the token URI) and scope (space-separated), and POSTs it with grant_type
// urn:ietf:params:oauth:grant-type:jwt-bearer; the token it gets has those
// scopes and no others. The fake checks the signature with the public half
// and remembers each token's scopes (TokenScopes).

const jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// ServiceAccountFile writes a service account key file (type
// service_account, a fresh RSA key, token_uri the fake's /token) into dir
// and returns its path (for GOOGLE_APPLICATION_CREDENTIALS).
func (f *Fake) ServiceAccountFile(dir string) (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	f.saKey = &key.PublicKey
	f.mu.Unlock()
	der := x509.MarshalPKCS1PrivateKey(key)
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "p1", "private_key_id": "fake-key",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der})),
		"client_email": "scaleproof@p1.iam.gserviceaccount.com", "client_id": "1", "token_uri": f.URL + "/token"})
	p := filepath.Join(dir, "sa.json")
	return p, os.WriteFile(p, b, 0o600)
}

// TokenScopes are the scopes the token was issued for (nil for a token of
// the authorized-user flow, which carries its consent's scopes).
func (f *Fake) TokenScopes(tok string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scopes[tok]
}

// assertionScopes verifies a jwt-bearer assertion against the service
// account key and returns its scopes. Callers hold f.mu.
func (f *Fake) assertionScopes(assertion string) ([]string, error) {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 || f.saKey == nil {
		return nil, fmt.Errorf("not a JWT signed by a known service account key")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(f.saKey, crypto.SHA256, sum[:], sig); err != nil {
		return nil, fmt.Errorf("invalid JWT signature: %v", err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var c struct {
		Scope string `json:"scope"`
		Aud   string `json:"aud"`
	}
	if err := json.Unmarshal(payload, &c); err != nil || c.Aud != f.URL+"/token" {
		return nil, fmt.Errorf("invalid JWT claims (aud %q): %v", c.Aud, err)
	}
	return strings.Fields(c.Scope), nil
}
