package aks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// GitHub Actions' OIDC ID token for Azure, asked anew for every assertion.
//
// In a GitHub Actions job with `permissions: id-token: write`, the runner
// gives each step ACTIONS_ID_TOKEN_REQUEST_URL and
// ACTIONS_ID_TOKEN_REQUEST_TOKEN: a GET of the URL with
// "&audience=api://AzureADTokenExchange" and the request token as a bearer
// answers {"value": "<JWT>"}, an ID token that lives 5 minutes (GitHub docs,
// "About security hardening with OpenID Connect" and "Configuring OpenID
// Connect in Azure"). Microsoft Entra takes it as a client assertion of a
// federated credential (azidentity.NewClientAssertionCredential).
//
// Why not the file the login action keeps fresh: azidentity's workload
// identity credential reads AZURE_FEDERATED_TOKEN_FILE at most every 10
// minutes (azidentity v1.15.0, workload_identity.go, getAssertion: "w.expires
// = now.Add(10 * time.Minute)"), so a token asked 5 to 10 minutes after a read
// presents an expired assertion and Entra answers AADSTS700024 ("Client
// assertion is not within its valid time range"). A callback that asks
// GitHub for each assertion has no cache to go stale.

// Environment variables of the GitHub Actions runner and of azidentity.
const (
	envIDTokenURL   = "ACTIONS_ID_TOKEN_REQUEST_URL"
	envIDTokenToken = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
	envClientID     = "AZURE_CLIENT_ID"
	envTenantID     = "AZURE_TENANT_ID"
	// AzureADTokenExchange is the audience Entra requires of a federated
	// credential's assertion.
	azureADTokenExchange = "api://AzureADTokenExchange"
)

// githubIDToken returns a callback that asks GitHub Actions for a fresh ID
// token with audience api://AzureADTokenExchange on every call: no cache,
// safe for concurrent use. reqURL and reqToken are the runner's
// ACTIONS_ID_TOKEN_REQUEST_URL and _TOKEN. Errors name the HTTP status and
// GitHub's message.
func githubIDToken(hc *http.Client, reqURL, reqToken string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		u, err := url.Parse(reqURL)
		if err != nil {
			return "", fmt.Errorf("github id token: %s: %w", envIDTokenURL, err)
		}
		q := u.Query()
		q.Set("audience", azureADTokenExchange)
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return "", fmt.Errorf("github id token: %w", err)
		}
		req.Header.Set("Authorization", "bearer "+reqToken)
		req.Header.Set("Accept", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return "", fmt.Errorf("github id token: %w", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("github id token: HTTP %d: %.200s (does the job have `permissions: id-token: write`?)", resp.StatusCode, body)
		}
		var v struct {
			Value string `json:"value"`
		}
		if err := json.Unmarshal(body, &v); err != nil || v.Value == "" {
			return "", fmt.Errorf("github id token: no token in the answer (%v)", err)
		}
		return v.Value, nil
	}
}

// gitHubActionsCredential is, inside a GitHub Actions job that may ask for
// an ID token and names an Azure client and tenant, a client assertion
// credential whose every assertion is a fresh GitHub ID token; ok false
// elsewhere (the caller uses DefaultAzureCredential).
func gitHubActionsCredential(opts *azidentity.ClientAssertionCredentialOptions) (azcore.TokenCredential, bool, error) {
	reqURL, reqToken := os.Getenv(envIDTokenURL), os.Getenv(envIDTokenToken)
	client, tenant := os.Getenv(envClientID), os.Getenv(envTenantID)
	if reqURL == "" || reqToken == "" {
		return nil, false, nil
	}
	if client == "" || tenant == "" {
		return nil, false, errors.New("aks: in GitHub Actions with an ID token, set AZURE_CLIENT_ID and AZURE_TENANT_ID (the federated credential's app and tenant)")
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	c, err := azidentity.NewClientAssertionCredential(tenant, client, githubIDToken(hc, reqURL, reqToken), opts)
	if err != nil {
		return nil, false, fmt.Errorf("aks: client assertion credential: %w", err)
	}
	return c, true, nil
}
