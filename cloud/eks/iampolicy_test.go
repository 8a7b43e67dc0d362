package eks

import (
	"encoding/json"
	"slices"
	"strings"
)

// The IAM policy the run's identity needs, made from Calls so the policy in
// docs/cloud.md cannot drift from what the code calls (TestPolicyDocs).
//
// Resources follow the IAM ARN formats (IAM User Guide, "IAM identifiers":
// a role's ARN is arn:aws:iam::ACCOUNT:role/PATH/NAME, so the roles under
// RolePath are role/scaleproof/*, which role/scaleproof-* does not match;
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-arns).
// The permissions that are not calls of their own: iam:PassRole (CreateCluster
// hands EKS the roles), iam:TagRole, eks:TagResource (tags given on create
// need the tag permission too: "To add tags when you create a role, you must
// have iam:TagRole"; IAM User Guide, "Permissions required to tag IAM
// identities"), iam:CreateServiceLinkedRole for EKS's own roles (created by
// the account's first cluster: EKS User Guide, "Using service-linked roles
// for Amazon EKS"), and the ECR registry protocol's actions of the image push
// (ECR User Guide, "Pushing a Docker image": the IAM permissions to push).

// PolicyStatement is one statement of an IAM policy document.
type PolicyStatement struct {
	Sid       string         `json:"Sid"`
	Effect    string         `json:"Effect"`
	Action    []string       `json:"Action"`
	Resource  string         `json:"Resource"`
	Condition map[string]any `json:"Condition,omitempty"`
}

// PolicyDocument is an IAM policy document.
type PolicyDocument struct {
	Version   string            `json:"Version"`
	Statement []PolicyStatement `json:"Statement"`
}

var (
	// pushActions: the ECR actions of a docker push (go-containerregistry
	// speaks the registry protocol; ECR authorizes each step).
	pushActions = []string{"ecr:BatchCheckLayerAvailability", "ecr:InitiateLayerUpload", "ecr:UploadLayerPart",
		"ecr:CompleteLayerUpload", "ecr:PutImage", "ecr:BatchGetImage"}
	// onCreateTags: tagging on create needs the tag action.
	onCreateTags = []string{"iam:TagRole", "eks:TagResource"}
	// roleScoped: the IAM actions whose resource is one of the run's roles.
	roleScoped = []string{"iam:CreateRole", "iam:TagRole", "iam:AttachRolePolicy", "iam:PassRole", "iam:ListRoleTags",
		"iam:ListAttachedRolePolicies", "iam:DetachRolePolicy", "iam:ListInstanceProfilesForRole", "iam:DeleteRole"}
	// profileScoped: the IAM actions whose resource is an instance profile
	// (EKS Auto Mode makes its own for the node role; Delete takes the role
	// out of them).
	profileScoped = []string{"iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"}
)

// Policy is the IAM policy document for the run's identity: every action
// of Calls plus the permissions that are not calls, the role actions scoped
// to the roles under RolePath, and the rest on "*".
func Policy() PolicyDocument {
	var star []string
	for _, c := range calls {
		a := strings.TrimSuffix(c.Service, ".amazonaws.com") + ":" + c.Method
		if !slices.Contains(roleScoped, a) && !slices.Contains(profileScoped, a) {
			star = append(star, a)
		}
	}
	star = append(star, pushActions...)
	for _, a := range onCreateTags {
		if !slices.Contains(roleScoped, a) && !slices.Contains(star, a) {
			star = append(star, a)
		}
	}
	slices.Sort(star)
	star = slices.Compact(star)
	roles := slices.Sorted(slices.Values(roleScoped))
	return PolicyDocument{Version: "2012-10-17", Statement: []PolicyStatement{
		{Sid: "ScaleproofRoles", Effect: "Allow", Action: roles, Resource: "arn:aws:iam::*:role" + RolePath + "*"},
		{Sid: "ScaleproofInstanceProfiles", Effect: "Allow", Action: profileScoped, Resource: "arn:aws:iam::*:instance-profile/*"},
		{Sid: "EKSServiceLinkedRoles", Effect: "Allow", Action: []string{"iam:CreateServiceLinkedRole"}, Resource: "*",
			Condition: map[string]any{"StringEquals": map[string]any{"iam:AWSServiceName": []string{"eks.amazonaws.com", "eks-nodegroup.amazonaws.com"}}}},
		{Sid: "Scaleproof", Effect: "Allow", Action: star, Resource: "*"},
	}}
}

// PolicyJSON is Policy as indented JSON (the text of scaleproof-policy.json
// in docs/cloud.md).
func PolicyJSON() string {
	b, _ := json.MarshalIndent(Policy(), "", "  ")
	return string(b) + "\n"
}

// Allows reports whether the document allows action on resource (an IAM
// "*" in a resource matches any run of characters, "/" included).
func (d PolicyDocument) Allows(action, resource string) bool {
	for _, s := range d.Statement {
		if s.Effect == "Allow" && slices.Contains(s.Action, action) && globMatch(s.Resource, resource) {
			return true
		}
	}
	return false
}

func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
