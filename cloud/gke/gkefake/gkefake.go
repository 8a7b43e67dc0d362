// Package gkefake is a local fake of the two Google APIs cloud/gke calls
// and of Google's OAuth token endpoint, on 127.0.0.1, speaking their
// REST/JSON closely enough for the real SDK clients
// (cloud.google.com/go/container/apiv1 and artifactregistry/apiv1 REST
// clients, golang.org/x/oauth2/google credentials):
//
//	POST   /token                                              an access token (grant refresh_token)
//	POST   /v1/projects/P/locations/L/clusters                 create a cluster → operation
//	GET    /v1/projects/P/locations/L/clusters[/C]             list / get
//	DELETE /v1/projects/P/locations/L/clusters/C[/nodePools/N] delete → operation
//	GET    /v1/projects/P/locations/L/operations/O             a Kubernetes Engine or Artifact Registry operation
//	POST   /v1/projects/P/locations/R/repositories?repositoryId=ID
//	GET    /v1/projects/P/locations/R/repositories[/ID]
//	DELETE /v1/projects/P/locations/R/repositories/ID
//
// It keeps state (clusters with labels and node pools, repositories,
// operations that finish after Polls polls) and fails on demand: quota on
// create, a denied permission (named in the error's ErrorInfo as IAM
// does), a create that fails halfway (the cluster exists, in ERROR, and
// its operation ends with an error), operations that never finish. Every
// API request must carry a bearer token the fake issued.
package gkefake

import (
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"cloud.google.com/go/artifactregistry/apiv1/artifactregistrypb"
	"cloud.google.com/go/container/apiv1/containerpb"
	lropb "cloud.google.com/go/longrunning/autogen/longrunningpb"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Fake is the fake. Set its failure fields before the calls they affect;
// they are read under its lock.
type Fake struct {
	// URL is the server's base URL (http://127.0.0.1:PORT): Options.Endpoint.
	URL string

	mu sync.Mutex
	// Polls is how many GetOperation calls an operation takes to be DONE
	// (0: done at the first poll).
	Polls int
	// Quota makes cluster creates fail as GKE does when the region's CPU
	// quota is short (HTTP 403, a quota message).
	Quota bool
	// Deny lists permissions the caller lacks ("container.clusters.create"):
	// the calls that need one get 403 PERMISSION_DENIED naming it.
	Deny []string
	// FailHalfway makes a cluster create accepted, the cluster made (in
	// ERROR) and its operation end with an error: node pool failed.
	FailHalfway bool
	// NeverFinish keeps every operation RUNNING.
	NeverFinish bool
	// BusyDeletes is how many cluster deletes are refused first with 400
	// FAILED_PRECONDITION, as GKE refuses while another operation (a create
	// cut short by Ctrl-C) still runs on the cluster.
	BusyDeletes int
	// Endpoint and CA are what clusters report (host:port, PEM); default
	// 127.0.0.1:6443 and a dummy PEM.
	Endpoint string
	CA       []byte
	// Token is the access token /token hands out ("" : "fake-token-N");
	// TokenTTL its expires_in in seconds (0: 3600).
	Token    string
	TokenTTL int

	srv      *httptest.Server
	clusters map[string]*containerpb.Cluster // by full name projects/P/locations/L/clusters/C
	repos    map[string]*artifactregistrypb.Repository
	ops      map[string]*op
	tokens   map[string]bool
	scopes   map[string][]string // token -> its scopes (service account flow)
	saKey    *rsa.PublicKey      // ServiceAccountFile's key
	requests []string
	nextID   int
}

type op struct {
	polls  int
	gke    *containerpb.Operation // or
	lro    *lropb.Operation
	finish func() // runs when done: the state change
}

// New starts the fake; t.Cleanup(f.Close) it.
func New() *Fake {
	f := &Fake{clusters: map[string]*containerpb.Cluster{}, repos: map[string]*artifactregistrypb.Repository{},
		ops: map[string]*op{}, tokens: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	return f
}

// Close stops the server.
func (f *Fake) Close() { f.srv.Close() }

// Set changes the fake's settings under its lock: f.Set(func(f *Fake) { f.Quota = true }).
func (f *Fake) Set(fn func(*Fake)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// CredentialsFile writes an authorized-user Application Default
// Credentials file whose token_uri is the fake's /token, into dir, and
// returns its path (for GOOGLE_APPLICATION_CREDENTIALS).
func (f *Fake) CredentialsFile(dir string) (string, error) {
	b, _ := json.Marshal(map[string]string{"type": "authorized_user", "client_id": "fake-client", "client_secret": "fake-secret",
		"refresh_token": "fake-refresh", "token_uri": f.URL + "/token"})
	p := filepath.Join(dir, "adc.json")
	return p, os.WriteFile(p, b, 0o600)
}

// AddCluster puts a RUNNING cluster with one node pool into location
// parent (projects/P/locations/L).
func (f *Fake) AddCluster(parent, name string, labels map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusters[parent+"/clusters/"+name] = f.cluster(name, labels, containerpb.Cluster_RUNNING)
}

// AddRepository puts a Docker repository into parent (projects/P/locations/R).
func (f *Fake) AddRepository(parent, id string, labels map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repos[parent+"/repositories/"+id] = &artifactregistrypb.Repository{Name: parent + "/repositories/" + id, Labels: labels, Format: artifactregistrypb.Repository_DOCKER}
}

// Clusters are the full names of the clusters that exist.
func (f *Fake) Clusters() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.clusters))
}

// Cluster is a copy of the cluster with that full name, or nil.
func (f *Fake) Cluster(full string) *containerpb.Cluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.clusters[full]; c != nil {
		return proto.Clone(c).(*containerpb.Cluster)
	}
	return nil
}

// Repositories are the full names of the repositories that exist.
func (f *Fake) Repositories() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.repos))
}

// Requests is every request so far as "METHOD /path".
func (f *Fake) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// IssuedToken reports whether the fake's /token handed out tok.
func (f *Fake) IssuedToken(tok string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokens[tok]
}

func (f *Fake) cluster(name string, labels map[string]string, st containerpb.Cluster_Status) *containerpb.Cluster {
	ep := f.Endpoint
	if ep == "" {
		ep = "127.0.0.1:6443"
	}
	ca := f.CA
	if ca == nil {
		ca = []byte("-----BEGIN CERTIFICATE-----\nZmFrZQ==\n-----END CERTIFICATE-----\n")
	}
	return &containerpb.Cluster{Name: name, ResourceLabels: labels, Status: st, Endpoint: ep,
		MasterAuth: &containerpb.MasterAuth{ClusterCaCertificate: base64.StdEncoding.EncodeToString(ca)},
		NodePools: []*containerpb.NodePool{{Name: "default-pool", Config: &containerpb.NodeConfig{ResourceLabels: labels},
			Autoscaling: &containerpb.NodePoolAutoscaling{Enabled: true, MinNodeCount: 1, MaxNodeCount: 3}}}}
}

// googleError writes Google's JSON error; permission, when set, goes into
// an ErrorInfo's metadata as IAM puts it.
func googleError(w http.ResponseWriter, code int, status, msg, permission string) {
	e := map[string]any{"code": code, "message": msg, "status": status}
	if permission != "" {
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "IAM_PERMISSION_DENIED",
			"domain": "iam.googleapis.com", "metadata": map[string]string{"permission": permission}}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}

func writeProto(w http.ResponseWriter, m proto.Message) {
	b, err := protojson.Marshal(m)
	if err != nil {
		googleError(w, 500, "INTERNAL", err.Error(), "")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	if r.URL.Path == "/token" {
		f.token(w, r)
		return
	}
	auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !f.tokens[auth] {
		googleError(w, 401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token.", "")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	parts := strings.Split(path, "/")
	if len(parts) < 5 || parts[0] != "projects" || parts[2] != "locations" {
		googleError(w, 404, "NOT_FOUND", "no such path "+r.URL.Path, "")
		return
	}
	parent := strings.Join(parts[:4], "/")
	rest := parts[4:]
	switch rest[0] {
	case "clusters":
		f.clustersAPI(w, r, parent, rest[1:])
	case "repositories":
		f.reposAPI(w, r, parent, rest[1:])
	case "operations":
		if len(rest) != 2 || r.Method != http.MethodGet {
			googleError(w, 404, "NOT_FOUND", "no such path "+r.URL.Path, "")
			return
		}
		f.getOp(w, parent+"/operations/"+rest[1])
	default:
		googleError(w, 404, "NOT_FOUND", "no such path "+r.URL.Path, "")
	}
}

func (f *Fake) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	var scopes []string
	switch {
	case r.PostForm.Get("grant_type") == jwtBearer:
		var err error
		if scopes, err = f.assertionScopes(r.PostForm.Get("assertion")); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": err.Error()})
			return
		}
	case r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("refresh_token") != "fake-refresh":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"error":"invalid_grant","error_description":"Bad Request"}`)
		return
	}
	f.nextID++
	tok := f.Token
	if tok == "" {
		tok = fmt.Sprintf("fake-token-%d", f.nextID)
	}
	ttl := f.TokenTTL
	if ttl == 0 {
		ttl = 3600
	}
	f.tokens[tok] = true
	if scopes != nil {
		if f.scopes == nil {
			f.scopes = map[string][]string{}
		}
		f.scopes[tok] = scopes
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": ttl})
}

// denied writes a 403 naming perm when Deny has it.
func (f *Fake) denied(w http.ResponseWriter, perm, resource string) bool {
	if !slices.Contains(f.Deny, perm) {
		return false
	}
	googleError(w, 403, "PERMISSION_DENIED", fmt.Sprintf("Permission '%s' denied on resource '%s' (or it may not exist).", perm, resource), perm)
	return true
}

// lookup is m[full] if the caller holds perm and it exists; else it answers
// 403 (denied) or 404 NOT_FOUND with notFound, and ok is false.
func lookup[V any](f *Fake, w http.ResponseWriter, perm string, m map[string]*V, full, notFound string) (v *V, ok bool) {
	if f.denied(w, perm, full) {
		return nil, false
	}
	if v = m[full]; v == nil {
		googleError(w, 404, "NOT_FOUND", notFound, "")
		return nil, false
	}
	return v, true
}

func (f *Fake) newGKEOp(parent, target string, t containerpb.Operation_Type, finish func()) *containerpb.Operation {
	f.nextID++
	o := &containerpb.Operation{Name: fmt.Sprintf("operation-%d", f.nextID), OperationType: t, Status: containerpb.Operation_RUNNING, TargetLink: target}
	f.ops[parent+"/operations/"+o.Name] = &op{gke: o, finish: finish}
	return o
}

func (f *Fake) newLRO(parent string, finish func() proto.Message) *lropb.Operation {
	f.nextID++
	o := &lropb.Operation{Name: fmt.Sprintf("%s/operations/ar-operation-%d", parent, f.nextID)}
	f.ops[o.Name] = &op{lro: o, finish: func() {
		if m := finish(); m != nil {
			a, _ := anypb.New(m)
			o.Result = &lropb.Operation_Response{Response: a}
		}
	}}
	return o
}

func (f *Fake) getOp(w http.ResponseWriter, name string) {
	o := f.ops[name]
	if o == nil {
		googleError(w, 404, "NOT_FOUND", "operation "+name+" not found", "")
		return
	}
	o.polls++
	if !f.NeverFinish && o.polls > f.Polls && o.finish != nil {
		o.finish()
		o.finish = nil
		if o.gke != nil {
			o.gke.Status = containerpb.Operation_DONE
		} else {
			o.lro.Done = true
		}
	}
	if o.gke != nil {
		writeProto(w, o.gke)
		return
	}
	writeProto(w, o.lro)
}

func (f *Fake) clustersAPI(w http.ResponseWriter, r *http.Request, parent string, rest []string) {
	switch {
	case len(rest) == 0 && r.Method == http.MethodPost:
		if f.denied(w, "container.clusters.create", parent) {
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req containerpb.CreateClusterRequest
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &req); err != nil || req.GetCluster().GetName() == "" {
			googleError(w, 400, "INVALID_ARGUMENT", fmt.Sprintf("bad create request: %v", err), "")
			return
		}
		if f.Quota {
			googleError(w, 403, "PERMISSION_DENIED", `Insufficient regional quota to satisfy request: resource "CPUS": request requires '12.0' and is short '4.0'. project has a quota of '8.0' with '8.0' available.`, "")
			return
		}
		full := parent + "/clusters/" + req.Cluster.Name
		if f.clusters[full] != nil {
			googleError(w, 409, "ALREADY_EXISTS", "Already exists: "+full, "")
			return
		}
		c := proto.Clone(req.Cluster).(*containerpb.Cluster)
		c.Status = containerpb.Cluster_PROVISIONING
		ref := f.cluster(c.Name, nil, 0)
		c.Endpoint, c.MasterAuth = ref.Endpoint, ref.MasterAuth
		f.clusters[full] = c
		halfway := f.FailHalfway
		o := f.newGKEOp(parent, full, containerpb.Operation_CREATE_CLUSTER, func() {
			if halfway {
				c.Status = containerpb.Cluster_ERROR
				c.StatusMessage = "node pool " + firstPool(c) + ": instances failed to start"
			} else {
				c.Status = containerpb.Cluster_RUNNING
			}
		})
		if halfway {
			fin := f.ops[parent+"/operations/"+o.Name].finish
			f.ops[parent+"/operations/"+o.Name].finish = func() {
				fin()
				o.Error = &spb.Status{Code: 13, Message: "Google Compute Engine: node pool " + firstPool(c) + " could not be created: instances failed to start"}
			}
		}
		writeProto(w, o)
	case len(rest) == 0 && r.Method == http.MethodGet:
		if f.denied(w, "container.clusters.list", parent) {
			return
		}
		writeProto(w, &containerpb.ListClustersResponse{Clusters: under(f.clusters, parent+"/clusters/")})
	case len(rest) == 1 && r.Method == http.MethodGet:
		full := parent + "/clusters/" + rest[0]
		if c, ok := lookup(f, w, "container.clusters.get", f.clusters, full, "Not found: "+full+"."); ok {
			writeProto(w, c)
		}
	case len(rest) == 1 && r.Method == http.MethodDelete:
		full := parent + "/clusters/" + rest[0]
		if _, ok := lookup(f, w, "container.clusters.delete", f.clusters, full, "Not found: "+full+"."); !ok {
			return
		}
		if f.BusyDeletes > 0 {
			f.BusyDeletes--
			googleError(w, 400, "FAILED_PRECONDITION", "Operation operation-0 is currently creating cluster "+rest[0]+". Please wait and try again once it is done.", "")
			return
		}
		f.clusters[full].Status = containerpb.Cluster_STOPPING
		writeProto(w, f.newGKEOp(parent, full, containerpb.Operation_DELETE_CLUSTER, func() { delete(f.clusters, full) }))
	case len(rest) == 3 && rest[1] == "nodePools" && r.Method == http.MethodDelete:
		full := parent + "/clusters/" + rest[0]
		if f.denied(w, "container.clusters.update", full) {
			return
		}
		c := f.clusters[full]
		if c == nil || !slices.ContainsFunc(c.NodePools, func(np *containerpb.NodePool) bool { return np.Name == rest[2] }) {
			googleError(w, 404, "NOT_FOUND", "Not found: "+full+"/nodePools/"+rest[2]+".", "")
			return
		}
		writeProto(w, f.newGKEOp(parent, full, containerpb.Operation_DELETE_NODE_POOL, func() {
			c.NodePools = slices.DeleteFunc(c.NodePools, func(np *containerpb.NodePool) bool { return np.Name == rest[2] })
		}))
	default:
		googleError(w, 404, "NOT_FOUND", "no such path "+r.URL.Path, "")
	}
}

func (f *Fake) reposAPI(w http.ResponseWriter, r *http.Request, parent string, rest []string) {
	switch {
	case len(rest) == 0 && r.Method == http.MethodPost:
		if f.denied(w, "artifactregistry.repositories.create", parent) {
			return
		}
		id := r.URL.Query().Get("repositoryId")
		body, _ := io.ReadAll(r.Body)
		var repo artifactregistrypb.Repository
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &repo); err != nil || id == "" {
			googleError(w, 400, "INVALID_ARGUMENT", fmt.Sprintf("bad repository: id %q: %v", id, err), "")
			return
		}
		full := parent + "/repositories/" + id
		if f.repos[full] != nil {
			googleError(w, 409, "ALREADY_EXISTS", "the repository already exists", "")
			return
		}
		repo.Name = full
		f.repos[full] = &repo
		writeProto(w, f.newLRO(parent, func() proto.Message { return &repo }))
	case len(rest) == 0 && r.Method == http.MethodGet:
		if f.denied(w, "artifactregistry.repositories.list", parent) {
			return
		}
		writeProto(w, &artifactregistrypb.ListRepositoriesResponse{Repositories: under(f.repos, parent+"/repositories/")})
	case len(rest) == 1 && r.Method == http.MethodGet:
		full := parent + "/repositories/" + rest[0]
		if repo, ok := lookup(f, w, "artifactregistry.repositories.get", f.repos, full, "Requested entity was not found."); ok {
			writeProto(w, repo)
		}
	case len(rest) == 1 && r.Method == http.MethodDelete:
		full := parent + "/repositories/" + rest[0]
		if _, ok := lookup(f, w, "artifactregistry.repositories.delete", f.repos, full, "Requested entity was not found."); !ok {
			return
		}
		writeProto(w, f.newLRO(parent, func() proto.Message { delete(f.repos, full); return &emptypb.Empty{} }))
	default:
		googleError(w, 404, "NOT_FOUND", "no such path "+r.URL.Path, "")
	}
}

func firstPool(c *containerpb.Cluster) string {
	if len(c.NodePools) > 0 {
		return c.NodePools[0].Name
	}
	return "default-pool"
}

// under is m's values whose keys start with prefix, by key.
func under[V any](m map[string]V, prefix string) []V {
	var out []V
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, m[k])
		}
	}
	return out
}
