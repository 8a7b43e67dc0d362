package gke

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/googleapis/gax-go/v2/apierror"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/scaleproof/scaleproof/cloud"
)

// permRE finds the permission in Google's words: "Permission
// 'container.clusters.create' denied on resource ...".
var permRE = regexp.MustCompile(`[Pp]ermission ['"]?([a-z][a-zA-Z]*(?:\.[a-zA-Z]+)+)['"]?`)

// cloudErr turns an API error into a *cloud.Error for op: quota (429,
// RESOURCE_EXHAUSTED, a quota reason), permission (403, PERMISSION_DENIED,
// 401; the permission from the ErrorInfo's metadata or the message), not
// found (404), else other. A context error is a timeout naming op.
func cloudErr(op string, err error) error {
	if cloud.Classified(err) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &cloud.Error{Op: op, Kind: "timeout", Msg: "gave up waiting", Err: err}
	}
	e := &cloud.Error{Op: op, Kind: "other", Msg: err.Error(), Err: err}
	ae, ok := apierror.FromError(err)
	if !ok {
		return e
	}
	e.Msg = ae.Message()
	if e.Msg == "" {
		e.Msg = err.Error()
	}
	code := ae.HTTPCode()
	var grpcCode codes.Code = codes.Unknown
	if s := ae.GRPCStatus(); s != nil {
		grpcCode = s.Code()
	}
	e.Kind = kindOf(code, grpcCode, ae.Reason(), e.Msg)
	if e.Kind == "permission" {
		e.Permission = ae.Metadata()["permission"]
		if e.Permission == "" {
			if m := permRE.FindStringSubmatch(e.Msg); m != nil {
				e.Permission = m[1]
			}
		}
	}
	return e
}

func kindOf(httpCode int, c codes.Code, reason, msg string) string {
	low := strings.ToLower(msg)
	switch {
	case httpCode == http.StatusTooManyRequests, c == codes.ResourceExhausted,
		strings.Contains(strings.ToUpper(reason), "QUOTA"), strings.Contains(low, "quota"):
		return "quota"
	case httpCode == http.StatusForbidden, httpCode == http.StatusUnauthorized, c == codes.PermissionDenied, c == codes.Unauthenticated:
		return "permission"
	case httpCode == http.StatusNotFound, c == codes.NotFound:
		return "not found"
	}
	return "other"
}

// isNotFound reports whether err is a 404.
func isNotFound(err error) bool {
	var ce *cloud.Error
	if errors.As(err, &ce) {
		return ce.Kind == "not found"
	}
	if ae, ok := apierror.FromError(err); ok {
		return ae.HTTPCode() == http.StatusNotFound || (ae.GRPCStatus() != nil && ae.GRPCStatus().Code() == codes.NotFound)
	}
	return false
}

// isBusy reports whether err says another operation is running on the
// resource (a delete right after a create that was cut short): GKE answers
// 400 "Operation ... is currently creating cluster ... Please wait and try
// again", which the REST client reports as InvalidArgument; or
// FAILED_PRECONDITION, ABORTED, 409.
func isBusy(err error) bool {
	ae, ok := apierror.FromError(err)
	if !ok {
		return false
	}
	c := codes.Unknown
	if s := ae.GRPCStatus(); s != nil {
		c = s.Code()
	}
	msg := strings.ToLower(ae.Message())
	return c == codes.FailedPrecondition || c == codes.Aborted || ae.HTTPCode() == http.StatusConflict ||
		(c == codes.InvalidArgument || ae.HTTPCode() == http.StatusBadRequest) && strings.Contains(msg, "operation") && strings.Contains(msg, "try again")
}

// opErr is a finished operation's error as a *cloud.Error.
func opErr(op string, s *spb.Status) error {
	if s == nil || s.GetCode() == 0 {
		return nil
	}
	c := codes.Code(s.GetCode())
	e := &cloud.Error{Op: op, Kind: kindOf(0, c, "", s.GetMessage()), Msg: s.GetMessage() + " (" + c.String() + ", code " + strconv.Itoa(int(c)) + ")"}
	if e.Kind == "permission" {
		if m := permRE.FindStringSubmatch(s.GetMessage()); m != nil {
			e.Permission = m[1]
		}
	}
	return e
}
