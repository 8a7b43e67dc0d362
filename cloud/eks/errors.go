package eks

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/scaleproof/scaleproof/cloud"
)

// notAuthorized finds the action an AWS AccessDenied message names: "User:
// arn:aws:iam::1:user/ci is not authorized to perform: eks:CreateCluster on
// resource: ...".
var notAuthorized = regexp.MustCompile(`not authorized to perform:? ([a-zA-Z0-9-]+:[A-Za-z0-9*]+)`)

// apiError makes err, from the call action ("eks:CreateCluster") made for
// op ("create cluster scaleproof-x"), a *cloud.Error:
//
//   - AccessDenied, AccessDeniedException, UnauthorizedOperation (EC2),
//     UnrecognizedClientException, InvalidClientTokenId: Kind "permission",
//     Permission the action the message names, else action;
//   - LimitExceeded, LimitExceededException, ResourceLimitExceededException,
//     ServiceQuotaExceededException and any other code ending in
//     LimitExceeded or QuotaExceeded (VcpuLimitExceeded, ...): Kind "quota";
//   - ResourceNotFoundException, NoSuchEntity, RepositoryNotFoundException:
//     Kind "not found";
//   - a context deadline: Kind "timeout"; anything else "other".
//
// nil stays nil.
func apiError(op, action string, err error) error {
	if cloud.Classified(err) {
		return err
	}
	e := &cloud.Error{Op: op, Kind: "other", Msg: err.Error(), Err: err}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := ae.ErrorCode()
		e.Msg = code + ": " + ae.ErrorMessage()
		switch {
		case isPermission(code):
			e.Kind = "permission"
			e.Permission = action
			if m := notAuthorized.FindStringSubmatch(ae.ErrorMessage()); m != nil {
				e.Permission = m[1]
			}
		case isQuota(code):
			e.Kind = "quota"
		case isNotFound(code):
			e.Kind = "not found"
		}
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		e.Kind = "timeout"
	}
	return e
}

func isPermission(code string) bool {
	switch code {
	case "AccessDenied", "AccessDeniedException", "UnauthorizedOperation",
		"UnrecognizedClientException", "InvalidClientTokenId", "UnauthorizedException":
		return true
	}
	return false
}

func isQuota(code string) bool {
	return strings.HasSuffix(code, "LimitExceeded") || strings.HasSuffix(code, "LimitExceededException") ||
		strings.HasSuffix(code, "QuotaExceeded") || strings.HasSuffix(code, "QuotaExceededException")
}

func isNotFound(code string) bool {
	switch code {
	case "ResourceNotFoundException", "NoSuchEntity", "RepositoryNotFoundException", "NotFoundException":
		return true
	}
	return false
}

// code is err's AWS error code, "" when it is not an AWS API error.
func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// notFound reports whether err says the resource does not exist.
func notFound(err error) bool { return isNotFound(code(err)) }
