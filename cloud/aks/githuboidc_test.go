package aks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// oidcRig is GitHub's ID token endpoint and Microsoft Entra's token endpoint
// on one injected clock: GitHub's ID tokens live 5 minutes (GitHub docs,
// "About security hardening with OpenID Connect"), and Entra refuses an
// expired client assertion with AADSTS700024 ("Client assertion is not
// within its valid time range"; Microsoft identity platform, "AADSTS error
// codes").
type oidcRig struct {
	mu       sync.Mutex
	now      time.Time
	issued   map[string]time.Time // GitHub ID token -> issue time
	n        int
	refusals []string
}

func (r *oidcRig) advance(d time.Duration) { r.mu.Lock(); r.now = r.now.Add(d); r.mu.Unlock() }

func (r *oidcRig) github(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("Authorization") != "bearer req-token" || req.URL.Query().Get("audience") != "api://AzureADTokenExchange" {
		http.Error(w, `{"message":"bad request token or audience"}`, http.StatusUnauthorized)
		return
	}
	r.mu.Lock()
	r.n++
	tok := fmt.Sprintf("gh-id-token-%d", r.n)
	r.issued[tok] = r.now
	r.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]string{"value": tok})
}

func (r *oidcRig) entra(w http.ResponseWriter, req *http.Request) {
	host := "https://" + req.Host
	switch {
	case strings.HasSuffix(req.URL.Path, "/.well-known/openid-configuration"):
		json.NewEncoder(w).Encode(map[string]string{
			"token_endpoint":         host + "/tenant-1/oauth2/v2.0/token",
			"authorization_endpoint": host + "/tenant-1/oauth2/v2.0/authorize",
			"issuer":                 host + "/tenant-1/v2.0",
		})
	case strings.HasSuffix(req.URL.Path, "/oauth2/v2.0/token"):
		_ = req.ParseForm()
		a := req.PostForm.Get("client_assertion")
		r.mu.Lock()
		at, ok := r.issued[a]
		valid := ok && r.now.Before(at.Add(5*time.Minute))
		if !valid {
			r.refusals = append(r.refusals, fmt.Sprintf("%s at +%s", a, r.now.Sub(time.Time{}.Add(time.Hour))))
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !valid {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"error": "invalid_client",
				"error_description": "AADSTS700024: Client assertion is not within its valid time range.", "error_codes": []int{700024}})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"token_type": "Bearer", "expires_in": 3600, "access_token": "aad-" + a})
	default:
		http.NotFound(w, req)
	}
}

// TestGitHubAssertionNeverStale: a run longer than 12 minutes asks Entra
// for a token every minute (a new scope each time, so the credential cannot
// answer from its own cache and must present an assertion). With a fresh
// GitHub ID token per assertion every request succeeds; an assertion kept
// for 10 minutes (what azidentity's workload identity credential does with
// the token file) is refused once it is over 5 minutes old, so the rig
// catches a stale assertion.
func TestGitHubAssertionNeverStale(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cacheFor  time.Duration // 0: ask GitHub every time
		wantFails bool
	}{
		{"a fresh GitHub ID token per assertion", 0, false},
		{"an assertion read once per 10 minutes", 10 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &oidcRig{now: time.Time{}.Add(time.Hour), issued: map[string]time.Time{}}
			gh := httptest.NewServer(http.HandlerFunc(r.github))
			defer gh.Close()
			entra := httptest.NewTLSServer(http.HandlerFunc(r.entra))
			defer entra.Close()

			get := githubIDToken(gh.Client(), gh.URL+"/_apis/idtoken?api-version=2.0", "req-token")
			if tc.cacheFor > 0 {
				var mu sync.Mutex
				var last string
				var readAt time.Time
				fresh := get
				get = func(ctx context.Context) (string, error) {
					mu.Lock()
					defer mu.Unlock()
					r.mu.Lock()
					now := r.now
					r.mu.Unlock()
					if last == "" || !now.Before(readAt.Add(tc.cacheFor)) {
						tok, err := fresh(ctx)
						if err != nil {
							return "", err
						}
						last, readAt = tok, now
					}
					return last, nil
				}
			}
			cred, err := azidentity.NewClientAssertionCredential("tenant-1", "client-1", get, &azidentity.ClientAssertionCredentialOptions{
				ClientOptions:            policy.ClientOptions{Cloud: azcloud.Configuration{ActiveDirectoryAuthorityHost: entra.URL + "/"}, Transport: entra.Client()},
				DisableInstanceDiscovery: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			fails := 0
			for m := 0; m <= 13; m++ {
				_, err := cred.GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{fmt.Sprintf("https://scope-%d.example/.default", m)}})
				if err != nil {
					fails++
					if !tc.wantFails {
						t.Errorf("minute %d: %v", m, err)
					}
				}
				r.advance(time.Minute)
			}
			if tc.wantFails && fails == 0 {
				t.Errorf("an assertion kept for %s was never refused: the rig does not check the assertion's age", tc.cacheFor)
			}
			if !tc.wantFails && r.n < 14 {
				t.Errorf("GitHub was asked %d times for 14 token requests: the assertion is cached", r.n)
			}
			t.Logf("%d of 14 token requests refused; GitHub asked %d times; refused: %v", fails, r.n, r.refusals)
		})
	}
}
