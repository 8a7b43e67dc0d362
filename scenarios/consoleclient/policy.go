package consoleclient

import (
	"context"
	"net/http"
	"time"
)

// Policy is the body of PUT /api/v1/groups/{g}/zones/{z}/policy and the
// core of its answer: {"policy":"step"} or {"policy":"hpa","hpa":{...}}.
type Policy struct {
	Policy string   `json:"policy"`
	HPA    *HPASpec `json:"hpa,omitempty"`
}

// HPASpec is an hpa zone's settings. Nil and empty fields are
// left out of a PUT, so the console's defaults apply.
type HPASpec struct {
	Query                  string       `json:"query"`
	Threshold              float64      `json:"threshold"`
	Target                 string       `json:"target,omitempty"`
	MinReplicas            *int         `json:"min_replicas,omitempty"`
	MaxReplicas            *int         `json:"max_replicas,omitempty"`
	PollingIntervalSeconds *float64     `json:"polling_interval_seconds,omitempty"`
	ReadEmptyAsZero        bool         `json:"read_empty_as_zero"`
	Fallback               *HPAFallback `json:"fallback,omitempty"`
	Behavior               *HPABehavior `json:"behavior,omitempty"`
}

// HPAFallback is KEDA's fallback.
type HPAFallback struct {
	FailureThreshold int `json:"failure_threshold"`
	Replicas         int `json:"replicas"`
}

// HPABehavior is upstream's behavior.
type HPABehavior struct {
	ScaleDown *HPARules `json:"scale_down,omitempty"`
	ScaleUp   *HPARules `json:"scale_up,omitempty"`
}

// HPARules is one direction's behaviour.
type HPARules struct {
	StabilizationWindowSeconds *float64        `json:"stabilization_window_seconds,omitempty"`
	SelectPolicy               string          `json:"select_policy,omitempty"`
	Policies                   []HPARatePolicy `json:"policies,omitempty"`
	Tolerance                  *float64        `json:"tolerance,omitempty"`
}

// HPARatePolicy is one rate policy.
type HPARatePolicy struct {
	Type          string  `json:"type"`
	Value         int     `json:"value"`
	PeriodSeconds float64 `json:"period_seconds"`
}

// PolicyStatus is what the console last saw of an hpa zone's metric.
type PolicyStatus struct {
	LastQueryAt time.Time `json:"last_query_at"`
	Query       string    `json:"query,omitempty"`
	Signal      *float64  `json:"signal"`
	Error       string    `json:"error,omitempty"`
	Failures    int       `json:"failures"`
	NextQueryAt time.Time `json:"next_query_at"`
	// Rounds are the console's last query rounds, oldest first (nil when
	// the console does not report them).
	Rounds []PolicyRound `json:"rounds,omitempty"`
}

// PolicyRound is one query round of an hpa zone as the console ran it: at
// At it read Value (nil when the metric failed: Error), over Pods pods
// (Ready of them ready), and decided Action From -> To.
type PolicyRound struct {
	At     time.Time `json:"at"`
	Value  *float64  `json:"value"`
	Error  string    `json:"error,omitempty"`
	Pods   int       `json:"pods"`
	Ready  int       `json:"ready"`
	Action string    `json:"action"`
	From   int       `json:"from"`
	To     int       `json:"to"`
}

// PolicyView is GET (and PUT's answer) of a zone's policy.
type PolicyView struct {
	Group                string        `json:"group"`
	Zone                 string        `json:"zone"`
	Policy               string        `json:"policy"`
	HPA                  *HPASpec      `json:"hpa,omitempty"`
	MaxCount             int           `json:"max_count"`
	EffectiveMaxReplicas int           `json:"effective_max_replicas,omitempty"`
	Status               *PolicyStatus `json:"status,omitempty"`
	// StepRounds are a step zone's last rounds, oldest first (nil when the
	// console does not report them).
	StepRounds []StepRound `json:"step_rounds,omitempty"`
}

// StepRound is one round of a step zone as the console ran it: what it
// read (the zone's count, max, the last change of the count its cooldowns
// run from, the low streak before the round, the workers the count asks for
// that discovery did not list, each listed worker's sample) and what it
// decided.
type StepRound struct {
	At             time.Time         `json:"at"`
	Actor          string            `json:"actor"`
	Count          int               `json:"count"`
	Max            int               `json:"max_count"`
	LastChange     time.Time         `json:"last_change"`
	LowStreak      int               `json:"low_streak"`
	LowStreakAfter int               `json:"low_streak_after"`
	Missing        int               `json:"missing"`
	Workers        []StepRoundWorker `json:"workers"`
	Action         string            `json:"action"`
	From           int               `json:"from"`
	To             int               `json:"to"`
	Reason         string            `json:"reason"`
}

// StepRoundSample is one worker's sample: in flight, its in-flight limit,
// its calls counter, when it was taken, when the worker was created.
type StepRoundSample struct {
	ID         string    `json:"id"`
	Reachable  bool      `json:"reachable"`
	Ready      bool      `json:"ready"`
	Starting   bool      `json:"starting"`
	Canary     bool      `json:"canary"`
	InFlight   int       `json:"in_flight"`
	Limit      int       `json:"limit"`
	CallsTotal uint64    `json:"calls_total"`
	SampledAt  time.Time `json:"sampled_at"`
	Created    time.Time `json:"created"`
}

// StepRoundWorker is a worker's sample in a round and the previous
// round's sample of it its calls per second are taken over (nil: none).
type StepRoundWorker struct {
	StepRoundSample
	Prev *StepRoundSample `json:"prev,omitempty"`
}

// GetPolicy reads a zone's policy.
func (c *Client) GetPolicy(ctx context.Context, key, g, z string) (PolicyView, int, error) {
	var out PolicyView
	st, err := c.do(ctx, http.MethodGet, zonePath(g, z)+"/policy", key, nil, &out)
	return out, st, err
}

// PutPolicy sets a zone's policy and returns it as the console resolved it.
func (c *Client) PutPolicy(ctx context.Context, key, g, z string, p Policy) (PolicyView, int, error) {
	var out PolicyView
	st, err := c.do(ctx, http.MethodPut, zonePath(g, z)+"/policy", key, p, &out)
	return out, st, err
}
