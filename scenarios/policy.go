package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/api"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// Policies a run can create its zones with (scaleproof run --policy).
const (
	PolicyStep = "step"
	PolicyHPA  = "hpa"
)

// InflightMetric is the signal of Grafana's post on autoscaling Loki queries with KEDA as the reference edge exports it: a
// summary of a zone's in-flight calls (queued + running) with quantiles, the
// counterpart of Cortex's cortex_query_scheduler_inflight_requests.
const InflightMetric = "scaleproof_edge_inflight_requests"

// HPASettings is the hpa policy the harness gives its zones under a
// profile: the query and threshold of Grafana's post on autoscaling Loki
// queries with KEDA, with KEDA's and upstream's timings, every time scaled like the profile's other times (quick divides
// them by 10).
type HPASettings struct {
	// Query is the post's query on the edge's summary, for the zone:
	// sum(max_over_time(<in-flight>{group,zone,quantile="0.75"}[Window])).
	Query string
	// Threshold is the post's "75 % of a worker": floor(0.75 × the in-flight
	// limit) calls per replica (AverageValue).
	Threshold float64
	// PollingInterval: KEDA's 30 s. StabilizationDown: upstream's 300 s.
	// RatePeriod: upstream's 15 s rate-policy period.
	PollingInterval, StabilizationDown, RatePeriod time.Duration
	// Window is the query's max_over_time range (the post's 2m).
	Window time.Duration
	// InflightMaxAge is the edge summary's window (1 min).
	InflightMaxAge time.Duration
	// ScrapeInterval and EvalInterval of the local platform's Prometheus.
	ScrapeInterval, EvalInterval time.Duration
	// ReadEmptyAsZero is true (KEDA's ignoreNullValues default): the edge's
	// summary reads NaN once a zone has had no call for InflightMaxAge, and
	// an idle zone must scale in. A failed query still holds.
	ReadEmptyAsZero bool
}

// timeScale is how much a profile shortens the published times (quick 0.1).
func timeScale(p Profile) float64 {
	return float64(p.SchedulerInterval) / float64(Published().SchedulerInterval)
}

func scaled(d time.Duration, f float64) time.Duration {
	return time.Duration(math.Round(float64(d) * f))
}

// HPAFor returns the hpa settings of profile p.
func HPAFor(p Profile) HPASettings {
	f := timeScale(p)
	h := HPASettings{
		Threshold:         math.Floor(float64(p.MaxInflight) * 0.75),
		PollingInterval:   scaled(30*time.Second, f),
		StabilizationDown: scaled(300*time.Second, f),
		RatePeriod:        scaled(15*time.Second, f),
		Window:            scaled(2*time.Minute, f),
		InflightMaxAge:    scaled(time.Minute, f),
		ScrapeInterval:    max(scaled(5*time.Second, f), time.Second),
		EvalInterval:      max(scaled(15*time.Second, f), time.Second),
		ReadEmptyAsZero:   true,
	}
	h.Query = fmt.Sprintf(`sum(max_over_time(%s{group="$group",zone="$zone",quantile="0.75"}[%s]))`,
		InflightMetric, api.PromDuration(h.Window))
	return h
}

// Spec is the policy body for a zone whose max_count is maxCount.
func (h HPASettings) Spec(maxCount int) consoleclient.HPASpec {
	secs := func(d time.Duration) *float64 { v := d.Seconds(); return &v }
	one := 1
	return consoleclient.HPASpec{
		Query: h.Query, Threshold: h.Threshold, Target: "AverageValue",
		MinReplicas: &one, MaxReplicas: &maxCount,
		PollingIntervalSeconds: secs(h.PollingInterval),
		ReadEmptyAsZero:        h.ReadEmptyAsZero,
		Behavior: &consoleclient.HPABehavior{
			ScaleDown: &consoleclient.HPARules{StabilizationWindowSeconds: secs(h.StabilizationDown),
				Policies: []consoleclient.HPARatePolicy{{Type: "Percent", Value: 100, PeriodSeconds: h.RatePeriod.Seconds()}}},
			ScaleUp: &consoleclient.HPARules{StabilizationWindowSeconds: secs(0),
				Policies: []consoleclient.HPARatePolicy{{Type: "Pods", Value: 4, PeriodSeconds: h.RatePeriod.Seconds()},
					{Type: "Percent", Value: 100, PeriodSeconds: h.RatePeriod.Seconds()}}},
		},
	}
}

// ExpandQuery replaces "$group", "$zone" and "%s" (the group) as the
// reference console does (api.HPASpec.ExpandQuery).
func ExpandQuery(q, group, zone string) string {
	return (&api.HPASpec{Query: q}).ExpandQuery(group, zone)
}

// applyPolicy gives the scenario's new zone the run's policy: nothing for
// step (the console's default), the profile's hpa settings for hpa. It
// returns the policy as the console resolved it.
func (s *Scope) applyPolicy(ctx context.Context, maxCount int) (consoleclient.PolicyView, error) {
	e := s.env
	if e.Policy == "" || e.Policy == PolicyStep {
		return consoleclient.PolicyView{Policy: PolicyStep, MaxCount: maxCount}, nil
	}
	spec := HPAFor(e.Profile).Spec(maxCount)
	v, st, err := e.Console.PutPolicy(ctx, s.admin(), e.Endpoints.Group, s.Zone, consoleclient.Policy{Policy: PolicyHPA, HPA: &spec})
	if err != nil || st != http.StatusOK {
		return v, fmt.Errorf("set zone %s/%s policy hpa: HTTP %d %v", e.Endpoints.Group, s.Zone, st, err)
	}
	s.policy = v
	return v, nil
}

// prometheusHint ends a refusal for want of Prometheus: how a run gets one.
const prometheusHint = "run with --prometheus auto (prometheus on PATH: make deps-prometheus) or --prometheus URL"

// openHPAZone opens a scenario that judges the hpa policy (judges: what of
// it, for the refusal): it refuses a run off the hpa policy or without the
// Prometheus that answers the zone's query, creates the scenario's zone
// with max_count *spec.MaxReplicas and puts spec on it, keeping the policy
// as the console resolved it (s.policy). what names spec's own setting in
// the error of a failed put ("min_replicas 3").
func (s *Scope) openHPAZone(ctx context.Context, judges string, spec consoleclient.HPASpec, what string) error {
	e := s.env
	if e.Policy != PolicyHPA {
		return fmt.Errorf("%s judges the hpa policy's %s: run it with --policy hpa", s.Name, judges)
	}
	if e.Endpoints.PrometheusURL == "" {
		return errors.New(s.Name + " needs the Prometheus that answers the hpa zone's query: " + prometheusHint)
	}
	if err := s.CreateZone(ctx, *spec.MaxReplicas); err != nil {
		return err
	}
	v, st, err := e.Console.PutPolicy(ctx, s.admin(), e.Endpoints.Group, s.Zone, consoleclient.Policy{Policy: PolicyHPA, HPA: &spec})
	if err != nil || st != http.StatusOK {
		return fmt.Errorf("set zone %s/%s hpa %s: %s", e.Endpoints.Group, s.Zone, what, httpDetail(st, err))
	}
	s.policy = v
	return nil
}

// ZoneContracts are the contracts a zone of the console, on a platform or
// on the simulator's model, is judged on: the console's own
// (target.ConsoleContracts) under s, the step policy's settings the run
// read (the console's GET /api/v1/config/autoscale, else the profile's;
// the model's StepConfig). A zone on the hpa policy follows upstream HPA's
// algorithm (desiredReplicas from its query, the stabilization window), not
// the step policy's cooldowns and low rounds: its facts timed by those
// (scaling up, no early scale-down, back to min, a count set by hand) are
// not applicable, with hpaZoneTiming; the hpa facts judge its decisions
// round by round.
func ZoneContracts(policy string, s target.ConsoleSettings) target.Contracts {
	c := target.ConsoleContracts(s)
	if policy == PolicyHPA {
		for _, f := range []target.Fact{target.FactScalesUp, target.FactNoEarlyScaleDown, target.FactBackToMin, target.FactCountSet} {
			c[f] = target.Contract{NotApplicable: hpaZoneTiming}
		}
	}
	return c
}

// hpaZoneTiming is why a zone on the hpa policy is not judged on the step
// policy's timing.
const hpaZoneTiming = "a zone on the hpa policy follows upstream HPA's algorithm, not the step policy's cooldowns and low rounds: its decisions are judged round by round by the hpa facts"
