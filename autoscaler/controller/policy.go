package controller

// Per-zone decision policy: a zone runs the step policy of Ramen 0.7.5's autoscaling notes
// (the default) or the hpa policy of autoscaler/hpa.go on a PromQL query.
//
// The bounds rule. A zone's max_count (Ramen 0.7.5's autoscaling notes, "The bounds") stays the hard
// upper bound of every policy:
//
//   - hpa.max_replicas defaults to the zone's max_count, and a policy whose
//     max_replicas is above max_count is refused (422): raise max_count
//     first (PUT workers), then the hpa max;
//   - lowering max_count under hpa.max_replicas lowers max_replicas (and
//     min_replicas, if it is above) to the new max_count in the same
//     transaction, audited as workers.policy with reason "max_count lowered";
//   - raising max_count leaves max_replicas as it is (an admin's explicit
//     hpa max stays; raise it with PUT policy);
//   - each round the hpa policy runs with MaxReplicas = min(max_replicas,
//     max_count), so no order of changes can take the count over max_count.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/api"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// Policy names.
const (
	PolicyStep = "step"
	PolicyHPA  = "hpa"
)

// AuditPolicy is the audit action of a policy change (tags from, to).
const AuditPolicy = "workers.policy"

// Limits of an hpa policy's values.
const (
	// MaxQueryLen caps a PromQL query.
	MaxQueryLen = 4096
	// DefaultPollingInterval is KEDA's pollingInterval default (30 s).
	DefaultPollingInterval = api.DefaultPollingInterval
	// MaxPollingInterval caps the polling interval.
	MaxPollingInterval = time.Hour
	// hpaMetricName is the name of a zone's one hpa metric (in reasons and
	// failure counts).
	hpaMetricName = "query"
)

// MaxPolicyRounds is how many rounds a zone's policy view keeps.
const MaxPolicyRounds = api.MaxPolicyRounds

// The API's policy types (autoscaler/api), under the controller's names.
type (
	PolicySpec        = api.PolicySpec
	HPASpec           = api.HPASpec
	HPAFallbackSpec   = api.HPAFallback
	HPABehaviorSpec   = api.HPABehavior
	HPARulesSpec      = api.HPARules
	HPARatePolicySpec = api.HPARatePolicy
	PolicyStatus      = api.PolicyStatus
	PolicyRound       = api.PolicyRound
	PolicyView        = api.PolicyView
)

func ptr[T any](v T) *T { return &v }

// resolve fills in every default of h for a zone whose max_count is
// maxCount and checks every value. The error is a *ValidationError naming
// every bad field (JSON names).
func resolveHPA(h HPASpec, maxCount int) (HPASpec, error) {
	def := autoscaler.DefaultHPAConfig()
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

	out := h
	out.Query = strings.TrimSpace(h.Query)
	switch {
	case out.Query == "":
		bad("query is required (PromQL; %%s or $group is the group, $zone the zone)")
	case len(out.Query) > MaxQueryLen:
		bad("query is %d bytes, over the limit %d", len(out.Query), MaxQueryLen)
	}
	if !finite(h.Threshold) || h.Threshold <= 0 {
		bad("threshold %v: want a number > 0 (the value per replica for AverageValue)", h.Threshold)
	}
	out.Target = cmp.Or(h.Target, string(autoscaler.HPAAverageValue))
	if out.Target != string(autoscaler.HPAAverageValue) && out.Target != string(autoscaler.HPAValue) {
		bad("target %q: want AverageValue or Value", h.Target)
	}
	if out.MinReplicas == nil {
		out.MinReplicas = ptr(def.MinReplicas)
	}
	if out.MaxReplicas == nil {
		out.MaxReplicas = ptr(maxCount)
	}
	lo, hi := *out.MinReplicas, *out.MaxReplicas
	switch {
	case lo < 1:
		bad("min_replicas %d: want >= 1", lo)
	case hi < lo:
		bad("max_replicas %d is below min_replicas %d", hi, lo)
	}
	if hi > maxCount {
		bad("max_replicas %d is above the zone's max_count %d: raise max_count first (PUT workers), or leave max_replicas out to use max_count", hi, maxCount)
	}
	if out.PollingIntervalSeconds == nil {
		out.PollingIntervalSeconds = ptr(DefaultPollingInterval.Seconds())
	}
	if p := *out.PollingIntervalSeconds; !finite(p) || p <= 0 || p > MaxPollingInterval.Seconds() {
		bad("polling_interval_seconds %v: want a number in (0, %g]", p, MaxPollingInterval.Seconds())
	}
	if f := h.Fallback; f != nil {
		if f.FailureThreshold < 0 {
			bad("fallback.failure_threshold %d: want >= 0", f.FailureThreshold)
		}
		if f.Replicas < 0 {
			bad("fallback.replicas %d: want >= 0", f.Replicas)
		}
		out.Fallback = &HPAFallbackSpec{FailureThreshold: f.FailureThreshold, Replicas: f.Replicas}
	}
	var b HPABehaviorSpec
	if h.Behavior != nil {
		b = *h.Behavior
	}
	out.Behavior = &HPABehaviorSpec{
		ScaleDown: resolveRules(b.ScaleDown, autoscaler.DefaultHPAScaleDownRules(), "behavior.scale_down", bad),
		ScaleUp:   resolveRules(b.ScaleUp, autoscaler.DefaultHPAScaleUpRules(), "behavior.scale_up", bad),
	}
	if len(errs) == 0 {
		// The policy's own ranges, as a backstop.
		if err := hpaConfig(out, maxCount).Validate(); err != nil {
			bad("%s", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
	if len(errs) > 0 {
		return h, &ValidationError{Field: "hpa", Reason: strings.Join(errs, "; ")}
	}
	return out, nil
}

// resolveRules fills one direction's rules from def and checks them.
func resolveRules(r *HPARulesSpec, def autoscaler.HPAScalingRules, field string, bad func(string, ...any)) *HPARulesSpec {
	out := HPARulesSpec{}
	if r != nil {
		out = *r
	}
	if out.StabilizationWindowSeconds == nil {
		out.StabilizationWindowSeconds = ptr(def.StabilizationWindow.Seconds())
	}
	if w := *out.StabilizationWindowSeconds; math.IsNaN(w) || w < 0 || w > 3600 {
		bad("%s.stabilization_window_seconds %v: want 0..3600", field, w)
	}
	out.SelectPolicy = cmp.Or(out.SelectPolicy, string(autoscaler.HPASelectMax))
	switch autoscaler.HPASelectPolicy(out.SelectPolicy) {
	case autoscaler.HPASelectMax, autoscaler.HPASelectMin, autoscaler.HPASelectDisabled:
	default:
		bad("%s.select_policy %q: want Max, Min or Disabled", field, out.SelectPolicy)
	}
	if len(out.Policies) == 0 {
		for _, p := range def.Policies {
			out.Policies = append(out.Policies, HPARatePolicySpec{Type: string(p.Type), Value: p.Value, PeriodSeconds: p.Period.Seconds()})
		}
	}
	for i, p := range out.Policies {
		if p.Type != string(autoscaler.HPAPodsPolicy) && p.Type != string(autoscaler.HPAPercentPolicy) {
			bad("%s.policies[%d].type %q: want Pods or Percent", field, i, p.Type)
		}
		if p.Value <= 0 {
			bad("%s.policies[%d].value %d: want > 0", field, i, p.Value)
		}
		if math.IsNaN(p.PeriodSeconds) || p.PeriodSeconds <= 0 || p.PeriodSeconds > 1800 {
			bad("%s.policies[%d].period_seconds %v: want a number in (0, 1800]", field, i, p.PeriodSeconds)
		}
	}
	if out.Tolerance == nil {
		out.Tolerance = ptr(def.Tolerance)
	}
	if t := *out.Tolerance; math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
		bad("%s.tolerance %v: want a number >= 0", field, t)
	}
	return &out
}

// config is the autoscaler configuration of a resolved spec for a zone
// whose max_count is maxCount: MaxReplicas is min(max_replicas, maxCount)
// and MinReplicas at most that.
func hpaConfig(h HPASpec, maxCount int) autoscaler.HPAConfig {
	cfg := autoscaler.DefaultHPAConfig()
	if h.MinReplicas != nil {
		cfg.MinReplicas = *h.MinReplicas
	}
	cfg.MaxReplicas = maxCount
	if h.MaxReplicas != nil {
		cfg.MaxReplicas = min(*h.MaxReplicas, maxCount)
	}
	cfg.MinReplicas = min(cfg.MinReplicas, cfg.MaxReplicas)
	cfg.Metrics = []autoscaler.HPAMetric{{
		Name: hpaMetricName, Source: autoscaler.HPAExternal, Target: autoscaler.HPATargetType(h.Target),
		Threshold: h.Threshold, ReadEmptyAsZero: h.ReadEmptyAsZero,
	}}
	if h.Behavior != nil {
		cfg.ScaleDown = rulesConfig(h.Behavior.ScaleDown, cfg.ScaleDown)
		cfg.ScaleUp = rulesConfig(h.Behavior.ScaleUp, cfg.ScaleUp)
	}
	if f := h.Fallback; f != nil {
		cfg.Fallback = &autoscaler.HPAFallback{FailureThreshold: f.FailureThreshold, Replicas: f.Replicas}
	}
	return cfg
}

func rulesConfig(r *HPARulesSpec, def autoscaler.HPAScalingRules) autoscaler.HPAScalingRules {
	if r == nil {
		return def
	}
	out := def
	if r.StabilizationWindowSeconds != nil {
		out.StabilizationWindow = api.FromSeconds(*r.StabilizationWindowSeconds)
	}
	if r.SelectPolicy != "" {
		out.SelectPolicy = autoscaler.HPASelectPolicy(r.SelectPolicy)
	}
	if len(r.Policies) > 0 {
		out.Policies = nil
		for _, p := range r.Policies {
			out.Policies = append(out.Policies, autoscaler.HPAScalingPolicy{
				Type: autoscaler.HPAPolicyType(p.Type), Value: p.Value, Period: api.FromSeconds(p.PeriodSeconds)})
		}
	}
	if r.Tolerance != nil {
		out.Tolerance = *r.Tolerance
	}
	return out
}

// clone deep-copies a spec (its pointers).
func cloneHPA(h *HPASpec) *HPASpec {
	if h == nil {
		return nil
	}
	b, _ := json.Marshal(h)
	var out HPASpec
	_ = json.Unmarshal(b, &out)
	return &out
}

// summary is a one-line description for audit tags and logs.
func hpaSummary(h *HPASpec) string {
	if h == nil {
		return ""
	}
	v := func(p *int) string {
		if p == nil {
			return "-"
		}
		return strconv.Itoa(*p)
	}
	return fmt.Sprintf("target=%s threshold=%s min=%s max=%s poll=%s read_empty_as_zero=%t query=%s",
		h.Target, strconv.FormatFloat(h.Threshold, 'g', -1, 64), v(h.MinReplicas), v(h.MaxReplicas),
		h.PollingInterval(), h.ReadEmptyAsZero, h.Query)
}

// Policy returns a zone's policy; ErrNotFound when the zone does not exist.
func (c *Controller) Policy(group, zone string) (PolicyView, error) {
	v, err := c.Zone(group, zone)
	if err != nil {
		return PolicyView{}, err
	}
	pv := c.hpa.view(group, zone, v.MaxCount)
	if pv.Policy == PolicyStep {
		pv.StepRounds = c.steps.get(group, zone)
	}
	return pv, nil
}

// SetPolicy sets a zone's policy (see the bounds rule above):
//
//   - the zone must exist (ErrNotFound);
//   - policy "step" or "hpa" with an hpa spec, else a *ValidationError,
//     audited with error:invalid; omitted hpa fields take their defaults;
//   - persisted with the workers.policy audit entry (tags from, to, and
//     hpa: the spec in one line) in one transaction;
//   - a zone that turns hpa starts with a fresh hpa state (the current
//     count is its first recommendation, upstream recordInitialRecommendation);
//     a changed hpa policy keeps its recommendations and scale events, as
//     upstream keeps them across a spec edit; either way the query runs at
//     the next scheduler pass.
func (c *Controller) SetPolicy(actor, group, zone string, spec PolicySpec) (PolicyView, error) {
	if err := checkNames(group, zone); err != nil {
		return PolicyView{}, err
	}
	e, err := c.lock(group, zone)
	if err != nil {
		return PolicyView{}, err
	}
	defer e.mu.Unlock()

	var resolved *HPASpec
	switch spec.Policy {
	case PolicyStep:
		if spec.HPA != nil {
			return PolicyView{}, c.invalid(actor, group, zone, AuditPolicy, &ValidationError{Field: "hpa",
				Reason: `the step policy takes no hpa settings: send {"policy":"step"}`})
		}
	case PolicyHPA:
		if spec.HPA == nil {
			return PolicyView{}, c.invalid(actor, group, zone, AuditPolicy, &ValidationError{Field: "hpa",
				Reason: `the hpa policy needs its settings: {"policy":"hpa","hpa":{"query":"...","threshold":N}}`})
		}
		r, err := resolveHPA(*spec.HPA, e.z.MaxCount)
		if err != nil {
			var ve *ValidationError
			if errors.As(err, &ve) {
				return PolicyView{}, c.invalid(actor, group, zone, AuditPolicy, ve)
			}
			return PolicyView{}, err
		}
		resolved = &r
	default:
		return PolicyView{}, c.invalid(actor, group, zone, AuditPolicy, &ValidationError{Field: "policy",
			Reason: fmt.Sprintf("%q: want step or hpa", spec.Policy)})
	}

	now := c.o.Clock.Now()
	old := c.hpa.spec(group, zone)
	from := PolicyStep
	if old != nil {
		from = PolicyHPA
	}
	rec, err := policyRecord(group, zone, spec.Policy, resolved, now)
	if err != nil {
		return PolicyView{}, err
	}
	tags := map[string]string{"from": from, "to": spec.Policy}
	if resolved != nil {
		tags["hpa"] = hpaSummary(resolved)
	}
	if old != nil {
		tags["from_hpa"] = hpaSummary(old)
	}
	if _, err := c.o.Store.CommitPolicies([]store.ZonePolicy{rec}, nil, []store.AuditEntry{{
		At: now, Actor: actor, Group: group, Zone: zone, Action: AuditPolicy, Tags: tags}}); err != nil {
		err = fmt.Errorf("set %s/%s policy: persist: %w: %w", group, zone, ErrStore, err)
		c.log.Error("policy change not persisted", "group", group, "zone", zone, "actor", actor, "err", err)
		return PolicyView{}, err
	}
	c.hpa.set(group, zone, resolved)
	if resolved != nil {
		c.steps.forget(group, zone) // its step rounds are over
	}
	if resolved == nil {
		// Back to step: it starts afresh (no stale per-worker samples).
		e.st.LowStreak, e.st.Prev = 0, nil
	}
	attrs := []any{"group", group, "zone", zone, "actor", actor, "from", from, "to", spec.Policy}
	if resolved != nil {
		attrs = append(attrs, "hpa", hpaSummary(resolved))
	}
	c.log.Info(AuditPolicy, attrs...)
	return c.hpa.view(group, zone, e.z.MaxCount), nil
}

// policyRecord encodes a zone's policy for the store.
func policyRecord(group, zone, policy string, h *HPASpec, now time.Time) (store.ZonePolicy, error) {
	rec := store.ZonePolicy{Group: group, Zone: zone, Policy: policy, Updated: now}
	if h != nil {
		b, err := json.Marshal(h)
		if err != nil {
			return rec, fmt.Errorf("encode %s/%s hpa policy: %w", group, zone, err)
		}
		rec.Spec = b
	}
	return rec, nil
}

// boundPolicyLocked applies the bounds rule to a new max_count: when the
// zone's hpa max_replicas (or min_replicas) is above newMax it returns the
// lowered spec's store record and its audit entry (ok true); the caller
// commits them with the zone and then calls hpa.set. Call with e.mu held.
func (c *Controller) boundPolicyLocked(e *zoneEntry, actor string, newMax int, now time.Time) (rec store.ZonePolicy, audit store.AuditEntry, lowered *HPASpec, ok bool) {
	old := c.hpa.spec(e.z.Group, e.z.Zone)
	if old == nil || old.MaxReplicas == nil || *old.MaxReplicas <= newMax {
		return rec, audit, nil, false
	}
	n := cloneHPA(old)
	n.MaxReplicas = ptr(newMax)
	if n.MinReplicas != nil && *n.MinReplicas > newMax {
		n.MinReplicas = ptr(newMax)
	}
	rec, err := policyRecord(e.z.Group, e.z.Zone, PolicyHPA, n, now)
	if err != nil {
		return rec, audit, nil, false
	}
	audit = store.AuditEntry{At: now, Actor: actor, Group: e.z.Group, Zone: e.z.Zone, Action: AuditPolicy,
		Tags: map[string]string{"from": PolicyHPA, "to": PolicyHPA, "reason": "max_count lowered",
			"max_replicas_from": strconv.Itoa(*old.MaxReplicas), "max_replicas_to": strconv.Itoa(newMax),
			"hpa": hpaSummary(n), "from_hpa": hpaSummary(old)}}
	return rec, audit, n, true
}

// QueryChecker is the optional side of a MetricSource that can tell a query
// that will never work from one that just has no data yet
// (PrometheusSource: the server's parser).
type QueryChecker interface {
	CheckQuery(ctx context.Context, query string) error
}

// queryCheckTimeout bounds CheckPolicyQuery's call to the metric source.
const queryCheckTimeout = 3 * time.Second

// CheckPolicyQuery refuses an hpa spec whose query the metric source says
// can never be evaluated (a PromQL syntax error, a range vector), audited
// error:invalid like every other invalid setting. It answers nil for the
// step policy, when there is no source or it cannot check, and when the
// source cannot be reached within 3 s. Call it before SetPolicy, outside
// any lock: it does I/O.
func (c *Controller) CheckPolicyQuery(ctx context.Context, actor, group, zone string, spec PolicySpec) error {
	qc, ok := c.o.Metrics.(QueryChecker)
	if !ok || spec.Policy != PolicyHPA || spec.HPA == nil || strings.TrimSpace(spec.HPA.Query) == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, queryCheckTimeout)
	defer cancel()
	var ve *ValidationError
	if err := qc.CheckQuery(ctx, spec.HPA.Query); errors.As(err, &ve) {
		return c.invalid(actor, group, zone, AuditPolicy, ve)
	}
	return nil
}
