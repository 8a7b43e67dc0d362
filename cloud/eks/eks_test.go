package eks_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/eks"
	"github.com/scaleproof/scaleproof/cloud/eks/eksfake"
)

var t0 = time.Date(2026, 12, 2, 3, 10, 0, 0, time.UTC)

// newProvider is an EKS provider on fake with static test credentials, a
// 1 ms poll and a fixed clock.
func newProvider(t *testing.T, fake *eksfake.Server, edit ...func(*cloud.Options)) *eks.Provider {
	t.Helper()
	o := cloud.Options{
		Region:           fake.Region,
		RunID:            "20261202-0310",
		TTL:              3 * time.Hour,
		Endpoint:         fake.URL,
		PollInterval:     time.Millisecond,
		OperationTimeout: 10 * time.Second,
		Now:              func() time.Time { return t0 },
	}
	for _, e := range edit {
		e(&o)
	}
	cfg := aws.Config{
		Region:      o.Region,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret", ""),
	}
	p, err := eks.NewWithConfig(o, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func labels() map[string]string { return cloud.Labels("20261202-0310", t0, 3*time.Hour) }

func kinds(rs []cloud.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// deleteAll deletes rs in reverse, as Down does.
func deleteAll(t *testing.T, p *eks.Provider, rs []cloud.Resource) {
	t.Helper()
	for i := len(rs) - 1; i >= 0; i-- {
		if err := p.Delete(context.Background(), rs[i]); err != nil {
			t.Fatalf("delete %s: %v", rs[i], err)
		}
	}
}

func TestNewRefusesWithoutRegion(t *testing.T) {
	_, err := eks.New(cloud.Options{})
	if err == nil || err.Error() != "--region is required for eks" {
		t.Fatalf("New without a region: %v, want the flag named", err)
	}
}

// TestCreateTokenDelete is the whole life of a cluster on the fake:
// create (roles, default subnets, Auto Mode cluster) → wait until ACTIVE →
// token → delete what Created lists, in reverse.
func TestCreateTokenDelete(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	fake.SetPolls(3)
	p := newProvider(t, fake)
	name := cloud.ClusterName("20261202-0310")
	ctx := context.Background()

	c, err := p.Create(ctx, name, labels())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"role " + name + "-cluster", "role " + name + "-node", "cluster " + name}
	if got := kinds(c.Created); !slices.Equal(got, want) {
		t.Errorf("Created = %v, want %v", got, want)
	}
	if c.Server != "https://127.0.0.1:6443" || string(c.CAData) != string(eksfake.DefaultCA) || c.Adopted {
		t.Errorf("cluster = %q %q adopted %v, want the fake's endpoint and CA", c.Server, c.CAData, c.Adopted)
	}
	for _, r := range c.Created {
		if !r.Ours() || r.Labels[cloud.LabelExpiresAt] != labels()[cloud.LabelExpiresAt] {
			t.Errorf("%s labels = %v", r, r.Labels)
		}
	}

	fc, ok := fake.Cluster(name)
	if !ok || fc.Status != "ACTIVE" {
		t.Fatalf("fake cluster = %+v", fc)
	}
	if fc.Tags[cloud.LabelRunID] != "20261202-0310" || fc.Tags[cloud.LabelManagedBy] != cloud.ManagedByValue {
		t.Errorf("cluster tags = %v", fc.Tags)
	}
	req := fc.Request
	access := req["accessConfig"].(map[string]any)
	if access["authenticationMode"] != "API" || access["bootstrapClusterCreatorAdminPermissions"] != true {
		t.Errorf("accessConfig = %v, want API with the creator's admin access entry", access)
	}
	compute := req["computeConfig"].(map[string]any)
	if compute["enabled"] != true || !strings.HasSuffix(compute["nodeRoleArn"].(string), ":role/scaleproof/"+name+"-node") {
		t.Errorf("computeConfig = %v, want Auto Mode with the node role", compute)
	}
	if req["bootstrapSelfManagedAddons"] != false {
		t.Errorf("bootstrapSelfManagedAddons = %v, want false with Auto Mode", req["bootstrapSelfManagedAddons"])
	}
	subnets := req["resourcesVpcConfig"].(map[string]any)["subnetIds"].([]any)
	if len(subnets) != 3 || subnets[0] != "subnet-0default0" || subnets[2] != "subnet-0default2" {
		t.Errorf("subnets = %v, want the default VPC's three default subnets", subnets)
	}

	cr, _ := fake.Role(name + "-cluster")
	if cr.Path != eks.RolePath || !strings.Contains(cr.Trust, "eks.amazonaws.com") || !strings.Contains(cr.Trust, "sts:TagSession") ||
		!slices.Contains(cr.Policies, "arn:aws:iam::aws:policy/AmazonEKSComputePolicy") || len(cr.Policies) != 5 || !(cloud.Resource{Labels: cr.Tags}).Ours() {
		t.Errorf("cluster role = %+v", cr)
	}
	nr, _ := fake.Role(name + "-node")
	if !strings.Contains(nr.Trust, "ec2.amazonaws.com") || !slices.Contains(nr.Policies, "arn:aws:iam::aws:policy/AmazonEKSWorkerNodeMinimalPolicy") {
		t.Errorf("node role = %+v", nr)
	}

	tok, err := p.Token(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	checkToken(t, fake, tok, name)

	deleteAll(t, p, c.Created)
	if got := fake.Resources(); len(got) != 0 {
		t.Errorf("after delete the fake still has %v", got)
	}
}

// checkToken decodes an EKS bearer token and checks the presigned URL, then
// sends it as the EKS API server would.
func checkToken(t *testing.T, fake *eksfake.Server, tok cloud.Token, cluster string) {
	t.Helper()
	if want := t0.Add(14 * time.Minute); !tok.Expiry.Equal(want) {
		t.Errorf("token expiry = %v, want %v (15 min less a margin)", tok.Expiry, want)
	}
	enc, ok := strings.CutPrefix(tok.Value, "k8s-aws-v1.")
	if !ok || strings.ContainsAny(enc, "=+/") {
		t.Fatalf("token %q: want k8s-aws-v1. and base64url without padding", tok.Value)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	fu, _ := url.Parse(fake.URL)
	for k, want := range map[string]string{"Action": "GetCallerIdentity", "Version": "2011-06-15", "X-Amz-Expires": "60", "X-Amz-Algorithm": "AWS4-HMAC-SHA256"} {
		if q.Get(k) != want {
			t.Errorf("presigned URL %s = %q, want %q", k, q.Get(k), want)
		}
	}
	if u.Host != fu.Host {
		t.Errorf("presigned URL host %q, want the STS endpoint %q", u.Host, fu.Host)
	}
	if !slices.Contains(strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), "x-k8s-aws-id") {
		t.Errorf("X-Amz-SignedHeaders = %q, want x-k8s-aws-id signed", q.Get("X-Amz-SignedHeaders"))
	}
	if !strings.Contains(q.Get("X-Amz-Credential"), "/"+fake.Region+"/sts/aws4_request") || q.Get("X-Amz-Signature") == "" {
		t.Errorf("presigned URL credential %q signature %q", q.Get("X-Amz-Credential"), q.Get("X-Amz-Signature"))
	}
	// What the API server does with it: GET with the header.
	for _, header := range []bool{false, true} {
		req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
		if header {
			req.Header.Set("x-k8s-aws-id", cluster)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ok := resp.StatusCode == http.StatusOK; ok != header {
			t.Errorf("GET presigned URL with header %v: %d %s", header, resp.StatusCode, body)
		} else if header && !strings.Contains(string(body), fake.Account) {
			t.Errorf("GetCallerIdentity answered %s", body)
		}
	}
}

// TestNewWithFakeEndpoint goes through New (the default credential chain)
// pointed at a fake: with no AWS_ACCESS_KEY_ID it uses static test
// credentials and never reads shared files or instance metadata.
func TestNewWithFakeEndpoint(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_PROFILE", "")
	fake := eksfake.New()
	defer fake.Close()
	p, err := eks.New(cloud.Options{Region: fake.Region, Endpoint: fake.URL, PollInterval: time.Millisecond, OperationTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fake.AddCluster("theirs", nil)
	c, err := p.Adopt(context.Background(), "theirs")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Adopted || len(c.Created) != 0 || c.Server == "" {
		t.Errorf("adopted cluster = %+v", c)
	}
	if _, err := p.Adopt(context.Background(), "missing"); !isKind(err, "not found") {
		t.Errorf("adopting a missing cluster: %v, want Kind not found", err)
	}
}

func isKind(err error, kind string) bool {
	var ce *cloud.Error
	return errors.As(err, &ce) && ce.Kind == kind
}

// TestCreateFailsHalfway: each failure leaves Created listing exactly what
// exists, the error says why (permission named, quota), and deleting
// Created in reverse leaves nothing.
func TestCreateFailsHalfway(t *testing.T) {
	name := cloud.ClusterName("20261202-0310")
	roles := []string{"role " + name + "-cluster", "role " + name + "-node"}
	tests := []struct {
		name        string
		setup       func(*eksfake.Server)
		wantCreated []string
		kind        string
		permission  string
		msg         string
	}{
		{"no default VPC", (*eksfake.Server).NoDefaultVPC, nil, "other", "", "has no default VPC"},
		{"DescribeVpcs denied (EC2 names no action)", func(f *eksfake.Server) { f.Deny("ec2:DescribeVpcs") }, nil, "permission", "ec2:DescribeVpcs", "UnauthorizedOperation"},
		{"CreateRole quota", func(f *eksfake.Server) { f.Quota("iam:CreateRole") }, nil, "quota", "", "LimitExceeded"},
		{"AttachRolePolicy denied", func(f *eksfake.Server) { f.Deny("iam:AttachRolePolicy") }, roles[:1], "permission", "iam:AttachRolePolicy", "not authorized"},
		{"CreateCluster quota", func(f *eksfake.Server) { f.Quota("eks:CreateCluster") }, roles, "quota", "", "ResourceLimitExceededException"},
		{"CreateCluster denied", func(f *eksfake.Server) { f.Deny("eks:CreateCluster") }, roles, "permission", "eks:CreateCluster", "AccessDeniedException"},
		{"CreateCluster lacks iam:PassRole (named in the message)", func(f *eksfake.Server) {
			f.Fail("eks:CreateCluster", "AccessDeniedException", "User: arn:aws:iam::123456789012:user/ci is not authorized to perform: iam:PassRole on resource: arn:aws:iam::123456789012:role/scaleproof/x")
		}, roles, "permission", "iam:PassRole", "PassRole"},
		{"cluster ends FAILED after it exists", func(f *eksfake.Server) { f.FailClusters(true) }, append(roles[:2:2], "cluster "+name), "other", "", "FAILED: Ec2SubnetInvalidConfiguration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := eksfake.New()
			defer fake.Close()
			tt.setup(fake)
			p := newProvider(t, fake)
			c, err := p.Create(context.Background(), name, labels())
			var ce *cloud.Error
			if !errors.As(err, &ce) {
				t.Fatalf("Create: %v, want a *cloud.Error", err)
			}
			if ce.Kind != tt.kind || ce.Permission != tt.permission || !strings.Contains(ce.Error(), tt.msg) {
				t.Errorf("error = %q (kind %q, permission %q), want kind %q permission %q containing %q", ce, ce.Kind, ce.Permission, tt.kind, tt.permission, tt.msg)
			}
			if ce.Op != "create cluster "+name && !strings.HasPrefix(ce.Op, "create IAM role "+name) {
				t.Errorf("Op = %q", ce.Op)
			}
			if tt.permission != "" && !strings.Contains(ce.Error(), "missing permission "+tt.permission) {
				t.Errorf("error %q does not name the permission", ce)
			}
			if got := kinds(c.Created); !slices.Equal(got, tt.wantCreated) {
				t.Errorf("Created = %v, want %v", got, tt.wantCreated)
			}
			if got := fake.Resources(); !slices.Equal(got, slices.Sorted(slices.Values(tt.wantCreated))) {
				t.Errorf("the fake has %v, Created says %v", got, tt.wantCreated)
			}
			fake.Fail("iam:AttachRolePolicy", "", "")
			deleteAll(t, p, c.Created)
			if got := fake.Resources(); len(got) != 0 {
				t.Errorf("after deleting Created the fake still has %v", got)
			}
		})
	}
}

// TestCreateNeverFinishes: a cluster that never leaves CREATING times out
// with an error naming the operation; Created lists it, and deleting it
// waits for it to settle first (EKS refuses to delete a CREATING cluster).
func TestCreateNeverFinishes(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	fake.SetStuck(true)
	// The create's timeout bounds the CreateCluster call and the first
	// DescribeCluster too (each poll's check runs under it), which must
	// answer for the error to be the one asserted: 2 s, so a loaded machine
	// cannot fail them. The delete under test gets 100 ms: its expiry is
	// all it checks.
	pc := newProvider(t, fake, func(o *cloud.Options) { o.OperationTimeout = 2 * time.Second })
	p := newProvider(t, fake, func(o *cloud.Options) { o.OperationTimeout = 100 * time.Millisecond })
	name := cloud.ClusterName("20261202-0310")
	c, err := pc.Create(context.Background(), name, labels())
	var ce *cloud.Error
	if !errors.As(err, &ce) || ce.Kind != "timeout" || ce.Op != "create cluster "+name || !strings.Contains(ce.Msg, "CREATING") {
		t.Fatalf("Create: %v, want a timeout naming create cluster %s and its state", err, name)
	}
	if got := kinds(c.Created); len(got) != 3 || got[2] != "cluster "+name {
		t.Fatalf("Created = %v, want the roles and the cluster", got)
	}
	// Still stuck: deleting times out too, naming the wait.
	if err := p.Delete(context.Background(), c.Created[2]); !isKind(err, "timeout") || !strings.Contains(err.Error(), "delete cluster "+name) {
		t.Fatalf("delete a cluster stuck CREATING: %v, want a timeout naming it", err)
	}
	fake.SetStuck(false)
	p = newProvider(t, fake)
	deleteAll(t, p, c.Created)
	if got := fake.Resources(); len(got) != 0 {
		t.Errorf("after delete the fake still has %v", got)
	}
}

// TestListAndJanitor: List over ours expired, ours unexpired and foreign
// resources of every kind returns them all with their tags, node groups
// before their clusters; deleting the expired scaleproof ones (what the
// janitor does) leaves the rest untouched.
func TestListAndJanitor(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	expired := cloud.Labels("old-run", t0.Add(-5*time.Hour), 3*time.Hour)
	live := cloud.Labels("live-run", t0, 3*time.Hour)
	foreign := map[string]string{"team": "payments"}
	fake.AddCluster("scaleproof-old-run", expired)
	fake.AddNodegroup("scaleproof-old-run", "workers", expired)
	fake.AddCluster("scaleproof-live-run", live)
	fake.AddCluster("payments", foreign)
	fake.AddNodegroup("payments", "ng-1", foreign)
	fake.AddCluster("scaleproof-untagged", nil)
	fake.AddRole(eks.RolePath, "scaleproof-old-run-cluster", expired, "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy")
	fake.AddRole(eks.RolePath, "scaleproof-old-run-node", expired, "arn:aws:iam::aws:policy/AmazonEKSWorkerNodeMinimalPolicy")
	fake.AddInstanceProfile("eks-auto-node-profile", "scaleproof-old-run-node")
	fake.AddRole(eks.RolePath, "scaleproof-live-run-cluster", live)
	fake.AddRole(eks.RolePath, "someone-elses", foreign)
	fake.AddRole("/", "admin", expired) // outside the path: never listed
	fake.AddRepository("scaleproof-ref", expired)
	fake.AddRepository("payments-api", foreign)
	p := newProvider(t, fake)

	rs, err := p.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"node group payments/ng-1", "node group scaleproof-old-run/workers",
		"cluster payments", "cluster scaleproof-live-run", "cluster scaleproof-old-run", "cluster scaleproof-untagged",
		"role scaleproof-live-run-cluster", "role scaleproof-old-run-cluster", "role scaleproof-old-run-node", "role someone-elses",
		"repository payments-api", "repository scaleproof-ref",
	}
	if got := kinds(rs); !slices.Equal(got, want) {
		t.Fatalf("List = %v\nwant %v", got, want)
	}
	for _, r := range rs {
		var wantLabels map[string]string
		switch {
		case strings.Contains(r.Name, "old-run") || r.Name == "scaleproof-ref":
			wantLabels = expired
		case strings.Contains(r.Name, "live-run"):
			wantLabels = live
		case strings.Contains(r.Name, "untagged"):
			wantLabels = map[string]string{}
		default:
			wantLabels = foreign
		}
		if !mapsEqual(r.Labels, wantLabels) {
			t.Errorf("%s labels = %v, want %v", r, r.Labels, wantLabels)
		}
		if r.ID == "" {
			t.Errorf("%s has no ARN", r)
		}
	}

	for _, r := range rs {
		exp, ok := r.ExpiresAt()
		if r.Ours() && ok && exp.Before(t0) {
			if err := p.Delete(context.Background(), r); err != nil {
				t.Fatalf("delete %s: %v", r, err)
			}
		}
	}
	wantLeft := []string{
		"cluster payments", "cluster scaleproof-live-run", "cluster scaleproof-untagged", "node group payments/ng-1",
		"repository payments-api", "role admin", "role scaleproof-live-run-cluster", "role someone-elses",
	}
	if got := fake.Resources(); !slices.Equal(got, wantLeft) {
		t.Errorf("after the janitor the fake has %v\nwant %v", got, wantLeft)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestDeleteAlreadyGone: deleting what does not exist is not an error, for
// every kind; an unknown kind is.
func TestDeleteAlreadyGone(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	p := newProvider(t, fake)
	for _, r := range []cloud.Resource{
		{Kind: "cluster", Name: "gone"},
		{Kind: "node group", Name: "gone/ng"},
		{Kind: "role", Name: "gone"},
		{Kind: "repository", Name: "gone"},
	} {
		if err := p.Delete(context.Background(), r); err != nil {
			t.Errorf("delete %s that is gone: %v", r, err)
		}
	}
	if err := p.Delete(context.Background(), cloud.Resource{Kind: "resource group", Name: "x"}); err == nil {
		t.Error("deleting a kind EKS never makes: no error")
	}
	fake.Deny("eks:DeleteCluster")
	fake.AddCluster("c", nil)
	var ce *cloud.Error
	if err := p.Delete(context.Background(), cloud.Resource{Kind: "cluster", Name: "c"}); !errors.As(err, &ce) || ce.Permission != "eks:DeleteCluster" {
		t.Errorf("delete denied: %v, want the permission named", err)
	}
}

func TestPlan(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	p := newProvider(t, fake)
	o := cloud.Options{Region: fake.Region, RunID: "20261202-0310", TTL: 3 * time.Hour}
	name := cloud.ClusterName(o.RunID)
	plan := p.Plan(o)
	want := []string{"role " + name + "-cluster", "role " + name + "-node", "cluster " + name, "repository scaleproof-ref/20261202-0310"}
	if got := kinds(plan.Resources); !slices.Equal(got, want) {
		t.Errorf("plan = %v, want %v", got, want)
	}
	if !strings.Contains(plan.Resources[2].ID, "default VPC") || !plan.Resources[2].Ours() {
		t.Errorf("the plan's cluster = %+v, want the default VPC said and our labels", plan.Resources[2])
	}
	o.Cluster = "theirs"
	if got := kinds(p.Plan(o).Resources); !slices.Equal(got, want[3:]) {
		t.Errorf("plan adopting = %v, want only the repository", got)
	}
	if len(plan.Calls) == 0 || len(fake.Calls()) != 0 {
		t.Errorf("plan has %d calls and made %v; want calls listed and none made", len(plan.Calls), fake.Calls())
	}
}

// TestCallsListEveryCallMade runs every path (create, token, registry,
// list, delete) and checks each call the fake saw is in Calls, which docs
// and `cloud plan` print.
func TestCallsListEveryCallMade(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	fake.AddNodegroup("x", "ng", nil)
	fake.AddCluster("x", nil)
	fake.AddInstanceProfile("prof", "r")
	fake.AddRole(eks.RolePath, "r", nil, "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy")
	p := newProvider(t, fake)
	ctx := context.Background()
	c, err := p.Create(ctx, "scaleproof-calls", labels())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Token(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, l := range []map[string]string{labels(), cloud.Labels("later", t0.Add(time.Hour), 3*time.Hour)} {
		if _, err := p.EnsureRegistry(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if err := p.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	listed := map[string]bool{}
	for _, c := range eks.Calls() {
		listed[strings.TrimSuffix(c.Service, ".amazonaws.com")+":"+c.Method] = true
	}
	seen := map[string]bool{}
	for _, c := range fake.Calls() {
		seen[c] = true
		if !listed[c] {
			t.Errorf("the provider called %s, which Calls does not list", c)
		}
	}
	for c := range listed {
		if !seen[c] && c != "iam:PassRole" && c != "sts:GetCallerIdentity" {
			t.Errorf("Calls lists %s, which no path made", c)
		}
	}
}

// TestCreateWaitsForIAMPropagation: EKS refusing a just-made role ("could
// not be assumed") is retried until IAM has propagated it.
func TestCreateWaitsForIAMPropagation(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	fake.SetRolePropagation(2)
	p := newProvider(t, fake)
	if _, err := p.Create(context.Background(), "scaleproof-iam", labels()); err != nil {
		t.Fatal(err)
	}
	n := calls(fake, "eks:CreateCluster")
	if n != 3 {
		t.Errorf("CreateCluster called %d times, want 3 (two refusals, then created)", n)
	}
}

// TestCreateReturnsTheFakesEndpoint: the fake can hand out another
// cluster's API server and CA (a kind cluster's, for the run that goes from
// Up to the scenarios), and Create passes them through as they are.
func TestCreateReturnsTheFakesEndpoint(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	fake.APIServer = "https://127.0.0.1:40123"
	fake.CAData = []byte("-----BEGIN CERTIFICATE-----\nkind\n-----END CERTIFICATE-----\n")
	c, err := newProvider(t, fake).Create(context.Background(), "scaleproof-handoff", labels())
	if err != nil {
		t.Fatal(err)
	}
	if c.Server != fake.APIServer || string(c.CAData) != string(fake.CAData) {
		t.Errorf("cluster endpoint %q CA %q, want the fake's %q %q", c.Server, c.CAData, fake.APIServer, fake.CAData)
	}
}

// TestUnsupportedZoneByID: EKS refuses a control plane subnet by zone ID
// (use1-az3 in us-east-1), and an account's zone names map to IDs its own
// way. In an account where us-east-1a is use1-az3, Create must leave out the
// a subnet (matched by its AvailabilityZoneId) and create the cluster in b
// and c; a name-based rule picks a and gets UnsupportedAvailabilityZoneException.
func TestUnsupportedZoneByID(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ids   map[string]string
		zones []string // the zones whose default subnets the cluster gets
	}{
		{"us-east-1a is use1-az3 here", map[string]string{"us-east-1a": "use1-az3", "us-east-1c": "use1-az1"}, []string{"subnet-0default1", "subnet-0default2"}},
		{"us-east-1c is use1-az3 here", map[string]string{"us-east-1a": "use1-az1", "us-east-1c": "use1-az3"}, []string{"subnet-0default0", "subnet-0default1"}},
		{"no unsupported zone in this region", nil, []string{"subnet-0default0", "subnet-0default1", "subnet-0default2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := eksfake.New()
			defer fake.Close()
			fake.Region = "us-east-1"
			if tc.ids != nil {
				fake.SetZoneIDs(tc.ids)
			} else {
				fake.Region = "us-east-2"
			}
			p := newProvider(t, fake)
			c, err := p.Create(context.Background(), "scaleproof-zones", labels())
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			defer deleteAll(t, p, c.Created)
			var got []string
			if cl, ok := fake.Cluster("scaleproof-zones"); ok {
				vpc, _ := cl.Request["resourcesVpcConfig"].(map[string]any)
				ids, _ := vpc["subnetIds"].([]any)
				for _, id := range ids {
					got = append(got, fmt.Sprint(id))
				}
			}
			if !slices.Equal(got, tc.zones) {
				t.Errorf("cluster subnets %v, want %v", got, tc.zones)
			}
		})
	}
}

// TestMissingServiceLinkedRoleFailsFast: when EKS cannot assume its
// service-linked role (it does not exist and the caller may not create
// it), waiting does not help: Create fails at once with a permission error
// that names iam:CreateServiceLinkedRole, after one CreateCluster, instead
// of retrying until the operation timeout as it does for the run's own new
// roles.
func TestMissingServiceLinkedRoleFailsFast(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	fake.Fail("eks:CreateCluster", "InvalidParameterException", "Role with arn: arn:aws:iam::"+eksfake.DefaultAccount+
		":role/aws-service-role/eks.amazonaws.com/AWSServiceRoleForAmazonEKS, could not be assumed because it does not exist or the trusted entity is not correct")
	p := newProvider(t, fake)
	_, err := p.Create(context.Background(), "scaleproof-slr", labels())
	var ce *cloud.Error
	if !errors.As(err, &ce) || ce.Kind != "permission" || !strings.Contains(err.Error(), "iam:CreateServiceLinkedRole") {
		t.Fatalf("Create = %v, want a permission error naming iam:CreateServiceLinkedRole", err)
	}
	n := calls(fake, "eks:CreateCluster")
	if n != 1 {
		t.Errorf("CreateCluster called %d times, want 1 (no waiting for a role that will not appear)", n)
	}
}

// calls is how many times the fake saw action.
func calls(fake *eksfake.Server, action string) int {
	n := 0
	for _, c := range fake.Calls() {
		if c == action {
			n++
		}
	}
	return n
}
