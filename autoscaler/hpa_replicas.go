package autoscaler

// The hpa policy's replica calculation, as upstream's
// pkg/controller/podautoscaler/replica_calculator.go: each metric's
// proposal, the tolerance, and the exact rounding. Pure arithmetic over
// (config, readings, pods); the round is in hpa.go.

import (
	"fmt"
	"math"
	"math/big"
	"strings"
)

// hpaMetrics is the outcome of computeMetrics.
type hpaMetrics struct {
	replicas int            // the largest proposal of the metrics that answered
	metric   string         // the metric that proposed it
	summary  string         // every metric's arithmetic, "; "-joined
	hold     string         // non-empty: the round holds (failed metrics), why
	failures map[string]int // the next failure counts
}

// computeMetrics follows upstream computeReplicasForMetrics: each metric
// proposes a count, the largest proposal wins, and the round holds when
// every metric failed or when one failed and the winner is under the count.
// A failed External AverageValue metric past the fallback threshold
// proposes max(count, Fallback.Replicas) instead (KEDA
// GetMetricsWithFallback, behaviour currentReplicasIfHigher): its proposal
// goes through the same per-replica arithmetic as the value KEDA would
// serve, fallback replicas × threshold.
func (c HPAConfig) computeMetrics(st HPAState, obs HPAObservation, current int) hpaMetrics {
	readings := make(map[string]*HPAMetricReading, len(obs.Metrics))
	for i := range obs.Metrics {
		if _, dup := readings[obs.Metrics[i].Name]; !dup {
			readings[obs.Metrics[i].Name] = &obs.Metrics[i]
		}
	}
	out := hpaMetrics{failures: map[string]int{}}
	var texts, failed []string
	found := false
	for _, m := range c.Metrics {
		p := c.proposeMetric(m, readings[m.Name], obs.Pods, current)
		if why := p.err; why != "" {
			n := st.Failures[m.Name] + 1
			out.failures[m.Name] = n
			if f := c.Fallback; f != nil && n > f.FailureThreshold && m.source() == HPAExternal && m.target() == HPAAverageValue {
				replicas := max(current, f.Replicas)
				total := new(big.Rat).Mul(big.NewRat(int64(replicas), 1), exactDecimal(m.Threshold))
				p = c.perReplicaProposal(m, total, hpaStatusReplicas(obs.Pods))
				p.text = fmt.Sprintf("%s failed (%s) %s in a row, over the fallback threshold %d: fallback max(count %d, %d) = %d read as %s",
					m.Name, why, plural(n, "round"), f.FailureThreshold, current, f.Replicas, replicas, p.text)
			} else {
				texts = append(texts, fmt.Sprintf("%s failed: %s", m.Name, why))
				failed = append(failed, m.Name)
				continue
			}
		}
		texts = append(texts, p.text)
		if !found || p.replicas > out.replicas {
			out.replicas, out.metric, found = p.replicas, m.Name, true
		}
	}
	if len(out.failures) == 0 {
		out.failures = nil
	}
	out.summary = strings.Join(texts, "; ")
	switch {
	case !found:
		out.hold = out.summary + "; no metric answered: no change"
	case len(failed) > 0 && out.replicas < current:
		out.hold = fmt.Sprintf("%s; %s failed: no scale-down to %d", out.summary, strings.Join(failed, ", "), out.replicas)
	}
	return out
}

// hpaProposal is one metric's proposal.
type hpaProposal struct {
	replicas int
	text     string // the arithmetic, for the reason
	err      string // non-empty: the metric failed, why
}

// proposeMetric reads one metric and computes its proposal.
func (c HPAConfig) proposeMetric(m HPAMetric, r *HPAMetricReading, pods []HPAPod, current int) hpaProposal {
	if r == nil {
		return hpaProposal{err: "no reading"}
	}
	if r.Err != "" {
		return hpaProposal{err: r.Err}
	}
	if m.source() == HPAPods {
		return c.podsProposal(m, r.PodValues, pods, current)
	}
	total, err := externalTotal(m, r.Values)
	if err != "" {
		return hpaProposal{err: err}
	}
	if m.target() == HPAValue {
		return c.valueProposal(m, total, pods, current)
	}
	return c.perReplicaProposal(m, total, hpaStatusReplicas(pods))
}

// externalTotal sums an External metric's series exactly. No series, NaN
// or ±Inf fail the metric, unless it reads them as 0 (KEDA
// prometheus_scaler ExecutePromQuery with ignoreNullValues).
func externalTotal(m HPAMetric, values []float64) (*big.Rat, string) {
	total := new(big.Rat)
	if len(values) == 0 {
		if m.ReadEmptyAsZero {
			return total, ""
		}
		return nil, "no series"
	}
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if m.ReadEmptyAsZero {
				continue
			}
			return nil, fmt.Sprintf("value %v", v)
		}
		total.Add(total, exactDecimal(v))
	}
	return total, ""
}

// tolerance is the inclusive band [1-down, 1+up] of upstream
// Tolerances.isWithin, in exact arithmetic.
func (c HPAConfig) tolerance() (lo, hi *big.Rat) {
	one := big.NewRat(1, 1)
	lo = new(big.Rat).Sub(one, exactDecimal(c.ScaleDown.Tolerance))
	hi = new(big.Rat).Add(one, exactDecimal(c.ScaleUp.Tolerance))
	return lo, hi
}

func (c HPAConfig) within(ratio *big.Rat) (bool, string) {
	lo, hi := c.tolerance()
	in := ratio.Cmp(lo) >= 0 && ratio.Cmp(hi) <= 0
	if in {
		return true, fmt.Sprintf("within [%s, %s]", trim(lo), trim(hi))
	}
	return false, fmt.Sprintf("outside [%s, %s]", trim(lo), trim(hi))
}

// hpaStatusReplicas counts the pods that exist: neither failed nor being
// deleted (upstream scale.Status.Replicas, the ReplicaSet's active pods).
func hpaStatusReplicas(pods []HPAPod) int {
	n := 0
	for _, p := range pods {
		if p.Phase != HPAPodFailed && !p.Deleting {
			n++
		}
	}
	return n
}

// perReplicaProposal follows upstream GetExternalPerPodMetricReplicas (and
// GetObjectPerPodMetricReplicas): ratio = total ÷ (threshold × status
// replicas); within tolerance the proposal is the status replicas,
// otherwise ceil(total ÷ threshold). With no pod listed the ratio is
// undefined and never within tolerance.
func (c HPAConfig) perReplicaProposal(m HPAMetric, total *big.Rat, status int) hpaProposal {
	target := exactDecimal(m.Threshold)
	head := fmt.Sprintf("%s %s / %s per replica", m.Name, trim(total), trim(target))
	if status > 0 {
		ratio := new(big.Rat).Quo(total, new(big.Rat).Mul(target, big.NewRat(int64(status), 1)))
		in, band := c.within(ratio)
		head = fmt.Sprintf("%s over %s: ratio %s %s", head, plural(status, "replica"), trim(ratio), band)
		if in {
			return hpaProposal{replicas: status, text: fmt.Sprintf("%s -> %d", head, status)}
		}
	}
	n := hpaCeil(new(big.Rat).Quo(total, target))
	return hpaProposal{replicas: n, text: fmt.Sprintf("%s -> %d", head, n)}
}

// valueProposal follows upstream GetExternalMetricReplicas and
// getUsageRatioReplicaCount (and GetObjectMetricReplicas): ratio = total ÷
// threshold; within tolerance the proposal is the count, otherwise
// ceil(ratio × ready pods), the running and ready pods. No pod listed fails
// the metric (upstream "no pods returned by selector").
func (c HPAConfig) valueProposal(m HPAMetric, total *big.Rat, pods []HPAPod, current int) hpaProposal {
	target := exactDecimal(m.Threshold)
	ratio := new(big.Rat).Quo(total, target)
	in, band := c.within(ratio)
	head := fmt.Sprintf("%s %s / %s: ratio %s %s", m.Name, trim(total), trim(target), trim(ratio), band)
	if in {
		return hpaProposal{replicas: current, text: fmt.Sprintf("%s -> %d", head, current)}
	}
	if len(pods) == 0 {
		return hpaProposal{err: "no pods listed"}
	}
	ready := 0
	for _, p := range pods {
		if running(p) && p.Ready {
			ready++
		}
	}
	n := hpaCeil(new(big.Rat).Mul(ratio, big.NewRat(int64(ready), 1)))
	return hpaProposal{replicas: n, text: fmt.Sprintf("%s x %d ready -> %d", head, ready, n)}
}

// running reports a pod that is neither pending nor failed.
func running(p HPAPod) bool { return p.Phase != HPAPodPending && p.Phase != HPAPodFailed }

// podsProposal follows upstream calcPlainMetricReplicas with groupPods:
//
//   - pods being deleted or failed are left out; pending pods are unready;
//     other pods with a sample are ready, without one missing;
//   - ratio = average of the ready samples ÷ threshold;
//   - with no missing pod and no unready pod on a scale-up (ratio > 1): the
//     count within tolerance, else ceil(ratio × ready pods);
//   - otherwise the ratio is recomputed with missing pods at the threshold
//     (ratio < 1) or at 0 (ratio > 1), and unready pods at 0 when ratio > 1;
//     the count is kept when the new ratio is within tolerance, points the
//     other way, or its ceil(new ratio × pods counted) would move the count
//     the other way.
func (c HPAConfig) podsProposal(m HPAMetric, values map[string]float64, pods []HPAPod, current int) hpaProposal {
	if len(pods) == 0 {
		return hpaProposal{err: "no pods listed"}
	}
	target := exactDecimal(m.Threshold)
	sum := new(big.Rat)
	var ready, missing, unready int
	for _, p := range pods {
		switch {
		case p.Deleting || p.Phase == HPAPodFailed:
			continue
		case p.Phase == HPAPodPending:
			unready++
			continue
		}
		v, ok := values[p.Name]
		if !ok {
			missing++
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return hpaProposal{err: fmt.Sprintf("pod %s value %v", p.Name, v)}
		}
		sum.Add(sum, exactDecimal(v))
		ready++
	}
	if ready == 0 {
		return hpaProposal{err: "no sample from any ready pod"}
	}
	one := big.NewRat(1, 1)
	ratioOf := func(s *big.Rat, n int) *big.Rat {
		return new(big.Rat).Quo(s, new(big.Rat).Mul(target, big.NewRat(int64(n), 1)))
	}
	ratio := ratioOf(sum, ready)
	avg := new(big.Rat).Quo(sum, big.NewRat(int64(ready), 1))
	in, band := c.within(ratio)
	head := fmt.Sprintf("%s average %s over %s / %s per pod: ratio %s", m.Name, trim(avg), plural(ready, "pod"), trim(target), trim(ratio))

	up, down := ratio.Cmp(one) > 0, ratio.Cmp(one) < 0
	withUnready := unready > 0 && up
	if !withUnready && missing == 0 {
		if in {
			return hpaProposal{replicas: current, text: fmt.Sprintf("%s %s -> %d", head, band, current)}
		}
		n := hpaCeil(new(big.Rat).Mul(ratio, big.NewRat(int64(ready), 1)))
		return hpaProposal{replicas: n, text: fmt.Sprintf("%s %s -> %d", head, band, n)}
	}

	counted := ready
	var notes []string
	if missing > 0 {
		switch {
		case down:
			sum.Add(sum, new(big.Rat).Mul(target, big.NewRat(int64(missing), 1)))
			counted += missing
			notes = append(notes, fmt.Sprintf("%d missing as %s", missing, trim(target)))
		case up:
			counted += missing
			notes = append(notes, fmt.Sprintf("%d missing as 0", missing))
		}
	}
	if withUnready {
		counted += unready
		notes = append(notes, fmt.Sprintf("%d unready as 0", unready))
	}
	newRatio := ratioOf(sum, counted)
	in, band = c.within(newRatio)
	head = fmt.Sprintf("%s; %s: ratio %s %s", head, strings.Join(notes, ", "), trim(newRatio), band)
	flipped := (down && newRatio.Cmp(one) > 0) || (up && newRatio.Cmp(one) < 0)
	switch {
	case in:
		return hpaProposal{replicas: current, text: fmt.Sprintf("%s -> %d", head, current)}
	case flipped:
		return hpaProposal{replicas: current, text: fmt.Sprintf("%s, direction flipped: keep %d", head, current)}
	}
	n := hpaCeil(new(big.Rat).Mul(newRatio, big.NewRat(int64(counted), 1)))
	if (newRatio.Cmp(one) < 0 && n > current) || (newRatio.Cmp(one) > 0 && n < current) {
		return hpaProposal{replicas: current, text: fmt.Sprintf("%s -> %d would move the other way: keep %d", head, n, current)}
	}
	return hpaProposal{replicas: n, text: fmt.Sprintf("%s -> %d", head, n)}
}

// hpaCeil rounds r up to an integer, saturated to the int32 range as
// upstream's replica counts are.
func hpaCeil(r *big.Rat) int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // floor: the denominator is > 0
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return saturate(q)
}

// hpaTrunc rounds r toward zero, as upstream's int32(float64) conversion.
func hpaTrunc(r *big.Rat) int {
	return saturate(new(big.Int).Quo(r.Num(), r.Denom()))
}

func saturate(q *big.Int) int {
	switch {
	case q.Cmp(big.NewInt(math.MaxInt32)) > 0:
		return math.MaxInt32
	case q.Cmp(big.NewInt(math.MinInt32)) < 0:
		return math.MinInt32
	}
	return int(q.Int64())
}
