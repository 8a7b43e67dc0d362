package eks

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/scaleproof/scaleproof/cloud"
)

func TestAPIErrorKinds(t *testing.T) {
	denied := "User: arn:aws:iam::1:user/ci is not authorized to perform: eks:CreateCluster on resource: arn:aws:eks:us-west-2:1:cluster/x"
	tests := []struct {
		code, msg, action string
		kind, permission  string
	}{
		{"AccessDeniedException", denied, "eks:CreateCluster", "permission", "eks:CreateCluster"},
		{"AccessDenied", "User: x is not authorized to perform: iam:PassRole on resource: y", "eks:CreateCluster", "permission", "iam:PassRole"},
		{"UnauthorizedOperation", "You are not authorized to perform this operation.", "ec2:DescribeSubnets", "permission", "ec2:DescribeSubnets"},
		{"LimitExceeded", "Cannot exceed quota for RolesPerAccount: 1000", "iam:CreateRole", "quota", ""},
		{"ResourceLimitExceededException", "Cluster limit exceeded", "eks:CreateCluster", "quota", ""},
		{"ServiceQuotaExceededException", "quota", "eks:CreateCluster", "quota", ""},
		{"LimitExceededException", "repositories", "ecr:CreateRepository", "quota", ""},
		{"VcpuLimitExceeded", "vCPUs", "ec2:RunInstances", "quota", ""},
		{"ResourceNotFoundException", "No cluster found", "eks:DescribeCluster", "not found", ""},
		{"NoSuchEntity", "role", "iam:GetRole", "not found", ""},
		{"InvalidParameterException", "bad", "eks:CreateCluster", "other", ""},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			err := apiError("create cluster x", tt.action, fmt.Errorf("operation error: %w", &smithy.GenericAPIError{Code: tt.code, Message: tt.msg}))
			var ce *cloud.Error
			if !errors.As(err, &ce) {
				t.Fatalf("%v is not a *cloud.Error", err)
			}
			if ce.Kind != tt.kind || ce.Permission != tt.permission || ce.Op != "create cluster x" {
				t.Errorf("%s → kind %q permission %q op %q, want %q %q", tt.code, ce.Kind, ce.Permission, ce.Op, tt.kind, tt.permission)
			}
			var ae smithy.APIError
			if !errors.As(err, &ae) {
				t.Error("the AWS error is not kept (Unwrap)")
			}
		})
	}
	if err := apiError("op", "a:B", context.DeadlineExceeded); !errors.As(err, new(*cloud.Error)) || err.(*cloud.Error).Kind != "timeout" {
		t.Errorf("deadline → %v, want Kind timeout", err)
	}
	if apiError("op", "a:B", nil) != nil {
		t.Error("nil error became non-nil")
	}
}
