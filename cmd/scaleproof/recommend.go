package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/scenarios"
)

// recommendOpts are recommend-bounds' flags.
type recommendOpts struct {
	prometheus    string
	queryMin      string
	queryMax      string
	replicasQuery string
	group, zone   string
	workers       int
	rangeStr      string
	minFloor      int
	maxFloor      int
	timeout       time.Duration
	jsonOut       bool
}

func newRecommendCmd() *cobra.Command {
	o := &recommendOpts{}
	c := &cobra.Command{
		Use:   "recommend-bounds",
		Short: "Recommend an hpa zone's min and max replicas from Prometheus (the two formulas of Grafana's KEDA post)",
		Long: `recommend-bounds runs the two formulas of Grafana's post on autoscaling Loki
queries with KEDA for the bounds of an autoscaled deployment against a
Prometheus server and prints each number with its inputs.

  min = clamp_min(ceil(avg(avg_over_time(P75[7d])) / floor(workers × 0.75)), 2)
        "the average in-flight requests 75 % of the time over the last seven
        days, at a 75 % utilization of each replica's workers"
  max = clamp_min(ceil((max(max_over_time(P50[7d])) / workers > current) or current), 20)
        "the replicas the 50th percentile of in-flight requests needed at its
        peak, or the current replicas when that is more"

P75 and P50 are the in-flight series (--query-min, --query-max; by default the
reference edge's summary ` + scenarios.InflightMetric + `
for --group, and --zone when given), current is max(--replicas-query) (by
default the console's scaleproof_console_zone_count). In a query, %s and $group
stand for the group and $zone for the zone. --workers is how many calls one
replica serves at once; it defaults to the reference worker's in-flight limit
(32), because the default queries measure the reference edge. For another
system pass its own: a Loki querier, where the formulas come from, runs 6.

Exit codes: 0 both numbers computed, 2 bad usage or no data, 3 Prometheus
unreachable or a query failed.`,
		Example: `  scaleproof recommend-bounds --prometheus http://127.0.0.1:9090 --group loadtest --workers 32
  scaleproof recommend-bounds --prometheus http://prom:9090 \
      --query-min 'cortex_query_scheduler_inflight_requests{namespace="%s",quantile="0.75"}' \
      --query-max 'cortex_query_scheduler_inflight_requests{namespace="%s",quantile="0.5"}' \
      --replicas-query 'kube_deployment_spec_replicas{namespace="%s",deployment="querier"}' --group loki`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRecommend(cmd, o) },
	}
	f := c.Flags()
	f.StringVar(&o.prometheus, "prometheus", "", "base URL of the Prometheus server (required)")
	f.StringVar(&o.queryMin, "query-min", "", `the p75 in-flight series (default `+scenarios.InflightMetric+`{group="G",quantile="0.75"})`)
	f.StringVar(&o.queryMax, "query-max", "", `the p50 in-flight series (default `+scenarios.InflightMetric+`{group="G",quantile="0.5"})`)
	f.StringVar(&o.replicasQuery, "replicas-query", "", `the current replicas (default scaleproof_console_zone_count{group="G"}), taken as max(...)`)
	f.StringVar(&o.group, "group", "scaleproof", "the group (%s and $group in queries)")
	f.StringVar(&o.zone, "zone", "", "the zone ($zone in queries; narrows the default queries to it)")
	f.IntVar(&o.workers, "workers", scenarios.Published().MaxInflight,
		"calls one replica serves at once; the default is the reference worker's in-flight limit, which the default queries measure (a Loki querier runs 6)")
	f.StringVar(&o.rangeStr, "range", "7d", "the PromQL range the formulas look back over")
	f.IntVar(&o.minFloor, "min-floor", 2, "clamp_min of the min formula")
	f.IntVar(&o.maxFloor, "max-floor", 20, "clamp_min of the max formula")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on each query")
	f.BoolVar(&o.jsonOut, "json", false, "print the numbers and their inputs as JSON")
	return c
}

// Bound is one recommended number with its inputs.
type Bound struct {
	Name   string  `json:"name"`   // "min" or "max"
	Value  int     `json:"value"`  // the recommendation (Prometheus' answer to PromQL)
	PromQL string  `json:"promql"` // the formula, as run
	Inputs []Input `json:"inputs"`
	Steps  string  `json:"steps"` // the arithmetic, in words
}

// Input is one number a formula used.
type Input struct {
	What  string   `json:"what"`
	Query string   `json:"query,omitempty"`
	Value *float64 `json:"value"` // nil: no data
}

// querier is what recommend-bounds needs of Prometheus.
type querier interface {
	Query(ctx context.Context, query string) ([]float64, error)
}

func runRecommend(cmd *cobra.Command, o *recommendOpts) error {
	if o.prometheus == "" {
		return withCode(exitUsage, errors.New("--prometheus URL is required"))
	}
	if !strings.HasPrefix(o.prometheus, "http://") && !strings.HasPrefix(o.prometheus, "https://") {
		return withCode(exitUsage, fmt.Errorf("--prometheus %q: want http://HOST:PORT", o.prometheus))
	}
	if o.workers < 1 {
		return withCode(exitUsage, fmt.Errorf("--workers %d: want >= 1", o.workers))
	}
	ps, err := controller.NewPrometheusSource(o.prometheus)
	if err != nil {
		return withCode(exitUsage, err)
	}
	defer ps.Close()
	bounds, err := recommendBounds(cmd.Context(), ps, o)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.jsonOut {
		return writeJSON(out, map[string]any{"prometheus": o.prometheus, "group": o.group, "zone": o.zone,
			"workers": o.workers, "range": o.rangeStr, "bounds": bounds})
	}
	writeBounds(out, bounds)
	return nil
}

// queries returns the three series with defaults and placeholders applied.
func (o *recommendOpts) queries() (p75, p50, replicas string) {
	sel := `group="` + o.group + `"`
	if o.zone != "" {
		sel += `,zone="` + o.zone + `"`
	}
	p75 = o.queryMin
	if p75 == "" {
		p75 = scenarios.InflightMetric + `{` + sel + `,quantile="0.75"}`
	}
	p50 = o.queryMax
	if p50 == "" {
		p50 = scenarios.InflightMetric + `{` + sel + `,quantile="0.5"}`
	}
	replicas = o.replicasQuery
	if replicas == "" {
		replicas = `scaleproof_console_zone_count{` + sel + `}`
	}
	x := func(q string) string { return scenarios.ExpandQuery(q, o.group, o.zone) }
	return x(p75), x(p50), x(replicas)
}

// recommendBounds runs the two formulas and their inputs.
func recommendBounds(ctx context.Context, q querier, o *recommendOpts) ([]Bound, error) {
	p75, p50, replicas := o.queries()
	r := o.rangeStr
	w := strconv.Itoa(o.workers)
	one := func(query string) (*float64, error) {
		qctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		vs, err := q.Query(qctx, query)
		if err != nil {
			return nil, withCode(exitInfra, fmt.Errorf("%s: %w", query, err))
		}
		for _, v := range vs {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				return &v, nil
			}
		}
		return nil, nil
	}
	f := formatValue
	// min: the first formula of Grafana's KEDA post.
	avgQ := fmt.Sprintf("avg(avg_over_time(%s[%s]))", p75, r)
	minQ := fmt.Sprintf("clamp_min(ceil(%s / scalar(floor(vector(%s * 0.75)))), %d)", avgQ, w, o.minFloor)
	divisor := math.Floor(float64(o.workers) * 0.75)
	avg, err := one(avgQ)
	if err != nil {
		return nil, err
	}
	minV, err := one(minQ)
	if err != nil {
		return nil, err
	}
	bmin := Bound{Name: "min", PromQL: minQ, Inputs: []Input{
		{What: "p75 in-flight, average over " + r, Query: avgQ, Value: avg},
		{What: fmt.Sprintf("floor(workers %d × 0.75)", o.workers), Value: &divisor},
	}}
	if minV == nil || avg == nil {
		return nil, withCode(exitUsage, fmt.Errorf("min replicas: no data: %s returned no series (is Prometheus scraping the in-flight metric?)", avgQ))
	}
	bmin.Value = int(*minV)
	bmin.Steps = fmt.Sprintf("ceil(%s / %s) = %s, at least %d: %d", f(avg), f(&divisor),
		f(new(math.Ceil(*avg/divisor))), o.minFloor, bmin.Value)

	// max: the post's second formula.
	peakQ := fmt.Sprintf("max(max_over_time(%s[%s]))", p50, r)
	curQ := fmt.Sprintf("max(%s)", replicas)
	maxQ := fmt.Sprintf("clamp_min(ceil((%s / %s > %s) or %s), %d)", peakQ, w, curQ, curQ, o.maxFloor)
	peak, err := one(peakQ)
	if err != nil {
		return nil, err
	}
	cur, err := one(curQ)
	if err != nil {
		return nil, err
	}
	maxV, err := one(maxQ)
	if err != nil {
		return nil, err
	}
	var perWorker *float64
	if peak != nil {
		perWorker = new(*peak / float64(o.workers))
	}
	bmax := Bound{Name: "max", PromQL: maxQ, Inputs: []Input{
		{What: "p50 in-flight, peak over " + r, Query: peakQ, Value: peak},
		{What: fmt.Sprintf("peak ÷ workers %d", o.workers), Value: perWorker},
		{What: "current replicas", Query: curQ, Value: cur},
	}}
	if maxV == nil {
		return nil, withCode(exitUsage, fmt.Errorf("max replicas: no data: neither %s nor %s returned a series", peakQ, curQ))
	}
	bmax.Value = int(*maxV)
	switch {
	case perWorker != nil && cur != nil && *perWorker > *cur:
		bmax.Steps = fmt.Sprintf("%s > current %s: ceil(%s) = %s, at least %d: %d", f(perWorker), f(cur), f(perWorker),
			f(new(math.Ceil(*perWorker))), o.maxFloor, bmax.Value)
	case cur != nil:
		bmax.Steps = fmt.Sprintf("%s is not above current %s: ceil(%s) = %s, at least %d: %d", f(perWorker), f(cur), f(cur),
			f(new(math.Ceil(*cur))), o.maxFloor, bmax.Value)
	default:
		bmax.Steps = fmt.Sprintf("no current replicas: ceil(%s), at least %d: %d", f(perWorker), o.maxFloor, bmax.Value)
	}
	return []Bound{bmin, bmax}, nil
}

// formatValue is a query's value as the bounds print it: the shortest
// decimal, or "no data" when the query returned no series (nil).
func formatValue(v *float64) string {
	if v == nil {
		return "no data"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// writeBounds prints the numbers and their inputs.
func writeBounds(w io.Writer, bs []Bound) {
	for i, b := range bs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s replicas: %d\n", b.Name, b.Value)
		for _, in := range b.Inputs {
			v := formatValue(in.Value)
			if in.Query != "" {
				fmt.Fprintf(w, "  %-40s %s\n    = %s\n", in.What+":", in.Query, v)
			} else {
				fmt.Fprintf(w, "  %-40s %s\n", in.What+":", v)
			}
		}
		fmt.Fprintf(w, "  %s\n  PromQL: %s\n", b.Steps, b.PromQL)
	}
}
