package load

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Threshold is a pass/fail criterion on a run's metrics, in the spirit of
// k6's thresholds (https://grafana.com/docs/k6/latest/using-k6/thresholds/):
// an expression "METRIC OP VALUE", evaluated on the whole result at the end
// of the run; with AbortOnFail the run is also stopped (gracefully) as soon
// as the expression fails on the results so far, once DelayAbortEval has
// passed.
//
// Metrics (latency ones are over every non-interrupted call, measured from
// each iteration's intended or scheduled start):
//
//	p50 p90 p95 p99 p99.9 ...  latency percentile (any pNN or pNN.N)
//	min avg med max            latency
//	rate_<class>               fraction of calls of that class, 0..1 (rate_ok, rate_429, rate_4xx, rate_5xx,
//	                           rate_jsonrpc_error, rate_bad_response, rate_transport, rate_interrupted)
//	rate_errors                fraction of calls that are not ok
//	count_<class>              number of calls of that class; count_errors: not ok
//	iterations                 iterations completed
//	dropped_iterations         iterations an arrival-rate executor could not start
//
// OP is one of < <= > >= == !=. A latency VALUE takes a unit (250ms, 1.5s,
// 800us); a bare number is milliseconds, as in k6.
type Threshold struct {
	Expr           string        `json:"threshold"`
	AbortOnFail    bool          `json:"abortOnFail,omitempty"`
	DelayAbortEval time.Duration `json:"delayAbortEval,omitempty"`

	metric string
	op     string
	value  float64 // milliseconds for latency metrics
}

// ThresholdResult is a threshold evaluated on a result.
type ThresholdResult struct {
	Threshold Threshold
	Observed  string // the metric's value, formatted ("p95=112ms")
	Passed    bool
}

var thresholdOps = []string{"<=", ">=", "==", "!=", "<", ">"} // two-character ones first

// ParseThreshold parses "EXPR" or "EXPR,abortOnFail" or
// "EXPR,abortOnFail,delayAbortEval=10s". Errors name the problem and the
// accepted forms.
func ParseThreshold(s string) (Threshold, error) {
	parts := strings.Split(s, ",")
	t := Threshold{Expr: strings.TrimSpace(parts[0])}
	for _, opt := range parts[1:] {
		opt = strings.TrimSpace(opt)
		switch {
		case opt == "abortOnFail" || opt == "abort-on-fail":
			t.AbortOnFail = true
		case strings.HasPrefix(opt, "delayAbortEval="):
			d, err := time.ParseDuration(strings.TrimPrefix(opt, "delayAbortEval="))
			if err != nil || d < 0 {
				return t, fmt.Errorf("threshold %q: delayAbortEval wants a duration like 10s", s)
			}
			t.DelayAbortEval = d
		default:
			return t, fmt.Errorf("threshold %q: unknown option %q (have abortOnFail, delayAbortEval=DURATION)", s, opt)
		}
	}
	if err := t.compile(); err != nil {
		return t, err
	}
	return t, nil
}

// compile parses Expr into its parts (also for thresholds read from a
// config file).
func (t *Threshold) compile() error {
	e := strings.ReplaceAll(t.Expr, " ", "")
	var op string
	i := -1
	for _, o := range thresholdOps {
		if j := strings.Index(e, o); j > 0 {
			op, i = o, j
			break
		}
	}
	if i < 0 {
		return fmt.Errorf("threshold %q: want METRIC OP VALUE, e.g. 'p95<250ms' or 'rate_429<0.05' (OP one of < <= > >= == !=)", t.Expr)
	}
	metric, val := e[:i], e[i+len(op):]
	if !validMetric(metric) {
		return fmt.Errorf("threshold %q: unknown metric %q (have pNN, min, avg, med, max, rate_<class>, rate_errors, count_<class>, count_errors, iterations, dropped_iterations)", t.Expr, metric)
	}
	var v float64
	var err error
	if isLatencyMetric(metric) {
		v, err = parseMillis(val)
	} else {
		v, err = strconv.ParseFloat(val, 64)
	}
	if err != nil {
		return fmt.Errorf("threshold %q: value %q: %v", t.Expr, val, err)
	}
	t.metric, t.op, t.value = metric, op, v
	return nil
}

// Compile checks a Threshold built as a literal or decoded from a file.
func (t *Threshold) Compile() error { return t.compile() }

func parseMillis(s string) (float64, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("want a duration like 250ms or 1.5s, or a number of milliseconds")
	}
	return float64(d) / float64(time.Millisecond), nil
}

func isLatencyMetric(m string) bool {
	switch m {
	case "min", "avg", "med", "max":
		return true
	}
	_, ok := percentileOf(m)
	return ok
}

func percentileOf(m string) (float64, bool) {
	if len(m) < 2 || m[0] != 'p' {
		return 0, false
	}
	q, err := strconv.ParseFloat(m[1:], 64)
	return q, err == nil && q > 0 && q <= 100
}

func validMetric(m string) bool {
	if isLatencyMetric(m) || m == "iterations" || m == "dropped_iterations" || m == "rate_errors" || m == "count_errors" {
		return true
	}
	for _, p := range []string{"rate_", "count_"} {
		if c, ok := strings.CutPrefix(m, p); ok {
			return Class(c).Valid()
		}
	}
	return false
}

// Eval evaluates t on m (which may still be running).
func (t Threshold) Eval(m *Metrics) ThresholdResult {
	if t.metric == "" {
		if err := t.compile(); err != nil {
			return ThresholdResult{Threshold: t, Observed: err.Error()}
		}
	}
	v, shown := t.observe(m)
	var ok bool
	switch t.op {
	case "<":
		ok = v < t.value
	case "<=":
		ok = v <= t.value
	case ">":
		ok = v > t.value
	case ">=":
		ok = v >= t.value
	case "==":
		ok = v == t.value
	case "!=":
		ok = v != t.value
	}
	return ThresholdResult{Threshold: t, Observed: t.metric + "=" + shown, Passed: ok}
}

func (t Threshold) observe(m *Metrics) (float64, string) {
	ms := func(d time.Duration) (float64, string) {
		return float64(d) / float64(time.Millisecond), d.Round(time.Microsecond * 10).String()
	}
	switch t.metric {
	case "min":
		return ms(m.Latencies().Min)
	case "avg":
		return ms(m.Latencies().Mean)
	case "med":
		return ms(m.Quantile(50))
	case "max":
		return ms(m.Latencies().Max)
	case "iterations":
		n := m.Completed()
		return float64(n), strconv.FormatInt(n, 10)
	case "dropped_iterations":
		n := m.DroppedIterations()
		return float64(n), strconv.FormatInt(n, 10)
	}
	if q, ok := percentileOf(t.metric); ok {
		return ms(m.Quantile(q))
	}
	totals := m.Totals()
	var all, n int64
	for _, k := range totals {
		all += k
	}
	if c, ok := strings.CutPrefix(t.metric, "rate_"); ok {
		n = countOf(totals, c, all)
		if all == 0 {
			return 0, "0 (no calls)"
		}
		r := float64(n) / float64(all)
		return r, strconv.FormatFloat(r, 'f', 4, 64)
	}
	c, _ := strings.CutPrefix(t.metric, "count_")
	n = countOf(totals, c, all)
	return float64(n), strconv.FormatInt(n, 10)
}

func countOf(totals map[Class]int64, c string, all int64) int64 {
	if c == "errors" {
		return all - totals[ClassOK]
	}
	return totals[Class(c)]
}

// Quantile is the latency at percentile q (0 < q <= 100) of the run so far,
// interrupted results excluded; 0 when there is none.
func (m *Metrics) Quantile(q float64) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hist.TotalCount() == 0 {
		return 0
	}
	return time.Duration(m.hist.ValueAtQuantile(q)) * time.Microsecond
}

// EvalThresholds evaluates every threshold on m; all is true when every
// one passed.
func EvalThresholds(ts []Threshold, m *Metrics) (out []ThresholdResult, all bool) {
	all = true
	for _, t := range ts {
		r := t.Eval(m)
		all = all && r.Passed
		out = append(out, r)
	}
	return out, all
}
