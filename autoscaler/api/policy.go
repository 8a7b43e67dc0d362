package api

import (
	"math"
	"strings"
	"time"
)

// DefaultPollingInterval is KEDA's pollingInterval default (30 s).
const DefaultPollingInterval = 30 * time.Second

// MaxPolicyRounds is how many rounds a zone's policy view keeps
// (PolicyStatus.Rounds for an hpa zone, PolicyView.StepRounds for a step
// zone).
const MaxPolicyRounds = 64

// PolicySpec is a zone's policy as the API reads and writes it:
// {"policy":"step"} or {"policy":"hpa","hpa":{...}}.
type PolicySpec struct {
	Policy string   `json:"policy"`
	HPA    *HPASpec `json:"hpa,omitempty"`
}

// HPASpec configures an hpa zone (upstream HorizontalPodAutoscalerSpec and
// KEDA's ScaledObject with one Prometheus trigger). Omitted fields take
// their defaults when the policy is set (DefaultHPAConfig; max_replicas the
// zone's max_count; polling 30 s); the stored and returned spec has every
// field filled in. Seconds may be fractional (the quick profile divides
// every time by 10).
type HPASpec struct {
	// Query is the PromQL instant query. "%s" is replaced by the group (as
	// the post writes its namespace), "$group" and "$zone" by the group and
	// the zone. The values of the series it returns are summed.
	Query string `json:"query"`
	// Threshold is KEDA's trigger threshold: the value per replica for
	// AverageValue, the total for Value. > 0.
	Threshold float64 `json:"threshold"`
	// Target is "AverageValue" (default, KEDA's) or "Value".
	Target string `json:"target,omitempty"`
	// MinReplicas (default 1) and MaxReplicas (default: max_count) bound the
	// count; 1 <= min <= max <= max_count.
	MinReplicas *int `json:"min_replicas,omitempty"`
	MaxReplicas *int `json:"max_replicas,omitempty"`
	// PollingIntervalSeconds: the query runs at most this often (KEDA's
	// pollingInterval, default 30). The scheduler still visits the zone
	// every interval; rounds in between are skipped.
	PollingIntervalSeconds *float64 `json:"polling_interval_seconds,omitempty"`
	// ReadEmptyAsZero reads no series, NaN or ±Inf as 0 (KEDA's
	// ignoreNullValues); by default they fail the metric (the zone holds).
	ReadEmptyAsZero bool `json:"read_empty_as_zero"`
	// Fallback is KEDA's fallback; omitted: none.
	Fallback *HPAFallback `json:"fallback,omitempty"`
	// Behavior is upstream's behavior; omitted fields take upstream's
	// defaults (defaults.go).
	Behavior *HPABehavior `json:"behavior,omitempty"`
}

// HPAFallback is KEDA's fallback.
type HPAFallback struct {
	FailureThreshold int `json:"failure_threshold"`
	Replicas         int `json:"replicas"`
}

// HPABehavior is upstream's HorizontalPodAutoscalerBehavior.
type HPABehavior struct {
	ScaleDown *HPARules `json:"scale_down,omitempty"`
	ScaleUp   *HPARules `json:"scale_up,omitempty"`
}

// HPARules is upstream's HPAScalingRules.
type HPARules struct {
	StabilizationWindowSeconds *float64        `json:"stabilization_window_seconds,omitempty"`
	SelectPolicy               string          `json:"select_policy,omitempty"` // Max (default), Min, Disabled
	Policies                   []HPARatePolicy `json:"policies,omitempty"`
	Tolerance                  *float64        `json:"tolerance,omitempty"`
}

// HPARatePolicy is upstream's HPAScalingPolicy.
type HPARatePolicy struct {
	Type          string  `json:"type"` // Pods or Percent
	Value         int     `json:"value"`
	PeriodSeconds float64 `json:"period_seconds"`
}

// PollingInterval is the resolved polling interval.
func (h *HPASpec) PollingInterval() time.Duration {
	if h == nil || h.PollingIntervalSeconds == nil {
		return DefaultPollingInterval
	}
	return FromSeconds(*h.PollingIntervalSeconds)
}

// FromSeconds is s seconds (a wire field) as a Duration, rounded to the ns.
func FromSeconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// ExpandQuery returns the query for group and zone.
func (h *HPASpec) ExpandQuery(group, zone string) string {
	q := strings.ReplaceAll(h.Query, "$group", group)
	q = strings.ReplaceAll(q, "$zone", zone)
	return strings.ReplaceAll(q, "%s", group)
}

// PolicyStatus is what the console last saw of an hpa zone's metric.
type PolicyStatus struct {
	// LastQueryAt is when the query last ran (zero: never).
	LastQueryAt time.Time `json:"last_query_at"`
	// Query is the expanded query.
	Query string `json:"query,omitempty"`
	// Signal is the sum of the values it returned; nil when it failed.
	Signal *float64 `json:"signal"`
	// Error is why it failed ("no series", "value NaN", a query error).
	Error string `json:"error,omitempty"`
	// Failures counts the failed rounds in a row.
	Failures int `json:"failures"`
	// NextQueryAt is the earliest time the scheduler runs the query again.
	NextQueryAt time.Time `json:"next_query_at"`
	// Rounds are the zone's last query rounds (at most MaxPolicyRounds,
	// oldest first): what the policy read and decided each time, so a
	// harness judges the zone on the signal the autoscaler saw.
	Rounds []PolicyRound `json:"rounds,omitempty"`
}

// PolicyRound is one query round of an hpa zone.
type PolicyRound struct {
	// At is the round's time: its decision's, and (when the count changed)
	// its audit entry's.
	At time.Time `json:"at"`
	// Value is the metric's total as the policy read it: the sum of the
	// series, no series, NaN and ±Inf read as 0 when read_empty_as_zero.
	// nil when the metric failed (Error says why).
	Value *float64 `json:"value"`
	Error string   `json:"error,omitempty"`
	// Pods is the pods the ratio of an AverageValue metric divides by (the
	// listed workers and the pending ones the count asks for); Ready the
	// listed workers that are ready.
	Pods  int `json:"pods"`
	Ready int `json:"ready"`
	// Action, From and To are the round's decision (hold: From == To).
	Action string `json:"action"`
	From   int    `json:"from"`
	To     int    `json:"to"`
}

// PolicyView is a zone's policy as the API shows it.
type PolicyView struct {
	Group    string   `json:"group"`
	Zone     string   `json:"zone"`
	Policy   string   `json:"policy"`
	HPA      *HPASpec `json:"hpa,omitempty"`
	MaxCount int      `json:"max_count"`
	// EffectiveMaxReplicas is min(hpa.max_replicas, max_count).
	EffectiveMaxReplicas int           `json:"effective_max_replicas,omitempty"`
	Status               *PolicyStatus `json:"status,omitempty"`
	// StepRounds are a step zone's last rounds (at most MaxPolicyRounds,
	// oldest first): what the policy read and decided each time, so a
	// harness recomputes every decision (step_round.go).
	StepRounds []StepRound `json:"step_rounds,omitempty"`
}

// StepRound is one round of a step zone: its inputs and its decision.
type StepRound struct {
	// At is the round's time: the time its cooldowns and startup grace are
	// measured at, its decision's, and (when the count changed) its audit
	// entry's.
	At time.Time `json:"at"`
	// Actor is who ran the round: "scheduler" or the API key's name (a
	// rebalance).
	Actor string `json:"actor"`
	// Count, Max and LastChange are the zone's state the round read;
	// LastChange (zero: never changed) is the clock both cooldowns run from.
	Count      int       `json:"count"`
	Max        int       `json:"max_count"`
	LastChange time.Time `json:"last_change,omitzero"`
	// LowStreak is the consecutive all-low rounds before this one, as the
	// zone carried it; LowStreakAfter is the streak the round left.
	LowStreak      int `json:"low_streak"`
	LowStreakAfter int `json:"low_streak_after"`
	// Missing is the workers the count asks for that discovery did not
	// list (autoscaler.Observation.Missing).
	Missing int `json:"missing"`
	// Workers are the listed workers' samples as the policy read them.
	Workers []StepRoundWorker `json:"workers"`
	// Action, From, To and Reason are the round's decision (hold: From ==
	// To).
	Action string `json:"action"`
	From   int    `json:"from"`
	To     int    `json:"to"`
	Reason string `json:"reason"`
}

// StepRoundWorker is one worker's sample in a round, and the sample of the
// zone's previous round its calls per second are taken over (nil: the
// previous round had no reachable sample of it, so it has no rate).
type StepRoundWorker struct {
	StepRoundSample
	Prev *StepRoundSample `json:"prev,omitempty"`
}

// StepRoundSample is what a round read of one worker: whether it answered
// (Reachable), reports itself ready, is starting (not ready, within the
// startup grace of its creation) or is the zone's canary; its calls in
// flight, its in-flight limit (<= 0: down) and its monotonic calls counter;
// when the sample was taken (the console's clock, after the scrape
// returned) and when the worker was created; Down says why a worker counts
// as down when the console knows more than "no answer".
type StepRoundSample struct {
	ID         string    `json:"id"`
	Reachable  bool      `json:"reachable"`
	Ready      bool      `json:"ready"`
	Starting   bool      `json:"starting,omitempty"`
	Canary     bool      `json:"canary,omitempty"`
	InFlight   int       `json:"in_flight"`
	Limit      int       `json:"limit"`
	CallsTotal uint64    `json:"calls_total"`
	SampledAt  time.Time `json:"sampled_at"`
	Created    time.Time `json:"created"`
	Down       string    `json:"down,omitempty"`
}
