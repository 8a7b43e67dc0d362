package aks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/authorization/armauthorization/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerregistry/armcontainerregistry"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/uuid"

	"github.com/scaleproof/scaleproof/cloud"
)

// ACRUsername is the user name that goes with an ACR refresh token (the
// password) in Basic auth: ACR's documented all-zero GUID.
const ACRUsername = "00000000-0000-0000-0000-000000000000"

// AcrPullRoleID is the id of the built-in AcrPull role definition.
const AcrPullRoleID = "7f951dda-4ed3-4680-a7ca-43fe172d538d"

// RegistryName is the ACR registry of a run: "scaleproof" and the run id's
// letters and digits, 5 to 50 characters (ACR names are alphanumeric and
// globally unique).
func RegistryName(runID string) string {
	var b strings.Builder
	b.WriteString("scaleproof")
	for _, r := range cloud.RunIDLabelValue(runID) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	s := b.String()
	if len(s) > 50 {
		s = s[:50]
	}
	return s
}

// EnsureRegistry finds or creates (Basic SKU, admin user off, tagged with
// labels, in --resource-group, created first when missing) the run's ACR
// registry, and returns its repository and a Basic authenticator of
// ACRUsername and an ACR refresh token got by exchanging an AAD token
// (POST https://<login server>/oauth2/exchange, grant_type=access_token).
// When Create or Adopt has run, it grants the cluster's kubelet AcrPull on
// the registry (a role assignment, listed in Created).
func (p *Provider) EnsureRegistry(ctx context.Context, labels map[string]string) (cloud.Registry, error) {
	var reg cloud.Registry
	if p.o.RunID == "" {
		return reg, errors.New("aks: a run id is required to name the registry")
	}
	name := RegistryName(p.o.RunID)
	rg, err := p.ensureResourceGroup(ctx, labels)
	if reg.Created, err = made(reg.Created, rg, err); err != nil {
		return reg, err
	}

	var r armcontainerregistry.Registry
	got, err := p.registries.Get(ctx, p.o.ResourceGroup, name, nil)
	switch {
	case err == nil:
		r = got.Registry
	case isNotFound(err):
		op := "create registry " + name
		p.progress("creating container registry %s in %s", name, p.o.ResourceGroup)
		poller, err := p.registries.BeginCreate(ctx, p.o.ResourceGroup, name, armcontainerregistry.Registry{
			Location:   to(p.o.Location),
			Tags:       tags(labels),
			SKU:        &armcontainerregistry.SKU{Name: to(armcontainerregistry.SKUNameBasic)},
			Properties: &armcontainerregistry.RegistryProperties{AdminUserEnabled: to(false)},
		}, nil)
		if err != nil {
			return reg, asError(op, err)
		}
		reg.Created = append(reg.Created, cloud.Resource{Kind: KindRegistry, Name: name, ID: p.registryResourceID(name), Labels: labels})
		res, err := wait(ctx, p, op, poller)
		if err != nil {
			return reg, err
		}
		r = res.Registry
	default:
		return reg, asError("read registry "+name, err)
	}

	login := deref(deref(r.Properties).LoginServer)
	if login == "" {
		return reg, &cloud.Error{Op: "read registry " + name, Kind: "other", Msg: "the registry has no login server"}
	}
	host := login
	if p.o.RegistryEndpoint != "" {
		host = strings.TrimPrefix(strings.TrimPrefix(strings.TrimRight(p.o.RegistryEndpoint, "/"), "https://"), "http://")
	}
	refresh, err := p.exchange(ctx, host, login)
	if err != nil {
		return reg, err
	}
	reg.Repository = host + "/" + ImageRepository
	reg.Auth = authn.FromConfig(authn.AuthConfig{Username: ACRUsername, Password: refresh})

	p.mu.Lock()
	p.registryID = deref(r.ID)
	if p.registryID == "" {
		p.registryID = p.registryResourceID(name)
	}
	p.mu.Unlock()
	ra, err := p.grantPull(ctx)
	reg.Created, err = made(reg.Created, ra, err)
	return reg, err
}

func (p *Provider) registryResourceID(name string) string {
	return p.groupID() + "/providers/Microsoft.ContainerRegistry/registries/" + name
}

// exchange trades an AAD token (ARM scope) for an ACR refresh token at
// https://host/oauth2/exchange; service is the registry's login server.
func (p *Provider) exchange(ctx context.Context, host, service string) (string, error) {
	op := "log in to registry " + service
	tok, err := p.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{p.armScope}})
	if err != nil {
		return "", &cloud.Error{Op: op, Kind: "permission", Msg: "AAD token: " + err.Error(), Err: err}
	}
	form := url.Values{
		"grant_type":   {"access_token"},
		"service":      {service},
		"access_token": {tok.Token},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+host+"/oauth2/exchange", strings.NewReader(form.Encode()))
	if err != nil {
		return "", &cloud.Error{Op: op, Kind: "other", Msg: err.Error(), Err: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := p.httpDo(req)
	if err != nil {
		return "", &cloud.Error{Op: op, Kind: "other", Msg: err.Error(), Err: err}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		kind := "other"
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			kind = "permission"
		}
		return "", &cloud.Error{Op: op, Kind: kind, Msg: fmt.Sprintf("POST /oauth2/exchange: %s: %s", resp.Status, strings.TrimSpace(string(body)))}
	}
	var out struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.RefreshToken == "" {
		return "", &cloud.Error{Op: op, Kind: "other", Msg: "POST /oauth2/exchange: no refresh_token in the answer"}
	}
	return out.RefreshToken, nil
}

// grantPull assigns AcrPull on the registry to the kubelet identity once
// both are known, and returns the assignment it created (nil when one of
// them is not known yet, or the assignment was there).
func (p *Provider) grantPull(ctx context.Context) (*cloud.Resource, error) {
	p.mu.Lock()
	principal, scope := p.kubeletObjectID, p.registryID
	p.mu.Unlock()
	if principal == "" || scope == "" {
		return nil, nil
	}
	ra, err := p.assignRole(ctx, scope, principal, armauthorization.PrincipalTypeServicePrincipal, AcrPullRoleID, "AcrPull",
		"the kubelet pulls the scaleproof-ref image")
	if ra != nil {
		p.progress("granted AcrPull on the registry to the kubelet identity %s", principal)
	}
	return ra, err
}

// assignRole assigns the built-in role roleID (named role) at scope to
// principal and returns the assignment it created (nil when it was there:
// RoleAssignmentExists). The assignment's name is derived from (scope,
// principal, role), so a retry never makes a second one. A new principal
// can take a while to reach Microsoft Entra ID (PrincipalNotFound): it
// retries every PollInterval within OperationTimeout. Without the right to
// assign roles the error says how to grant it by hand. principalType "" is
// left out of the request (the caller's own identity may be a user, a
// service principal or a managed identity).
func (p *Provider) assignRole(ctx context.Context, scope, principal string, principalType armauthorization.PrincipalType, roleID, role, why string) (*cloud.Resource, error) {
	name := uuid.NewSHA1(uuid.NameSpaceURL, []byte(strings.ToLower(scope)+"|"+principal+"|"+roleID)).String()
	op := "grant " + role + " on " + scope
	props := &armauthorization.RoleAssignmentProperties{
		PrincipalID:      to(principal),
		RoleDefinitionID: to("/subscriptions/" + p.o.Subscription + "/providers/Microsoft.Authorization/roleDefinitions/" + roleID),
		Description:      to("scaleproof run " + p.o.RunID + ": " + why),
	}
	if principalType != "" {
		props.PrincipalType = to(principalType)
	}
	params := armauthorization.RoleAssignmentCreateParameters{Properties: props}
	var made *cloud.Resource
	err := cloud.Poll(ctx, p.o.OperationTimeout, p.o.PollInterval, func(ctx context.Context) (bool, error) {
		res, err := p.roles.Create(ctx, scope, name, params, nil)
		if err == nil {
			id := deref(res.ID)
			if id == "" {
				id = scope + "/providers/Microsoft.Authorization/roleAssignments/" + name
			}
			made = &cloud.Resource{Kind: KindRoleAssignment, Name: name, ID: id}
			return true, nil
		}
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.ErrorCode == "RoleAssignmentExists" {
			return true, nil
		}
		if errors.As(err, &re) && re.ErrorCode == "PrincipalNotFound" {
			return false, nil
		}
		e := asError(op, err)
		if ce, ok := e.(*cloud.Error); ok && ce.Kind == "permission" {
			ce.Msg += fmt.Sprintf("; grant it by hand: az role assignment create --assignee-object-id %s --role %q --scope %s", principal, role, scope)
		}
		return false, e
	}, func(ctx context.Context) error { return asError(op, ctx.Err()) })
	return made, err
}
