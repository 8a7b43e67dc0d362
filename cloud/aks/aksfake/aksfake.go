// Package aksfake is a local fake of the Azure Resource Manager REST API as
// cloud/aks uses it, and of ACR's token exchange and registry, for tests: a
// TLS httptest server on 127.0.0.1 (the SDK sends bearer tokens over TLS
// only) that the real armcontainerservice, armresources,
// armcontainerregistry and armauthorization clients talk to.
//
// It keeps state (resource groups, managed clusters, registries, role
// assignments, each with its tags), answers PUT with 201 and an
// Azure-AsyncOperation header whose operation succeeds after Polls polls,
// DELETE with 202 and Azure-AsyncOperation (Location only for resource
// groups), and can be told to fail: a PUT refused (quota), an action denied
// (AuthorizationFailed naming it), an accepted operation that fails (the
// agent pool after the cluster resource exists), an operation that never
// finishes. POST /oauth2/exchange trades the ARM token for an ACR refresh
// token, and /v2/ is go-containerregistry's in-memory registry demanding
// Basic 00000000-0000-0000-0000-000000000000:<refresh token>.
//
// Entra's client credentials grant (entra.go) issues the tokens, and the
// clusters' API access is judged as AKS with Azure RBAC does (ClusterAuth).
// Not a model of Azure: no RBAC evaluation for ARM, no quotas, no real
// cluster.
package aksfake

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/scaleproof/scaleproof/cloud/cloudfake"
)

// The resource types, as the fake names them in failures and Resources.
const (
	ResourceGroups  = "resourceGroups"
	ManagedClusters = "managedClusters"
	Registries      = "registries"
	RoleAssignments = "roleAssignments"
)

// ACRUsername is the user of ACR refresh-token Basic auth.
const ACRUsername = "00000000-0000-0000-0000-000000000000"

// Resource is one resource the fake holds.
type Resource struct {
	ID, Name, Type, Location string
	ResourceGroup            string
	Tags                     map[string]string
	// Properties are the request's properties with what Azure adds
	// (provisioningState, fqdn, identityProfile, loginServer).
	Properties map[string]any
	// ManagedBy is, for a cluster's node resource group, the cluster's id.
	ManagedBy string
}

type operation struct {
	polls int
	never bool
	fail  *armError
	done  func() // applied under mu when the operation succeeds
	final func() // applied under mu when it fails
	state string
}

type armError struct {
	Status        int
	Code, Message string
	times         int // FailPutTimes: this many more, then no more; 0 forever
}

// Server is the fake. Its exported fields may be set before the first
// request.
type Server struct {
	*httptest.Server
	Subscription string
	// Polls is how many status polls an operation answers InProgress
	// before it finishes (default 2).
	Polls int
	// ARMToken, when not "", is the only bearer token ARM requests and the
	// ACR exchange accept.
	ARMToken string

	mu        sync.Mutex
	res       map[string]*Resource // lower-case id →
	ops       map[string]*operation
	nextOp    int
	putFail   map[string]armError // type →
	opFail    map[string]armError // type →
	never     map[string]bool     // type →
	denied    map[string]bool     // action →
	refresh   map[string]bool
	requests  []string
	actions   map[string]bool
	fqdn      string
	ca        []byte
	registry  http.Handler
	principal int
	seq       int
	apps      map[string]app    // client id ->
	issued    map[string]claims // Entra access token ->
	rbacDelay int
	applied   map[string]int // role assignment id -> checks seen
}

// New starts a fake of subscription sub. Close it when done.
func New(sub string) *Server {
	s := &Server{
		Subscription: sub, Polls: 2,
		res: map[string]*Resource{}, ops: map[string]*operation{},
		putFail: map[string]armError{}, opFail: map[string]armError{},
		never: map[string]bool{}, denied: map[string]bool{}, refresh: map[string]bool{}, actions: map[string]bool{},
		registry: registry.New(registry.Logger(discardLogger())),
		applied:  map[string]int{},
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Server.TLS = &tls.Config{}
	s.StartTLS()
	return s
}

// Endpoint is the ARM endpoint to give cloud.Options.Endpoint.
func (s *Server) Endpoint() string { return s.URL }

// Host is host:port of the server (cloud.Options.RegistryEndpoint).
func (s *Server) Host() string { return strings.TrimPrefix(s.URL, "https://") }

// FailPut makes every PUT of typ answer status with ARM error code and
// message (a quota refusal: 400 QuotaExceeded).
func (s *Server) FailPut(typ string, status int, code, message string) {
	s.FailPutTimes(typ, 0, status, code, message) // times 0: never counted down
}

// FailPutTimes is FailPut for the next n PUTs of typ only (a new kubelet
// identity that AAD does not know yet: 400 PrincipalNotFound on the role
// assignment, then success).
func (s *Server) FailPutTimes(typ string, n, status int, code, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putFail[typ] = armError{Status: status, Code: code, Message: message, times: n}
}

// putFailure is the injected failure of a PUT of typ, counting it down.
func (s *Server) putFailure(typ string) (armError, bool) {
	f, ok := s.putFail[typ]
	if !ok {
		return f, false
	}
	if f.times > 0 {
		f.times--
		if f.times == 0 {
			delete(s.putFail, typ)
		} else {
			s.putFail[typ] = f
		}
	}
	return f, true
}

// FailOperation lets a PUT of typ be accepted (the resource exists) and
// its operation end Failed with code and message; the resource is left in
// provisioning state Failed (AKS: the agent pool failed after the cluster
// resource was made).
func (s *Server) FailOperation(typ, code, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opFail[typ] = armError{Status: http.StatusOK, Code: code, Message: message}
}

// NeverFinish makes every operation on typ (create and delete) stay
// InProgress.
func (s *Server) NeverFinish(typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.never[typ] = true
}

// Deny answers every request needing action (as
// "Microsoft.ContainerService/managedClusters/write") with 403
// AuthorizationFailed naming it, as ARM does.
func (s *Server) Deny(action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[strings.ToLower(action)] = true
}

// Reset clears every injected failure.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putFail, s.opFail = map[string]armError{}, map[string]armError{}
	s.never, s.denied = map[string]bool{}, map[string]bool{}
}

// SetClusterEndpoint makes every cluster created from now on report fqdn
// (host or host:port) and ca (PEM) in its kubeconfig: a kind cluster's
// endpoint for an end-to-end handoff. Default: <dnsPrefix>.hcp.<location>.azmk8s.io
// and the fake's own TLS certificate.
func (s *Server) SetClusterEndpoint(fqdn string, ca []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fqdn, s.ca = fqdn, ca
}

// Add puts a finished resource of typ straight into the state (a foreign
// or an expired resource for List); rg "" for a resource group named name.
// It returns the resource's id.
func (s *Server) Add(typ, rg, name, location string, tags map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var id string
	switch typ {
	case ResourceGroups:
		id = s.groupID(name)
		rg = name
	case ManagedClusters:
		id = s.groupID(rg) + "/providers/Microsoft.ContainerService/managedClusters/" + name
	case Registries:
		id = s.groupID(rg) + "/providers/Microsoft.ContainerRegistry/registries/" + name
	default:
		panic("aksfake: Add of " + typ)
	}
	r := &Resource{ID: id, Name: name, Type: typ, Location: location, ResourceGroup: rg, Tags: tags,
		Properties: map[string]any{"provisioningState": "Succeeded"}}
	s.decorate(r)
	s.res[strings.ToLower(id)] = r
	return id
}

// Resources is a copy of the state, sorted by id, of typ ("" all).
func (s *Server) Resources(typ string) []Resource {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Resource
	for _, k := range slices.Sorted(maps.Keys(s.res)) {
		if r := s.res[k]; typ == "" || r.Type == typ {
			c := *r
			c.Tags = maps.Clone(r.Tags)
			c.Properties = copyAny(r.Properties)
			out = append(out, c)
		}
	}
	return out
}

// Requests is every request so far, "METHOD /path" (no query).
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Actions is every Azure RBAC action the ARM requests so far needed,
// sorted.
func (s *Server) Actions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.actions))
}

// RefreshTokens is how many ACR refresh tokens the exchange issued.
func (s *Server) RefreshTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.refresh)
}

func (s *Server) groupID(rg string) string {
	return "/subscriptions/" + s.Subscription + "/resourceGroups/" + rg
}

// serve routes a request.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	switch {
	case r.URL.Path == "/oauth2/exchange":
		s.exchange(w, r)
		return
	case strings.HasPrefix(r.URL.Path, "/v2"):
		s.serveRegistry(w, r)
		return
	case isEntra(r.URL.Path):
		s.entra(w, r)
		return
	}
	if c, ok := s.tokenClaims(cloudfake.BearerToken(r)); ok && c.Aud != strings.TrimRight(s.URL, "/") {
		// ARM, "InvalidAuthenticationTokenAudience"
		writeErr(w, armError{Status: http.StatusUnauthorized, Code: "InvalidAuthenticationTokenAudience", Message: "The access token has been obtained for wrong audience or resource '" + c.Aud + "'."})
		return
	}
	if s.ARMToken != "" && r.Header.Get("Authorization") != "Bearer "+s.ARMToken {
		writeErr(w, armError{Status: http.StatusUnauthorized, Code: "InvalidAuthenticationToken", Message: "The access token is missing or invalid."})
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		writeErr(w, armError{Status: http.StatusUnauthorized, Code: "AuthenticationFailed", Message: "Authentication failed. The 'Authorization' header is missing."})
		return
	}
	if strings.HasPrefix(r.URL.Path, "/fake/operations/") {
		s.operationStatus(w, r, strings.TrimPrefix(r.URL.Path, "/fake/operations/"))
		return
	}
	if strings.HasPrefix(r.URL.Path, "/fake/locations/") {
		s.locationStatus(w, r, strings.TrimPrefix(r.URL.Path, "/fake/locations/"))
		return
	}
	if r.URL.Query().Get("api-version") == "" {
		writeErr(w, armError{Status: http.StatusBadRequest, Code: "MissingApiVersionParameter", Message: "The api-version query parameter (?api-version=) is required for all requests."})
		return
	}
	s.arm(w, r)
}

// route is an ARM path taken apart.
type route struct {
	typ, rg, name string
	list          bool
	action        string // the RBAC action
	suffix        string // "listClusterUserCredential"
	scope         string // a role assignment's scope
	id            string
}

func (s *Server) parse(method, path string) (route, bool) {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	verb := map[string]string{http.MethodGet: "read", http.MethodHead: "read", http.MethodPut: "write", http.MethodDelete: "delete", http.MethodPost: "action"}[method]
	if len(seg) < 2 || !strings.EqualFold(seg[0], "subscriptions") {
		return route{}, false
	}
	// role assignments: {scope}/providers/Microsoft.Authorization/roleAssignments/{name}
	if i := slices.IndexFunc(seg, func(v string) bool { return strings.EqualFold(v, "Microsoft.Authorization") }); i > 0 && i+2 < len(seg) && strings.EqualFold(seg[i+1], "roleAssignments") {
		return route{typ: RoleAssignments, name: seg[i+2], scope: "/" + strings.Join(seg[:i-1], "/"),
			id: "/" + strings.Join(seg, "/"), action: "Microsoft.Authorization/roleAssignments/" + verb}, true
	}
	rest := seg[2:]
	switch {
	case len(rest) == 1 && strings.EqualFold(rest[0], "resourcegroups"):
		return route{typ: ResourceGroups, list: true, action: "Microsoft.Resources/subscriptions/resourceGroups/read"}, true
	case len(rest) == 2 && strings.EqualFold(rest[0], "resourcegroups"):
		return route{typ: ResourceGroups, rg: rest[1], name: rest[1], id: s.groupID(rest[1]),
			action: "Microsoft.Resources/subscriptions/resourceGroups/" + verb}, true
	case len(rest) == 3 && strings.EqualFold(rest[0], "providers"):
		typ, ns := typeOf(rest[1], rest[2])
		if typ == "" {
			return route{}, false
		}
		return route{typ: typ, list: true, action: ns + "/read"}, true
	case len(rest) >= 6 && strings.EqualFold(rest[0], "resourcegroups") && strings.EqualFold(rest[2], "providers"):
		typ, ns := typeOf(rest[3], rest[4])
		if typ == "" {
			return route{}, false
		}
		rt := route{typ: typ, rg: rest[1], name: rest[5], action: ns + "/" + verb}
		rt.id = s.groupID(rest[1]) + "/providers/" + nsName(typ) + "/" + rest[5]
		if len(rest) == 7 {
			rt.suffix = rest[6]
			rt.action = ns + "/" + rest[6] + "/action"
		} else if len(rest) > 7 {
			return route{}, false
		}
		return rt, true
	}
	return route{}, false
}

func typeOf(ns, typ string) (string, string) {
	switch {
	case strings.EqualFold(ns, "Microsoft.ContainerService") && strings.EqualFold(typ, "managedClusters"):
		return ManagedClusters, "Microsoft.ContainerService/managedClusters"
	case strings.EqualFold(ns, "Microsoft.ContainerRegistry") && strings.EqualFold(typ, "registries"):
		return Registries, "Microsoft.ContainerRegistry/registries"
	}
	return "", ""
}

func nsName(typ string) string {
	switch typ {
	case ManagedClusters:
		return "Microsoft.ContainerService/managedClusters"
	case Registries:
		return "Microsoft.ContainerRegistry/registries"
	}
	return typ
}

func (s *Server) arm(w http.ResponseWriter, r *http.Request) {
	rt, ok := s.parse(r.Method, r.URL.Path)
	if !ok {
		writeErr(w, armError{Status: http.StatusNotFound, Code: "InvalidResourceType", Message: "The resource type could not be found: " + r.URL.Path})
		return
	}
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if !strings.EqualFold(seg[1], s.Subscription) {
		writeErr(w, armError{Status: http.StatusNotFound, Code: "SubscriptionNotFound", Message: "The subscription '" + seg[1] + "' could not be found."})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions[rt.action] = true
	if s.denied[strings.ToLower(rt.action)] {
		scope := rt.id
		if scope == "" {
			scope = "/subscriptions/" + s.Subscription
		}
		writeErr(w, armError{Status: http.StatusForbidden, Code: "AuthorizationFailed", Message: fmt.Sprintf(
			"The client 'fake-client' with object id '11111111-1111-1111-1111-111111111111' does not have authorization to perform action '%s' over scope '%s' or the scope is invalid. If access was recently granted, please refresh your credentials.",
			rt.action, scope)})
		return
	}
	switch {
	case rt.list && r.Method == http.MethodGet:
		s.list(w, rt.typ)
	case rt.typ == RoleAssignments:
		s.roleAssignment(w, r, rt)
	case rt.suffix != "":
		s.post(w, r, rt)
	case r.Method == http.MethodGet:
		res := s.res[strings.ToLower(rt.id)]
		if res == nil {
			s.notFound(w, rt)
			return
		}
		writeJSON(w, http.StatusOK, s.body(res))
	case r.Method == http.MethodPut:
		s.put(w, r, rt)
	case r.Method == http.MethodDelete:
		s.delete(w, r, rt)
	default:
		writeErr(w, armError{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: r.Method + " is not allowed here"})
	}
}

func (s *Server) notFound(w http.ResponseWriter, rt route) {
	if rt.typ != ResourceGroups && s.res[strings.ToLower(s.groupID(rt.rg))] == nil {
		writeErr(w, armError{Status: http.StatusNotFound, Code: "ResourceGroupNotFound", Message: "Resource group '" + rt.rg + "' could not be found."})
		return
	}
	if rt.typ == ResourceGroups {
		writeErr(w, armError{Status: http.StatusNotFound, Code: "ResourceGroupNotFound", Message: "Resource group '" + rt.name + "' could not be found."})
		return
	}
	writeErr(w, armError{Status: http.StatusNotFound, Code: "ResourceNotFound", Message: fmt.Sprintf("The Resource '%s/%s' under resource group '%s' was not found.", nsName(rt.typ), rt.name, rt.rg)})
}

func (s *Server) list(w http.ResponseWriter, typ string) {
	v := []any{}
	for _, k := range slices.Sorted(maps.Keys(s.res)) {
		if s.res[k].Type == typ {
			v = append(v, s.body(s.res[k]))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"value": v})
}

// put creates or updates a resource: resource groups at once (200/201),
// clusters and registries as an operation (201 + Azure-AsyncOperation).
func (s *Server) put(w http.ResponseWriter, r *http.Request, rt route) {
	if f, ok := s.putFailure(rt.typ); ok {
		writeErr(w, f)
		return
	}
	var in struct {
		Location   string            `json:"location"`
		Tags       map[string]string `json:"tags"`
		Properties map[string]any    `json:"properties"`
		SKU        map[string]any    `json:"sku"`
		Identity   map[string]any    `json:"identity"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeErr(w, armError{Status: http.StatusBadRequest, Code: "InvalidRequestContent", Message: "The request content was invalid: " + err.Error()})
		return
	}
	if in.Location == "" {
		writeErr(w, armError{Status: http.StatusBadRequest, Code: "LocationRequired", Message: "The location property is required for this definition."})
		return
	}
	key := strings.ToLower(rt.id)
	old := s.res[key]
	status := http.StatusCreated
	if old != nil {
		status = http.StatusOK
	}
	if rt.typ == ResourceGroups {
		// ARM refuses to move an existing group: "InvalidResourceGroupLocation:
		// Invalid resource group location. The Resource group already exists
		// in location 'X'." (Resource Groups - Create Or Update,
		// https://learn.microsoft.com/rest/api/resources/resource-groups/create-or-update).
		if old != nil && !strings.EqualFold(old.Location, in.Location) {
			writeErr(w, armError{Status: http.StatusConflict, Code: "InvalidResourceGroupLocation", Message: fmt.Sprintf(
				"Invalid resource group location '%s'. The Resource group already exists in location '%s'.", in.Location, old.Location)})
			return
		}
		res := &Resource{ID: rt.id, Name: rt.name, Type: ResourceGroups, Location: in.Location, ResourceGroup: rt.name,
			Tags: in.Tags, Properties: map[string]any{"provisioningState": "Succeeded"}}
		s.res[key] = res
		writeJSON(w, status, s.body(res))
		return
	}
	if s.res[strings.ToLower(s.groupID(rt.rg))] == nil {
		s.notFound(w, route{typ: ResourceGroups, name: rt.rg})
		return
	}
	props := in.Properties
	if props == nil {
		props = map[string]any{}
	}
	if in.SKU != nil {
		props["_sku"] = in.SKU
	}
	props["provisioningState"] = "Creating"
	res := &Resource{ID: rt.id, Name: rt.name, Type: rt.typ, Location: in.Location, ResourceGroup: rt.rg, Tags: in.Tags, Properties: props}
	s.decorate(res)
	s.res[key] = res
	op := &operation{polls: s.Polls, never: s.never[rt.typ]}
	if f, ok := s.opFail[rt.typ]; ok {
		op.fail = &f
		op.final = func() { res.Properties["provisioningState"] = "Failed" }
	}
	op.done = func() {
		res.Properties["provisioningState"] = "Succeeded"
		if res.Type == ManagedClusters {
			s.nodeResourceGroup(res)
		}
	}
	w.Header().Set("Azure-AsyncOperation", s.newOp(r, op))
	writeJSON(w, status, s.body(res))
}

// nodeResourceGroup makes the group AKS creates for a cluster's nodes
// (AKS, "Node resource group": MC_<group>_<cluster>_<location> unless
// properties.nodeResourceGroup names it; managedBy the cluster, deleted
// with it) carrying the cluster's tags (AKS, "Use Azure tags in AKS": the
// tags given at create are applied to the node resource group too). So a
// List sees a group with the run's labels that is not the run's to delete.
// Callers hold s.mu.
func (s *Server) nodeResourceGroup(cluster *Resource) {
	name, _ := cluster.Properties["nodeResourceGroup"].(string)
	if name == "" {
		name = "MC_" + cluster.ResourceGroup + "_" + cluster.Name + "_" + cluster.Location
		cluster.Properties["nodeResourceGroup"] = name
	}
	id := s.groupID(name)
	s.res[strings.ToLower(id)] = &Resource{ID: id, Name: name, Type: ResourceGroups, Location: cluster.Location, ResourceGroup: name,
		Tags: maps.Clone(cluster.Tags), Properties: map[string]any{"provisioningState": "Succeeded"}, ManagedBy: cluster.ID}
}

// decorate adds what Azure computes: a cluster's fqdn and kubelet
// identity, a registry's login server.
func (s *Server) decorate(res *Resource) {
	switch res.Type {
	case ManagedClusters:
		fqdn := s.fqdn
		if fqdn == "" {
			prefix, _ := res.Properties["dnsPrefix"].(string)
			if prefix == "" {
				prefix = res.Name
			}
			fqdn = prefix + "-fake.hcp." + res.Location + ".azmk8s.io"
		}
		res.Properties["fqdn"] = fqdn
		s.principal++
		res.Properties["identityProfile"] = map[string]any{"kubeletidentity": map[string]any{
			"objectId":   fmt.Sprintf("22222222-0000-0000-0000-%012d", s.principal),
			"clientId":   fmt.Sprintf("33333333-0000-0000-0000-%012d", s.principal),
			"resourceId": s.groupID("MC_"+res.ResourceGroup+"_"+res.Name+"_"+res.Location) + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/" + res.Name + "-agentpool",
		}}
		res.Properties["_ca"] = s.caPEM()
	case Registries:
		res.Properties["loginServer"] = res.Name + ".azurecr.io"
	}
}

func (s *Server) caPEM() string {
	if s.ca != nil {
		return string(s.ca)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}))
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, rt route) {
	key := strings.ToLower(rt.id)
	res := s.res[key]
	if res == nil {
		if rt.typ == ResourceGroups {
			s.notFound(w, rt)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if res.Type != ResourceGroups {
		res.Properties["provisioningState"] = "Deleting"
	}
	op := &operation{polls: s.Polls, never: s.never[rt.typ]}
	op.done = func() {
		delete(s.res, key)
		if rt.typ == ManagedClusters {
			if ng, _ := res.Properties["nodeResourceGroup"].(string); ng != "" {
				gk := strings.ToLower(s.groupID(ng))
				for k := range s.res {
					if k == gk || strings.HasPrefix(k, gk+"/") {
						delete(s.res, k)
					}
				}
			}
		}
		if rt.typ == ResourceGroups {
			prefix := key + "/"
			for k := range s.res {
				if strings.HasPrefix(k, prefix) {
					delete(s.res, k)
				}
			}
		}
	}
	u := s.newOp(r, op)
	if rt.typ == ResourceGroups {
		// ARM deletes a resource group with Location polling only.
		w.Header().Set("Location", strings.Replace(u, "/fake/operations/", "/fake/locations/", 1))
	} else {
		w.Header().Set("Azure-AsyncOperation", u)
		w.Header().Set("Location", strings.Replace(u, "/fake/operations/", "/fake/locations/", 1))
	}
	w.WriteHeader(http.StatusAccepted)
}

// post answers a cluster's listClusterUserCredential.
func (s *Server) post(w http.ResponseWriter, r *http.Request, rt route) {
	if r.Method != http.MethodPost || rt.typ != ManagedClusters || !strings.EqualFold(rt.suffix, "listClusterUserCredential") {
		writeErr(w, armError{Status: http.StatusNotFound, Code: "InvalidResourceType", Message: "no such action " + rt.suffix})
		return
	}
	res := s.res[strings.ToLower(rt.id)]
	if res == nil {
		s.notFound(w, rt)
		return
	}
	ca, _ := res.Properties["_ca"].(string)
	fqdn, _ := res.Properties["fqdn"].(string)
	server := "https://" + fqdn
	if !strings.Contains(fqdn, ":") {
		server += ":443"
	}
	// What AKS returns for an AAD cluster with format=exec: a kubelogin
	// exec plugin that cloud/aks must never run.
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: %s
    server: %s
  name: %s
contexts:
- context:
    cluster: %s
    user: clusterUser_%s_%s
  name: %s
current-context: %s
users:
- name: clusterUser_%s_%s
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: kubelogin
      args: [get-token, --server-id, 6dae42f8-4368-4678-94ff-3960e28e3630, --login, devicecode]
      interactiveMode: IfAvailable
`, base64.StdEncoding.EncodeToString([]byte(ca)), server, res.Name, res.Name, rt.rg, res.Name, res.Name, res.Name, rt.rg, res.Name)
	writeJSON(w, http.StatusOK, map[string]any{"kubeconfigs": []any{map[string]any{"name": "clusterUser", "value": []byte(kc)}}})
}

func (s *Server) roleAssignment(w http.ResponseWriter, r *http.Request, rt route) {
	key := strings.ToLower(rt.id)
	switch r.Method {
	case http.MethodPut:
		if f, ok := s.putFailure(RoleAssignments); ok {
			writeErr(w, f)
			return
		}
		if s.res[strings.ToLower(rt.scope)] == nil {
			writeErr(w, armError{Status: http.StatusNotFound, Code: "ResourceNotFound", Message: "The scope '" + rt.scope + "' was not found."})
			return
		}
		if s.res[key] != nil {
			writeErr(w, armError{Status: http.StatusConflict, Code: "RoleAssignmentExists", Message: "The role assignment already exists."})
			return
		}
		var in struct {
			Properties map[string]any `json:"properties"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Properties["principalId"] == nil || in.Properties["roleDefinitionId"] == nil {
			writeErr(w, armError{Status: http.StatusBadRequest, Code: "InvalidRoleAssignmentRequest", Message: "principalId and roleDefinitionId are required"})
			return
		}
		in.Properties["scope"] = rt.scope
		res := &Resource{ID: rt.id, Name: rt.name, Type: RoleAssignments, Properties: in.Properties}
		s.res[key] = res
		writeJSON(w, http.StatusCreated, s.body(res))
	case http.MethodGet:
		res := s.res[key]
		if res == nil {
			writeErr(w, armError{Status: http.StatusNotFound, Code: "RoleAssignmentNotFound", Message: "The role assignment '" + rt.name + "' is not found."})
			return
		}
		writeJSON(w, http.StatusOK, s.body(res))
	case http.MethodDelete:
		res := s.res[key]
		if res == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		delete(s.res, key)
		writeJSON(w, http.StatusOK, s.body(res))
	}
}

func (s *Server) newOp(r *http.Request, op *operation) string {
	s.nextOp++
	id := strconv.Itoa(s.nextOp)
	op.state = "InProgress"
	s.ops[id] = op
	return "https://" + r.Host + "/fake/operations/" + id
}

// step advances op by one poll.
func (s *Server) step(op *operation) {
	if op.state != "InProgress" || op.never {
		return
	}
	if op.polls > 1 {
		op.polls--
		return
	}
	if op.fail != nil {
		op.state = "Failed"
		if op.final != nil {
			op.final()
		}
		return
	}
	op.state = "Succeeded"
	op.done()
}

// poll advances operation id by one poll, or answers 404 and returns nil
// when there is none. Callers hold s.mu.
func (s *Server) poll(w http.ResponseWriter, id string) *operation {
	op := s.ops[id]
	if op == nil {
		writeErr(w, armError{Status: http.StatusNotFound, Code: "NotFound", Message: "operation " + id + " not found"})
		return nil
	}
	s.step(op)
	return op
}

func (s *Server) operationStatus(w http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := s.poll(w, id)
	if op == nil {
		return
	}
	body := map[string]any{"name": id, "status": op.state}
	if op.state == "Failed" {
		body["error"] = map[string]any{"code": op.fail.Code, "message": op.fail.Message}
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) locationStatus(w http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := s.poll(w, id)
	if op == nil {
		return
	}
	switch op.state {
	case "InProgress":
		w.Header().Set("Location", "https://"+r.Host+r.URL.Path)
		w.WriteHeader(http.StatusAccepted)
	case "Succeeded":
		w.WriteHeader(http.StatusOK)
	default:
		writeErr(w, armError{Status: http.StatusInternalServerError, Code: op.fail.Code, Message: op.fail.Message})
	}
}

// body is res as ARM's JSON.
func (s *Server) body(res *Resource) map[string]any {
	props := map[string]any{}
	var sku any
	for k, v := range res.Properties {
		switch {
		case k == "_sku":
			sku = v
		case strings.HasPrefix(k, "_"):
		default:
			props[k] = v
		}
	}
	typ := map[string]string{ResourceGroups: "Microsoft.Resources/resourceGroups", ManagedClusters: "Microsoft.ContainerService/ManagedClusters",
		Registries: "Microsoft.ContainerRegistry/registries", RoleAssignments: "Microsoft.Authorization/roleAssignments"}[res.Type]
	b := map[string]any{"id": res.ID, "name": res.Name, "type": typ, "properties": props}
	if res.Location != "" {
		b["location"] = res.Location
	}
	if res.Tags != nil {
		b["tags"] = res.Tags
	}
	if sku != nil {
		b["sku"] = sku
	}
	if res.ManagedBy != "" {
		b["managedBy"] = res.ManagedBy
	}
	return b
}

// exchange is ACR's POST /oauth2/exchange: grant_type=access_token with an
// AAD token (ARMToken when set) for a registry's login server (service)
// gives a refresh token.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, `{"errors":[{"code":"UNSUPPORTED","message":"POST only"}]}`, http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, `{"errors":[{"code":"BAD_REQUEST"}]}`, http.StatusBadRequest)
		return
	}
	if r.PostForm.Get("grant_type") != "access_token" || r.PostForm.Get("access_token") == "" {
		http.Error(w, `{"errors":[{"code":"UNSUPPORTED","message":"grant_type must be access_token, with an access_token"}]}`, http.StatusBadRequest)
		return
	}
	if s.ARMToken != "" && r.PostForm.Get("access_token") != s.ARMToken {
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"invalid AAD access token"}]}`, http.StatusUnauthorized)
		return
	}
	service := r.PostForm.Get("service")
	s.mu.Lock()
	defer s.mu.Unlock()
	known := false
	for _, res := range s.res {
		if res.Type == Registries && strings.EqualFold(res.Properties["loginServer"].(string), service) {
			known = true
		}
	}
	if !known {
		http.Error(w, `{"errors":[{"code":"NAME_UNKNOWN","message":"no registry `+service+`"}]}`, http.StatusNotFound)
		return
	}
	tok := fmt.Sprintf("acr-refresh-%d", len(s.refresh)+1)
	s.refresh[tok] = true
	writeJSON(w, http.StatusOK, map[string]string{"refresh_token": tok})
}

// serveRegistry is the in-memory registry behind ACR's refresh-token
// Basic auth.
func (s *Server) serveRegistry(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	s.mu.Lock()
	good := ok && user == ACRUsername && s.refresh[pass]
	s.mu.Unlock()
	if !good {
		w.Header().Set("WWW-Authenticate", `Basic realm="`+s.Host()+`"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
		return
	}
	s.registry.ServeHTTP(w, r)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, e armError) {
	w.Header().Set("x-ms-error-code", e.Code)
	writeJSON(w, e.Status, map[string]any{"error": map[string]string{"code": e.Code, "message": e.Message}})
}

func copyAny(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	return c
}

func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }
