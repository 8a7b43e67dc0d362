package controller

// The hpa adapter: per-zone policy dispatch for the rounds of
// round.go. A step zone runs Options.Policy as before. For an hpa zone the
// controller
//
//   - skips the scheduler's rounds until the zone's polling interval has
//     passed since its last query (KEDA's pollingInterval); the scheduler
//     still visits every zone each interval, and an API rebalance always
//     runs;
//   - builds the autoscaler.HPAObservation from discovery (each listed
//     worker is a Running pod, Ready as discovery says; each worker the
//     count asks for that discovery does not list yet is a Pending pod) and
//     from the MetricSource (the zone's query, expanded for its group and
//     zone; an error is a failed reading, and no series, NaN or ±Inf fail
//     the metric in the policy unless it reads them as zero);
//   - keeps the zone's autoscaler.HPAState in memory (recommendations,
//     scale events, failure counts), as upstream's controller does: a
//     restarted console starts each hpa zone afresh, its count as the first
//     recommendation, so no scale-down follows within the stabilization
//     window of a restart;
//   - decides with autoscaler.HPA and MaxReplicas = min(max_replicas,
//     max_count), and lets round.go apply, persist, audit and log the
//     decision exactly as for the step policy. A scale-down names the
//     not-ready workers first as victims (as a ReplicaSet deletes unready
//     pods first).

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// MetricSource evaluates an hpa zone's query.
type MetricSource interface {
	// Query evaluates query now and returns one value per series it
	// returned (a scalar result is one value). NaN and ±Inf are returned as
	// they are; the policy decides. An error is a failed query.
	Query(ctx context.Context, query string) ([]float64, error)
}

// Bounds of one query.
const (
	minQueryTimeout = time.Second
	maxQueryTimeout = 10 * time.Second
)

// queryTimeout bounds one query by the polling interval, within 1..10 s.
func queryTimeout(poll time.Duration) time.Duration {
	return min(max(poll, minQueryTimeout), maxQueryTimeout)
}

// hpaZones is the controller's memory of every zone's policy. mu guards the
// map and every entry; no I/O happens under it.
type hpaZones struct {
	mu    sync.Mutex
	zones map[string]*hpaZone
}

type hpaZone struct {
	spec *HPASpec // resolved; never nil in the map
	st   autoscaler.HPAState
	// pendingAt and pendingTo are the time and count of a decision that
	// changed the count and whose scale is not confirmed yet: unless the
	// zone's last change is later, or at that time with that count, the
	// scale did not land and its event is dropped at the next round.
	pendingAt time.Time
	pendingTo int
	lastQuery time.Time
	status    PolicyStatus
}

// storedHPA reads the stored policies of the hpa zones, by key(group,
// zone): the decoded spec and the stored JSON it came from. what starts the
// errors ("controller: load" at New, "resync"): "<what> policies: …" wraps
// ErrStore and the store's error, "<what> policy of G/Z: …" the JSON error
// of a spec that does not decode.
func storedHPA(st store.Backend, what string) (map[string]*HPASpec, map[string][]byte, error) {
	ps, err := st.Policies()
	if err != nil {
		return nil, nil, fmt.Errorf("%s policies: %w: %w", what, ErrStore, err)
	}
	specs, raw := map[string]*HPASpec{}, map[string][]byte{}
	for _, p := range ps {
		if p.Policy != PolicyHPA {
			continue
		}
		var spec HPASpec
		if err := json.Unmarshal(p.Spec, &spec); err != nil {
			return nil, nil, fmt.Errorf("%s policy of %s/%s: %w", what, p.Group, p.Zone, err)
		}
		specs[key(p.Group, p.Zone)] = &spec
		raw[key(p.Group, p.Zone)] = p.Spec
	}
	return specs, raw, nil
}

// spec returns a copy of the zone's hpa spec; nil for a step zone.
func (h *hpaZones) spec(group, zone string) *HPASpec {
	h.mu.Lock()
	defer h.mu.Unlock()
	if z := h.zones[key(group, zone)]; z != nil {
		return cloneHPA(z.spec)
	}
	return nil
}

// set makes the zone hpa with spec, or step when spec is nil. A zone that
// was hpa keeps its state; either way its next scheduler round queries.
func (h *hpaZones) set(group, zone string, spec *HPASpec) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := key(group, zone)
	if spec == nil {
		delete(h.zones, k)
		return
	}
	z := h.zones[k]
	if z == nil {
		z = &hpaZone{}
		h.zones[k] = z
	}
	z.spec = cloneHPA(spec)
	z.lastQuery = time.Time{}
	z.status.NextQueryAt = time.Time{}
}

// view is the zone's policy for the API.
func (h *hpaZones) view(group, zone string, maxCount int) PolicyView {
	v := PolicyView{Group: group, Zone: zone, Policy: PolicyStep, MaxCount: maxCount}
	h.mu.Lock()
	defer h.mu.Unlock()
	z := h.zones[key(group, zone)]
	if z == nil {
		return v
	}
	v.Policy, v.HPA = PolicyHPA, cloneHPA(z.spec)
	v.EffectiveMaxReplicas = maxCount
	if z.spec.MaxReplicas != nil {
		v.EffectiveMaxReplicas = min(*z.spec.MaxReplicas, maxCount)
	}
	st := z.status
	if st.Signal != nil {
		st.Signal = ptr(*st.Signal)
	}
	st.Rounds = slices.Clone(st.Rounds)
	for i, r := range st.Rounds {
		if r.Value != nil {
			st.Rounds[i].Value = ptr(*r.Value)
		}
	}
	v.Status = &st
	return v
}

// hpaNotDue reports, for a scheduler round of an hpa zone whose polling
// interval has not passed since its last query, the hold the pass counts
// (nothing is queried, recorded or persisted). Call with e.mu held.
func (c *Controller) hpaNotDue(e *zoneEntry, actor string) (autoscaler.Decision, bool) {
	if actor != ActorScheduler {
		return autoscaler.Decision{}, false
	}
	now := c.o.Clock.Now()
	c.hpa.mu.Lock()
	defer c.hpa.mu.Unlock()
	z := c.hpa.zones[key(e.z.Group, e.z.Zone)]
	if z == nil || z.lastQuery.IsZero() {
		return autoscaler.Decision{}, false
	}
	poll := z.spec.PollingInterval()
	if wait := poll - now.Sub(z.lastQuery); wait > 0 {
		return autoscaler.Decision{Action: autoscaler.ActionHold, From: e.z.Count, To: e.z.Count, At: now,
			Reason: fmt.Sprintf("hpa: polling every %s, next query in %s", poll, wait.Round(time.Millisecond))}, true
	}
	return autoscaler.Decision{}, false
}

// zonePolicy returns the policy of an hpa zone for this round, its
// observation built and its query run; nil for a step zone. Call with e.mu
// held.
func (c *Controller) zonePolicy(ctx context.Context, e *zoneEntry, eps []fleet.Endpoint, now time.Time) Policy {
	g, zn := e.z.Group, e.z.Zone
	spec := c.hpa.spec(g, zn)
	if spec == nil {
		return nil
	}
	cfg := hpaWithFaults(hpaConfig(*spec, e.z.MaxCount), c.o.Faults)
	obs := autoscaler.HPAObservation{Pods: hpaPods(eps, e.z.Count)}
	q := spec.ExpandQuery(g, zn)
	reading := autoscaler.HPAMetricReading{Name: hpaMetricName}
	if c.o.Metrics == nil {
		reading.Err = "no metric source: start the console with --prometheus URL"
	} else {
		qctx, cancel := context.WithTimeout(ctx, queryTimeout(spec.PollingInterval()))
		vals, err := c.o.Metrics.Query(qctx, q)
		cancel()
		if err != nil {
			reading.Err = err.Error()
		} else {
			reading.Values = vals
		}
	}
	obs.Metrics = []autoscaler.HPAMetricReading{reading}
	c.log.Debug("hpa query", "group", g, "zone", zn, "query", q, "values", fmt.Sprint(reading.Values), "err", reading.Err)

	return func(st autoscaler.ZoneState, _ autoscaler.Observation, now time.Time) (autoscaler.Decision, autoscaler.ZoneState) {
		c.hpa.mu.Lock()
		defer c.hpa.mu.Unlock()
		z := c.hpa.zones[key(g, zn)]
		if z == nil { // turned step meanwhile: cannot happen under e.mu, but never panic
			return autoscaler.Decision{Action: autoscaler.ActionHold, From: st.Count, To: st.Count, At: now,
				Reason: "hpa policy removed"}, st
		}
		hs := z.st
		landed := st.LastChange.After(z.pendingAt) || (st.LastChange.Equal(z.pendingAt) && st.Count == z.pendingTo)
		if !z.pendingAt.IsZero() && !landed {
			// The last decision's scale did not land: forget its event.
			drop := func(evs []autoscaler.HPAScaleEvent) []autoscaler.HPAScaleEvent {
				return slices.DeleteFunc(slices.Clone(evs), func(ev autoscaler.HPAScaleEvent) bool { return ev.At.Equal(z.pendingAt) })
			}
			hs.ScaleUpEvents, hs.ScaleDownEvents = drop(hs.ScaleUpEvents), drop(hs.ScaleDownEvents)
		}
		hs.Count, hs.LastChange = st.Count, st.LastChange
		d, next := autoscaler.HPA(cfg, hs, obs, now)
		z.st, z.pendingAt = next, time.Time{}
		if d.Action == autoscaler.ActionUp || d.Action == autoscaler.ActionDown {
			z.pendingAt, z.pendingTo = now, d.To
		}
		if d.Action == autoscaler.ActionDown {
			d.Victims = hpaVictims(eps, d.From-d.To)
		}
		z.lastQuery = now
		rounds := z.status.Rounds
		z.status = PolicyStatus{LastQueryAt: now, Query: q, Failures: next.Failures[hpaMetricName],
			NextQueryAt: now.Add(spec.PollingInterval())}
		z.status.Signal, z.status.Error = readingSignal(reading)
		r := PolicyRound{At: now, Pods: len(obs.Pods), Action: string(d.Action), From: d.From, To: d.To}
		for _, p := range obs.Pods {
			if p.Phase == autoscaler.HPAPodRunning && p.Ready {
				r.Ready++
			}
		}
		r.Value, r.Error = readingValue(reading, spec.ReadEmptyAsZero)
		if len(rounds) >= MaxPolicyRounds {
			rounds = rounds[len(rounds)-MaxPolicyRounds+1:]
		}
		z.status.Rounds = append(slices.Clip(rounds), r)
		out := st
		out.LowStreak, out.Prev = 0, nil // step's memory does not carry over
		return d, out
	}
}

// hpaPods lists the zone's pods for the hpa policy: each listed worker as a
// Running pod with discovery's readiness, and each worker the count asks for
// that discovery does not list as a Pending pod.
func hpaPods(eps []fleet.Endpoint, count int) []autoscaler.HPAPod {
	pods := make([]autoscaler.HPAPod, 0, max(len(eps), count))
	for _, ep := range eps {
		pods = append(pods, autoscaler.HPAPod{Name: ep.ID, Phase: autoscaler.HPAPodRunning, Ready: ep.Ready})
	}
	for i := range count - stable(eps) { // the count asks for stable workers; a canary is extra
		pods = append(pods, autoscaler.HPAPod{Name: fmt.Sprintf("pending-%d", i+1), Phase: autoscaler.HPAPodPending})
	}
	return pods
}

// hpaVictims names up to n not-ready workers to remove first, newest first.
func hpaVictims(eps []fleet.Endpoint, n int) []string {
	var notReady []fleet.Endpoint
	for _, ep := range eps {
		if !ep.Ready && !ep.Canary { // a canary is never a victim
			notReady = append(notReady, ep)
		}
	}
	slices.SortStableFunc(notReady, func(a, b fleet.Endpoint) int { return cmp.Compare(b.Created.UnixNano(), a.Created.UnixNano()) })
	var out []string
	for _, ep := range notReady[:min(n, len(notReady))] {
		out = append(out, ep.ID)
	}
	return out
}

// readingSignal is the sum of a reading's values, or why there is none.
func readingSignal(r autoscaler.HPAMetricReading) (*float64, string) {
	switch {
	case r.Err != "":
		return nil, r.Err
	case len(r.Values) == 0:
		return nil, "no series"
	}
	sum := 0.0
	for _, v := range r.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Sprintf("value %v", v)
		}
		sum += v
	}
	return &sum, ""
}

// readingValue is the total the policy reads from r: readingSignal, or 0
// for no series and for NaN and ±Inf values left out when emptyZero (the
// policy's ReadEmptyAsZero). A failed query is nil either way.
func readingValue(r autoscaler.HPAMetricReading, emptyZero bool) (*float64, string) {
	if !emptyZero || r.Err != "" {
		return readingSignal(r)
	}
	sum := 0.0
	for _, v := range r.Values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			sum += v
		}
	}
	return &sum, ""
}
