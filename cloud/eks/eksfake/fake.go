// Package eksfake is a local fake of the five AWS APIs the EKS provider
// calls, closely enough for the real aws-sdk-go-v2 clients: EKS (REST-JSON),
// EC2 (EC2 query, XML), IAM and STS (query, XML) and ECR (JSON 1.1), on one
// httptest server on 127.0.0.1 that routes by X-Amz-Target (ECR), path
// (/clusters: EKS) and the query Version (EC2, IAM, STS). Point every client
// at URL (cloud.Options.Endpoint). API call signatures are not checked; the
// clusters' bearer tokens are, as EKS does (ClusterAuth, apitoken.go).
//
// It keeps state (clusters with tags, node groups, IAM roles with their
// policies and instance profiles, ECR repositories, a default VPC with three
// default subnets), lets long operations finish after a number of polls, and
// can be told to fail: an action answering with an error code (Fail, Deny,
// Quota), clusters that end FAILED after creating, clusters that never leave
// CREATING, a region without a default VPC.
package eksfake

import (
	"encoding/base64"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of a new Server.
const (
	DefaultAccount = "123456789012"
	DefaultRegion  = "us-west-2"
	// DefaultPolls is how many DescribeCluster / DescribeNodegroup calls a
	// create or delete takes to finish.
	DefaultPolls = 2
)

// DefaultCA is the PEM every created cluster reports unless Server.CAData
// is set: not a real certificate, which the provider passes through.
var DefaultCA = []byte("-----BEGIN CERTIFICATE-----\nZmFrZSBFS1MgQ0E=\n-----END CERTIFICATE-----\n")

// Server is the fake. Its exported fields may be set before the first
// request.
type Server struct {
	// URL is the base URL (http://127.0.0.1:port) for Options.Endpoint.
	URL string
	// Account and Region are the account id and region in ARNs and in the
	// ECR repository URI.
	Account, Region string
	// APIServer and CAData are what every cluster it creates reports as
	// its endpoint and CA (a kind cluster's, for the handoff test); ""
	// and nil: https://127.0.0.1:6443 and DefaultCA.
	APIServer string
	CAData    []byte
	// RegistryPassword is the password of the ECR authorization token
	// (user AWS).
	RegistryPassword string

	srv *httptest.Server

	mu           sync.Mutex
	polls        int
	pageSize     int
	stuck        bool
	propagation  int
	failClusters bool
	failures     map[string]failure
	calls        []string
	clusters     map[string]*cluster
	nodegroups   map[string]*nodegroup // "cluster/name"
	roles        map[string]*role
	profiles     map[string]map[string]bool // instance profile -> role names
	repos        map[string]*repo
	vpcs         []vpc
	subnets      []subnet
	zoneIDs      map[string]string // zone name -> zone ID (SetZoneIDs)
	secrets      map[string]string // access key id -> secret (SetCredentials)
	answered     map[string]answer // CreateCluster client token -> its answer
	now          func() time.Time
	seq          int
}

type failure struct {
	code, message string
}

type cluster struct {
	name, arn, status, roleARN string
	tags                       map[string]string
	request                    map[string]any
	left                       int    // polls until the current operation ends
	creator                    string // the access key id that signed CreateCluster
}

type nodegroup struct {
	cluster, name, arn, status string
	tags                       map[string]string
	left                       int
}

type role struct {
	name, path, arn, trust string
	unseen                 int // CreateCluster calls that cannot assume it yet
	tags                   [][2]string
	policies               []string
}

type repo struct {
	name, arn string
	tags      [][2]string
}

type vpc struct {
	id        string
	isDefault bool
}

type subnet struct {
	id, vpc      string
	letter       string // the zone's letter: its name is the fake's Region + letter
	defaultForAz bool
}

// zone is sn's Availability Zone name in the fake's region.
func (s *Server) zone(sn subnet) string { return s.Region + sn.letter }

// UnsupportedZoneIDs are the Availability Zone IDs whose subnets EKS refuses
// for a cluster's control plane, by zone ID: "Your cluster can't use subnets
// in these Availability Zones" (us-east-1 use1-az3, us-west-1 usw1-az2,
// ca-central-1 cac1-az3), Amazon EKS User Guide, "View Amazon EKS networking
// requirements for VPC and subnets",
// https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html.
var UnsupportedZoneIDs = map[string]bool{"use1-az3": true, "usw1-az2": true, "cac1-az3": true}

// zoneIDs maps the fake account's zone names to zone IDs. The mapping is
// per account ("AWS maps the physical Availability Zones randomly to the
// Availability Zone names for each AWS account", Amazon EC2 User Guide,
// "Availability Zone IDs",
// https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html):
// the default maps the zone letters a, b, c, ... to az1, az2, az3, ...;
// SetZoneIDs sets another account's.
func (s *Server) zoneID(zone string) string {
	if id, ok := s.zoneIDs[zone]; ok {
		return id
	}
	letter := zone[len(zone)-1]
	return regionShort(s.Region) + "-az" + strconv.Itoa(int(letter-'a')+1)
}

// regionShort is a region's zone ID prefix: us-east-1 -> use1,
// ca-central-1 -> cac1 (the first letters of the parts, then the number).
func regionShort(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) < 3 {
		return region
	}
	return parts[0] + parts[1][:1] + parts[len(parts)-1]
}

// SetZoneIDs sets the account's zone name -> zone ID mapping (names not in
// m keep the default).
func (s *Server) SetZoneIDs(m map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.zoneIDs = maps.Clone(m)
}

// New starts a fake on 127.0.0.1 with one default VPC (three default
// subnets in zones a, b, c) and one other VPC. Close it when done.
func New() *Server {
	s := &Server{
		Account:          DefaultAccount,
		Region:           DefaultRegion,
		RegistryPassword: "fake-ecr-password",
		polls:            DefaultPolls,
		pageSize:         2,
		failures:         map[string]failure{},
		clusters:         map[string]*cluster{},
		nodegroups:       map[string]*nodegroup{},
		roles:            map[string]*role{},
		profiles:         map[string]map[string]bool{},
		repos:            map[string]*repo{},
		answered:         map[string]answer{},
	}
	s.vpcs = []vpc{{id: "vpc-0default", isDefault: true}, {id: "vpc-0other"}}
	for i, z := range []string{"a", "b", "c"} {
		s.subnets = append(s.subnets,
			subnet{id: fmt.Sprintf("subnet-0default%d", i), vpc: "vpc-0default", letter: z, defaultForAz: true},
			subnet{id: fmt.Sprintf("subnet-0private%d", i), vpc: "vpc-0default", letter: z},
			subnet{id: fmt.Sprintf("subnet-0other%d", i), vpc: "vpc-0other", letter: z})
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetPolls makes creates and deletes finish after n polls (0: at the first).
func (s *Server) SetPolls(n int) { s.mu.Lock(); s.polls = n; s.mu.Unlock() }

// SetStuck keeps every CREATING cluster CREATING (true) or lets them go on
// (false).
func (s *Server) SetStuck(stuck bool) { s.mu.Lock(); s.stuck = stuck; s.mu.Unlock() }

// SetRolePropagation makes a new IAM role unusable by the next n
// CreateCluster calls (InvalidParameterException "could not be assumed"),
// as IAM's eventual consistency does in AWS.
func (s *Server) SetRolePropagation(n int) { s.mu.Lock(); s.propagation = n; s.mu.Unlock() }

// FailClusters makes clusters end FAILED instead of ACTIVE after creating:
// the cluster exists (and can be deleted) but Create fails.
func (s *Server) FailClusters(fail bool) { s.mu.Lock(); s.failClusters = fail; s.mu.Unlock() }

// NoDefaultVPC takes the region's default VPC away.
func (s *Server) NoDefaultVPC() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.vpcs {
		s.vpcs[i].isDefault = false
	}
}

// Fail makes every call of action ("eks:CreateCluster", "iam:CreateRole",
// "ec2:DescribeVpcs", "ecr:CreateRepository", ...) answer with the AWS
// error code and message; code "" clears it.
func (s *Server) Fail(action, code, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == "" {
		delete(s.failures, action)
		return
	}
	s.failures[action] = failure{code, message}
}

// Deny makes action answer as AWS does when the caller lacks the
// permission: AccessDeniedException (EKS, ECR) or AccessDenied (IAM, STS)
// with a message naming the action, UnauthorizedOperation (EC2) with EC2's
// message, which names none.
func (s *Server) Deny(action string) {
	svc, _, _ := strings.Cut(action, ":")
	msg := fmt.Sprintf("User: arn:aws:iam::%s:user/ci is not authorized to perform: %s on resource: *", s.Account, action)
	switch svc {
	case "eks", "ecr":
		s.Fail(action, "AccessDeniedException", msg)
	case "ec2":
		s.Fail(action, "UnauthorizedOperation", "You are not authorized to perform this operation.")
	default:
		s.Fail(action, "AccessDenied", msg)
	}
}

// Quota makes action answer with the service's quota error:
// ResourceLimitExceededException (EKS), LimitExceeded (IAM),
// LimitExceededException (ECR), VpcLimitExceeded (EC2).
func (s *Server) Quota(action string) {
	svc, _, _ := strings.Cut(action, ":")
	code := map[string]string{"eks": "ResourceLimitExceededException", "iam": "LimitExceeded", "ecr": "LimitExceededException", "ec2": "VpcLimitExceeded"}[svc]
	if code == "" {
		code = "ServiceQuotaExceededException"
	}
	s.Fail(action, code, "You have exceeded the quota for "+action)
}

// Calls is every call the fake answered (or refused), "service:Action", in
// order.
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Resources is what exists, "kind name" sorted: "cluster x", "node group
// x/g", "role x", "repository x", "instance profile x".
func (s *Server) Resources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	add := func(kind string, names iter.Seq[string]) {
		for n := range names {
			out = append(out, kind+" "+n)
		}
	}
	add("cluster", maps.Keys(s.clusters))
	add("node group", maps.Keys(s.nodegroups))
	add("role", maps.Keys(s.roles))
	add("repository", maps.Keys(s.repos))
	add("instance profile", maps.Keys(s.profiles))
	slices.Sort(out)
	return out
}

// Cluster is a cluster as the fake holds it.
type Cluster struct {
	Name, Status, RoleARN string
	Tags                  map[string]string
	// Request is the CreateCluster body as sent (JSON decoded); nil for a
	// seeded cluster.
	Request map[string]any
}

// Cluster returns the cluster name.
func (s *Server) Cluster(name string) (Cluster, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clusters[name]
	if !ok {
		return Cluster{}, false
	}
	return Cluster{Name: c.name, Status: c.status, RoleARN: c.roleARN, Tags: copyMap(c.tags), Request: c.request}, true
}

// Role is an IAM role as the fake holds it.
type Role struct {
	Name, Path, Trust string
	Tags              map[string]string
	Policies          []string // attached policy ARNs
}

// Role returns the role name.
func (s *Server) Role(name string) (Role, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.roles[name]
	if !ok {
		return Role{}, false
	}
	return Role{Name: r.name, Path: r.path, Trust: r.trust, Tags: pairsMap(r.tags), Policies: append([]string(nil), r.policies...)}, true
}

// RepositoryTags returns the tags of repository name.
func (s *Server) RepositoryTags(name string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.repos[name]
	if !ok {
		return nil, false
	}
	return pairsMap(r.tags), true
}

// AddCluster seeds an ACTIVE cluster (made by someone else, or by an
// earlier run).
func (s *Server) AddCluster(name string, tags map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clusters[name] = &cluster{name: name, arn: s.arn("eks", "cluster/"+name), status: "ACTIVE", tags: copyMap(tags)}
}

// AddNodegroup seeds an ACTIVE managed node group of cluster.
func (s *Server) AddNodegroup(clusterName, name string, tags map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodegroups[clusterName+"/"+name] = &nodegroup{cluster: clusterName, name: name, status: "ACTIVE",
		arn: s.arn("eks", "nodegroup/"+clusterName+"/"+name+"/0000"), tags: copyMap(tags)}
}

// AddRole seeds an IAM role under path with tags and attached policies.
func (s *Server) AddRole(path, name string, tags map[string]string, policies ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roles[name] = &role{name: name, path: path, arn: "arn:aws:iam::" + s.Account + ":role" + path + name,
		trust: "{}", tags: mapPairs(tags), policies: policies}
}

// AddInstanceProfile puts role into the instance profile profile (as EKS
// Auto Mode does with the node role).
func (s *Server) AddInstanceProfile(profile, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.profiles[profile] == nil {
		s.profiles[profile] = map[string]bool{}
	}
	s.profiles[profile][role] = true
}

// AddRepository seeds an ECR repository with tags.
func (s *Server) AddRepository(name string, tags map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[name] = &repo{name: name, arn: s.arn("ecr", "repository/"+name), tags: mapPairs(tags)}
}

func (s *Server) arn(service, resource string) string {
	return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, s.Region, s.Account, resource)
}

// serve routes a request to its API and records the call.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.Header.Get("X-Amz-Target"), "AmazonEC2ContainerRegistry_V20150921."):
		s.serveECR(w, r)
	case r.URL.Path == "/clusters" || strings.HasPrefix(r.URL.Path, "/clusters/"):
		s.serveEKS(w, r)
	default:
		s.serveQuery(w, r)
	}
}

// record logs action and returns the failure set for it, if any. Callers
// hold s.mu.
func (s *Server) record(action string) (failure, bool) {
	s.calls = append(s.calls, action)
	f, ok := s.failures[action]
	return f, ok
}

// status is the HTTP status AWS answers an error code with.
func status(code string) int {
	switch {
	case strings.Contains(code, "AccessDenied"), code == "UnauthorizedOperation":
		return http.StatusForbidden
	case strings.Contains(code, "NotFound"), code == "NoSuchEntity":
		return http.StatusNotFound
	case code == "EntityAlreadyExists", code == "DeleteConflict", code == "ResourceInUseException":
		return http.StatusConflict
	}
	return http.StatusBadRequest
}

func (s *Server) caData() string {
	ca := s.CAData
	if ca == nil {
		ca = DefaultCA
	}
	return base64.StdEncoding.EncodeToString(ca)
}

func (s *Server) apiServer() string {
	if s.APIServer != "" {
		return s.APIServer
	}
	return "https://127.0.0.1:6443"
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mapPairs(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

func pairsMap(p [][2]string) map[string]string {
	m := make(map[string]string, len(p))
	for _, kv := range p {
		m[kv[0]] = kv[1]
	}
	return m
}

// setPairs sets the tags of add over have, keeping have's order.
func setPairs(have, add [][2]string) [][2]string {
	for _, kv := range add {
		found := false
		for i := range have {
			if have[i][0] == kv[0] {
				have[i][1], found = kv[1], true
			}
		}
		if !found {
			have = append(have, kv)
		}
	}
	return have
}
