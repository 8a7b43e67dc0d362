package aks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/scaleproof/scaleproof/cloud"
)

// quotaCodes are the ARM/AKS error codes of an exhausted quota.
var quotaCodes = map[string]bool{
	"QuotaExceeded":                 true,
	"ResourceQuotaExceeded":         true,
	"InsufficientVCPUQuota":         true,
	"ErrCode_InsufficientVCPUQuota": true,
	"SubscriptionQuotaExceeded":     true,
	"RegistryQuotaExceeded":         true,
	"RoleAssignmentLimitExceeded":   true,
}

// permissionCodes are the codes of a caller without the right.
var permissionCodes = map[string]bool{
	"AuthorizationFailed":       true,
	"LinkedAuthorizationFailed": true,
	"Forbidden":                 true,
}

// notFoundCodes say the resource (or its group) is not there.
var notFoundCodes = map[string]bool{
	"ResourceNotFound":       true,
	"ResourceGroupNotFound":  true,
	"NotFound":               true,
	"RoleAssignmentNotFound": true,
}

// actionRE finds the action in ARM's AuthorizationFailed message: "The
// client '...' with object id '...' does not have authorization to perform
// action 'Microsoft.ContainerService/managedClusters/write' over scope
// '...' or the scope is invalid."
var actionRE = regexp.MustCompile(`perform action '([^']+)'`)

// asError is err as a *cloud.Error of op: an azcore.ResponseError's code
// mapped to a Kind (permission, naming the action ARM names; quota; not
// found; other), a context deadline as "timeout". nil stays nil.
func asError(op string, err error) error {
	if cloud.Classified(err) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &cloud.Error{Op: op, Kind: "timeout", Msg: "the operation did not finish in time (--operation-timeout)", Err: err}
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return &cloud.Error{Op: op, Kind: "other", Msg: err.Error(), Err: err}
	}
	code, msg := re.ErrorCode, responseMessage(re)
	if code == "" {
		code = http.StatusText(re.StatusCode)
	}
	e := &cloud.Error{Op: op, Kind: "other", Msg: strings.TrimSpace(code + ": " + msg), Err: err}
	switch {
	case permissionCodes[code] || re.StatusCode == http.StatusForbidden:
		e.Kind = "permission"
		if m := actionRE.FindStringSubmatch(msg); m != nil {
			e.Permission = m[1]
		}
	case quotaCodes[code], isQuotaText(code, msg):
		e.Kind = "quota"
	case notFoundCodes[code] || re.StatusCode == http.StatusNotFound:
		e.Kind = "not found"
	}
	return e
}

// isQuotaText: ARM reports some quota refusals as OperationNotAllowed (or
// a failed operation's generic code) whose message speaks of the quota:
// "Operation could not be completed as it results in exceeding approved
// standardDSv5Family Cores quota."
func isQuotaText(code, msg string) bool {
	m := strings.ToLower(msg)
	switch code {
	case "OperationNotAllowed", "BadRequest", "Conflict", "ReconcileVMSSAgentPoolFailed",
		"AgentPoolProvisioningFailed", "VMExtensionProvisioningError", "Failed":
		return strings.Contains(m, "quota")
	}
	return strings.Contains(m, "exceeding approved") && strings.Contains(m, "quota")
}

// responseMessage is the "message" of ARM's error body, {"error": {"code",
// "message"}}, or of a failed operation status, {"status": "Failed",
// "error": {...}}.
func responseMessage(re *azcore.ResponseError) string {
	if re.RawResponse == nil {
		return ""
	}
	body, err := runtime.Payload(re.RawResponse)
	if err != nil || len(body) == 0 {
		return ""
	}
	var b struct {
		Error *struct {
			Code, Message string
			Details       []struct{ Code, Message string }
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	if b.Error == nil {
		return b.Message
	}
	msg := b.Error.Message
	for _, d := range b.Error.Details {
		if d.Message != "" && !strings.Contains(msg, d.Message) {
			msg += " (" + d.Code + ": " + d.Message + ")"
		}
	}
	return msg
}

// isNotFound: err is ARM's 404 (the resource or its group is gone).
func isNotFound(err error) bool {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode == http.StatusNotFound || notFoundCodes[re.ErrorCode]
	}
	var ce *cloud.Error
	return errors.As(err, &ce) && ce.Kind == "not found"
}

// wait polls a long-running operation until it is done, at most
// OperationTimeout, every PollInterval (the SDK's Retry-After wins when ARM
// sends one). The error names op.
func wait[T any](ctx context.Context, p *Provider, op string, poller *runtime.Poller[T]) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.OperationTimeout)
	defer cancel()
	res, err := poller.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: p.o.PollInterval})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return res, &cloud.Error{Op: op, Kind: "timeout",
				Msg: "not finished after " + p.o.OperationTimeout.String() + " (the operation goes on in Azure; the janitor finds what it leaves)", Err: err}
		}
		return res, asError(op, err)
	}
	return res, nil
}
