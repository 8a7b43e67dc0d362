package consoleclient

import (
	"context"
	"net/http"

	"github.com/scaleproof/scaleproof/autoscaler/api"
)

// The console's policy types (autoscaler/api: one definition for the
// console and its clients). Policy is the body of PUT
// /api/v1/groups/{g}/zones/{z}/policy and the core of its answer:
// {"policy":"step"} or {"policy":"hpa","hpa":{...}}; nil and empty fields
// of an HPASpec are left out of a PUT, so the console's defaults apply.
type (
	Policy          = api.PolicySpec
	HPASpec         = api.HPASpec
	HPAFallback     = api.HPAFallback
	HPABehavior     = api.HPABehavior
	HPARules        = api.HPARules
	HPARatePolicy   = api.HPARatePolicy
	PolicyStatus    = api.PolicyStatus
	PolicyRound     = api.PolicyRound
	PolicyView      = api.PolicyView
	StepRound       = api.StepRound
	StepRoundWorker = api.StepRoundWorker
	StepRoundSample = api.StepRoundSample
)

// GetPolicy reads a zone's policy.
func (c *Client) GetPolicy(ctx context.Context, key, g, z string) (PolicyView, int, error) {
	return doJSON[PolicyView](ctx, c, http.MethodGet, zonePath(g, z)+"/policy", key, nil)
}

// PutPolicy sets a zone's policy and returns it as the console resolved it.
func (c *Client) PutPolicy(ctx context.Context, key, g, z string, p Policy) (PolicyView, int, error) {
	return doJSON[PolicyView](ctx, c, http.MethodPut, zonePath(g, z)+"/policy", key, p)
}
