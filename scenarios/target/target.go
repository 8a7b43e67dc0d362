// Package target is the one small interface the target scenarios judge an
// autoscaler through, whoever wrote it: the reference console (Ramen's API),
// the cluster's own HorizontalPodAutoscaler, or KEDA (a ScaledObject and the
// HPA it makes). A Target reads the scale target's count, ready replicas and
// bounds, changes the max and the count in a role's name, and reads the trail
// of changes the autoscaler keeps; it also declares which facts it promises
// and under which contract, so a verdict shows the contract beside each fact
// and a fact a target does not promise is reported "not applicable", never
// silently passed.
//
// Implementations: console.go (consoleclient over the console API), and in
// scenarios/target/kube the cluster's HPA and KEDA (client-go; this package
// links none of it). The pure parts (Contracts, State, Change) have no I/O.
//
// Must not import scenarios/ (the target scenarios import this package).
package target

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Kind names a target as --target spells it.
type Kind string

// The targets that exist.
const (
	Console Kind = "console" // the reference console: it owns the count
	HPA     Kind = "hpa"     // the cluster's HorizontalPodAutoscaler on a Deployment
	KEDA    Kind = "keda"    // a KEDA ScaledObject (and the HPA KEDA makes from it)
)

// Kinds lists the targets in --help order.
var Kinds = []Kind{Console, HPA, KEDA}

// ParseKind reads --target; an unknown name is an error naming the known ones.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("target %q: want one of console, hpa, keda", s)
}

// Role is who asks: the roles every target maps onto its own access
// control (the console's API keys; Kubernetes RBAC for hpa and keda, where
// Admin is a ServiceAccount bound to a Role that may patch the HPA,
// ScaledObject and Deployment scale, and Viewer one that may only get,
// list and watch them).
type Role string

// The roles.
const (
	Admin  Role = "admin"
	Viewer Role = "viewer"
)

// ByRole is admin for Admin and viewer for Viewer, what a target holds for
// each role (an API key, a client); another role is an error naming both.
func ByRole[T any](role Role, admin, viewer T) (T, error) {
	switch role {
	case Admin:
		return admin, nil
	case Viewer:
		return viewer, nil
	}
	var none T
	return none, fmt.Errorf("role %q: want admin or viewer", role)
}

// State is one reading of the scale target.
type State struct {
	At time.Time `json:"at"`
	// Count is the replicas the scale target is set to (the console's
	// count; the Deployment's spec.replicas).
	Count int `json:"count"`
	// Ready is the replicas ready to serve (the console's ready workers;
	// the Deployment's status.readyReplicas).
	Ready int `json:"ready"`
	// Desired is what the autoscaler last decided (the HPA's
	// status.desiredReplicas); equal to Count where the target has no
	// separate figure.
	Desired int `json:"desired"`
	// Min and Max are the bounds now in force (the zone's min/max; the
	// HPA's minReplicas/maxReplicas; the ScaledObject's
	// minReplicaCount/maxReplicaCount).
	Min int `json:"min"`
	Max int `json:"max"`
	// Metric is the autoscaler's own reading of its signal, in the
	// metric's unit (the HPA's status.currentMetrics: a CPU utilisation in
	// percent of the request, or KEDA's external metric's average value);
	// HasMetric is false when the target shows none.
	Metric    float64 `json:"metric,omitempty"`
	HasMetric bool    `json:"has_metric,omitempty"`
	// MetricTarget is the autoscaler's target for Metric, in its unit
	// (the HPA's spec.metrics target: averageUtilization, averageValue or
	// value); 0 when unknown. Metric above it (by more than the tolerance)
	// is what asks for a scale-up.
	MetricTarget float64 `json:"metric_target,omitempty"`
	// Decision is the autoscaler's last decision in its own words,
	// "up 1->3: reason" (the console's zone last_decision); empty when the
	// target reports none (an HPA's decisions are in its trail).
	Decision string `json:"decision,omitempty"`
	// Change is the last change of count, "set 3->1: max lowered to 1 by
	// ops" (the console's zone last_scale; empty when not reported).
	Change string `json:"change,omitempty"`
}

// Sample is one reading of the scale target as a scenario records it, on
// any target: the State's numbers, what the autoscaler says it decided when
// it says so (the console does; an HPA's decisions are in its trail), and,
// while a load runs, its in-flight calls and VUs. Err is set when the
// reading failed; the numbers are then the last known ones. The JSON is the
// results' "sample_raw" record's sample (reports.Sample): its first seven
// keys are the console's, the rest are left out when zero.
type Sample struct {
	At    time.Time `json:"at"`
	Count int       `json:"count"`
	Max   int       `json:"max_count"`
	Ready int       `json:"ready"`
	// Decision is the autoscaler's last decision in its own words,
	// "up 1->3: reason" (the console's zone); empty when it reports none.
	Decision string `json:"decision,omitempty"`
	Err      string `json:"err,omitempty"`
	// Change is the last change of count, "set 3->1: max lowered to 1 by
	// ops" (the console's zone; empty when not reported): a hold after a
	// forced change replaces Decision but not Change.
	Change       string  `json:"change,omitempty"`
	Desired      int     `json:"desired,omitempty"`
	Min          int     `json:"min,omitempty"`
	Metric       float64 `json:"metric,omitempty"`
	HasMetric    bool    `json:"has_metric,omitempty"`
	MetricTarget float64 `json:"metric_target,omitempty"`
	// InFlight and VUs are the running load's calls in flight and virtual
	// users when the reading was taken (0 without a load).
	InFlight int64 `json:"in_flight,omitempty"`
	VUs      int   `json:"vus,omitempty"`
}

// DecisionText is how a sample shows a decision or a change of count,
// "action from->to: reason" ("up 1->3: mean in-flight 100%"), the same
// for every world that reports one (State.Decision, State.Change).
func DecisionText(action string, from, to int, reason string) string {
	return fmt.Sprintf("%s %d->%d: %s", action, from, to, reason)
}

// SampleOf is the sample of one State reading (no load, no error).
func SampleOf(st State) Sample {
	return Sample{At: st.At, Count: st.Count, Max: st.Max, Ready: st.Ready, Decision: st.Decision, Change: st.Change,
		Desired: st.Desired, Min: st.Min, Metric: st.Metric, HasMetric: st.HasMetric, MetricTarget: st.MetricTarget}
}

// Outcome is how a change asked in a role's name was answered.
type Outcome struct {
	// Status is the HTTP status the API answered (200 accepted; 403 the
	// role may not; 422 invalid), the API server's for hpa and keda.
	Status int `json:"status"`
	// Message is the API's own words when it refused.
	Message string `json:"message,omitempty"`
}

// Accepted is a 2xx answer.
func (o Outcome) Accepted() bool { return o.Status >= 200 && o.Status < 300 }

// Change is one entry of the trail a target keeps of its count's changes
// (the console's audit log; the HPA's SuccessfulRescale Events and its
// conditions).
type Change struct {
	At time.Time `json:"at"`
	// From is the count before, -1 when the trail does not say (an HPA
	// Event says only "New size: N").
	From int `json:"from"`
	To   int `json:"to"`
	// Reason is the trail's own words ("All metrics below target").
	Reason string `json:"reason,omitempty"`
	// Actor is who caused it as the trail names it ("" when the trail
	// does not name one: an HPA Event names its controller as source).
	Actor string `json:"actor,omitempty"`
	// Source is where the entry came from ("audit", "event", "condition").
	Source string `json:"source,omitempty"`
}

// Equal reports whether c and o are the same change (the same instant and
// every field equal).
func (c Change) Equal(o Change) bool {
	return c.At.Equal(o.At) && c.From == o.From && c.To == o.To && c.Reason == o.Reason && c.Actor == o.Actor && c.Source == o.Source
}

// Target is the scale target under test and the autoscaler that owns it.
// Every method is safe for concurrent use and bounded by ctx.
type Target interface {
	// Kind is the target's kind; Name the scale target as reports show it
	// ("zone scaleproof/a", "hpa sp-1/scaleproof-worker").
	Kind() Kind
	Name() string
	// Contracts says, for every fact a target scenario checks, whether
	// this target promises it and under which contract.
	Contracts() Contracts
	// State reads the scale target now.
	State(ctx context.Context) (State, error)
	// SetBounds sets min and max in role's name (the zone's min/max; the
	// HPA's minReplicas/maxReplicas; the ScaledObject's counts). A refusal
	// is an Outcome, not an error; err is for a request that got no answer.
	SetBounds(ctx context.Context, role Role, min, max int) (Outcome, error)
	// SetCount asks for count replicas in role's name (the console's
	// count; the Deployment's scale subresource). Whether the autoscaler
	// keeps it is the target's contract (FactCountSet).
	SetCount(ctx context.Context, role Role, count int) (Outcome, error)
	// Trail reads the changes recorded at or after since, oldest first.
	Trail(ctx context.Context, since time.Time) ([]Change, error)
}

// Fact names a fact the target scenarios check, the same on every target.
type Fact string

// The facts. Each target's Contracts say whether and how it promises them.
const (
	// FactScalesUp: under a load above the target's threshold the count
	// rises above min within Contract.Bound.
	FactScalesUp Fact = "scales up under load"
	// FactWithinBounds: every reading has min <= count <= max.
	FactWithinBounds Fact = "count within min and max"
	// FactLoweredMax: a max lowered below the count applies within
	// Contract.Bound (0: in the request itself).
	FactLoweredMax Fact = "a lowered max applies"
	// FactViewerRefused: a viewer's change of bounds or count is refused
	// (403) and changes nothing.
	FactViewerRefused Fact = "viewer is refused"
	// FactAdminAllowed: an admin's change of bounds is accepted.
	FactAdminAllowed Fact = "admin may change the bounds"
	// FactCountSet: what happens to a count set by hand. Contract.Text
	// says which: kept (the console) or put back to the autoscaler's
	// desiredReplicas within Contract.Bound (an HPA owns the count).
	FactCountSet Fact = "a count set by hand"
	// FactTrail: every change of the count the readings saw is in the
	// target's trail within Contract.Bound of when it was seen.
	FactTrail Fact = "every change is in the trail"
	// FactTrailActor: every trail entry names the actor that caused it.
	FactTrailActor Fact = "the trail names the actor"
	// FactNoEarlyScaleDown: once the load drops, no step down before the
	// stabilization window (or cooldown) Contract.Bound has passed.
	FactNoEarlyScaleDown Fact = "no scale-down before the stabilization window"
	// FactBackToMin: after the load ends the count returns to min within
	// Contract.Bound.
	FactBackToMin Fact = "back to min after the load"
	// FactOutageHolds: while a worker cannot answer, the count never
	// falls (an outage never scales in).
	FactOutageHolds Fact = "no step down while a worker is unreachable"
)

// Facts lists the facts in report order.
var Facts = []Fact{
	FactScalesUp, FactWithinBounds, FactLoweredMax, FactViewerRefused, FactAdminAllowed,
	FactCountSet, FactTrail, FactTrailActor, FactNoEarlyScaleDown, FactBackToMin, FactOutageHolds,
}

// Contract is how one target promises one fact.
type Contract struct {
	// Applies is false when the target does not promise the fact; the
	// verdict then reports it "not applicable" with NotApplicable as the
	// reason, and it neither passes nor fails.
	Applies bool `json:"applies"`
	// Text is the promise in the target's own terms, shown beside the
	// fact ("a lowered max applies within one HPA sync period (15 s)").
	Text string `json:"contract"`
	// Bound is the time the promise allows, where it has one (0: none,
	// or "in the request").
	Bound time.Duration `json:"bound_ns,omitempty"`
	// Source is where the promise is written (a document and section).
	Source string `json:"source,omitempty"`
	// NotApplicable is why the target does not promise the fact.
	NotApplicable string `json:"not_applicable,omitempty"`
}

// Contracts are a target's contracts by fact.
type Contracts map[Fact]Contract

// Check reports a Contracts that misses a fact of Facts, or has one that
// applies without a Text or does not apply without a reason.
func (c Contracts) Check() error {
	var errs []error
	for _, f := range Facts {
		k, ok := c[f]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("fact %q: no contract", f))
		case k.Applies && k.Text == "":
			errs = append(errs, fmt.Errorf("fact %q: applies with no contract text", f))
		case k.Applies && k.Source == "":
			errs = append(errs, fmt.Errorf("fact %q: applies with no source", f))
		case !k.Applies && k.NotApplicable == "":
			errs = append(errs, fmt.Errorf("fact %q: not applicable with no reason", f))
		}
	}
	return errors.Join(errs...)
}

// SinceSorted keeps the changes at or after since, oldest first (stable).
func SinceSorted(cs []Change, since time.Time) []Change {
	out := cs[:0]
	for _, c := range cs {
		if !c.At.Before(since) {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// Secs writes a duration as the project's reports do: "15 s", "1.5 s".
func Secs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}
