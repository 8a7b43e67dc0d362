package eks_test

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/cloud/eks"
	"github.com/scaleproof/scaleproof/cloud/eks/eksfake"
)

var update = flag.Bool("update", false, "rewrite docs/cloud.md's generated IAM policy")

const (
	docsPath    = "../../docs/cloud.md"
	policyBegin = "<!-- eks-policy: generated from cloud/eks's Calls by `go test ./cloud/eks -run TestPolicyDocs -update` -->\n"
	policyEnd   = "<!-- /eks-policy -->\n"
)

// TestPolicyDocs: the IAM policy docs/cloud.md gives for EKS is the one made
// from the code's list of calls (-update rewrites it).
func TestPolicyDocs(t *testing.T) {
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, policyBegin), strings.Index(doc, policyEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated EKS policy block (%q … %q)", docsPath, policyBegin, policyEnd)
	}
	want := "```json\n" + eks.PolicyJSON() + "```\n"
	got := doc[i+len(policyBegin) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(docsPath, []byte(doc[:i+len(policyBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/cloud.md's EKS policy differs from the code's (go test ./cloud/eks -run TestPolicyDocs -update):\n%s", want)
}

// TestPolicyAllowsEveryCall: a whole Create, EnsureRegistry, List and Delete
// against the fake makes only calls the policy allows, on the roles the run
// made (their ARNs carry the path /scaleproof/: role/scaleproof-* would not
// match them).
func TestPolicyAllowsEveryCall(t *testing.T) {
	fake := eksfake.New()
	defer fake.Close()
	fake.AddInstanceProfile("prof", "scaleproof-policy-node")
	p := newProvider(t, fake)
	ctx := context.Background()
	c, err := p.Create(ctx, "scaleproof-policy", labels())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.EnsureRegistry(ctx, labels()); err != nil {
		t.Fatal(err)
	}
	pol := eks.Policy()
	var roleARNs []string
	for _, name := range []string{"scaleproof-policy-cluster", "scaleproof-policy-node"} {
		r, ok := fake.Role(name)
		if !ok {
			t.Fatalf("no role %s in the fake (%v)", name, fake.Resources())
		}
		roleARNs = append(roleARNs, "arn:aws:iam::"+fake.Account+":role"+r.Path+r.Name)
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
	_ = c
	for _, call := range fake.Calls() {
		res := "*"
		profile := call == "iam:RemoveRoleFromInstanceProfile" || call == "iam:DeleteInstanceProfile"
		if strings.HasPrefix(call, "iam:") && call != "iam:ListRoles" && !profile {
			res = roleARNs[0]
		}
		if profile {
			res = "arn:aws:iam::" + fake.Account + ":instance-profile/prof"
		}
		if !pol.Allows(call, res) {
			t.Errorf("the policy does not allow %s on %s", call, res)
		}
	}
	for _, a := range []string{"iam:PassRole", "iam:TagRole", "iam:DeleteRole"} {
		for _, arn := range roleARNs {
			if !pol.Allows(a, arn) {
				t.Errorf("the policy does not allow %s on %s", a, arn)
			}
		}
	}
	// The pattern the docs used to give does not reach the roles' path.
	old := eks.PolicyDocument{Statement: []eks.PolicyStatement{{Effect: "Allow", Action: []string{"iam:DeleteRole"}, Resource: "arn:aws:iam::" + fake.Account + ":role/scaleproof-*"}}}
	if old.Allows("iam:DeleteRole", roleARNs[0]) {
		t.Errorf("role/scaleproof-* matches %s: the role path check is vacuous", roleARNs[0])
	}
}
