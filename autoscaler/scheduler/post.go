package scheduler

import (
	"fmt"
	"time"
)

// The settings of Grafana's post "How to autoscale Grafana Loki queries
// using KEDA" (seed 000), for the targets that scale the queriers the way
// the post does. Each constant quotes the post.
const (
	// PostWorkersPerQuerier: "each querier is configured to run six workers".
	PostWorkersPerQuerier = 6
	// PostTargetUtilization: "we aim to use 75% of those workers".
	PostTargetUtilization = 0.75
	// PostThreshold is the trigger's threshold, in in-flight requests per
	// querier: "a floor of 75% of six workers per querier, or four workers"
	// (floor(PostTargetUtilization * PostWorkersPerQuerier)).
	PostThreshold = 4
	// PostMinReplicas: the ScaledObject's minReplicaCount, "scales down to 10 queriers".
	PostMinReplicas = 10
	// PostMaxReplicas: the ScaledObject's maxReplicaCount, "scales up to 50 queriers".
	PostMaxReplicas = 50
	// PostPollingInterval: the ScaledObject's pollingInterval: 30 (seconds).
	PostPollingInterval = 30 * time.Second
	// PostScaleDownStabilization: horizontalPodAutoscalerConfig.behavior.scaleDown.
	// stabilizationWindowSeconds: 1800, "a stabilization window of 30 minutes".
	PostScaleDownStabilization = 1800 * time.Second
	// PostQuantile: "uses the 75th percentile for the inflight requests metric".
	PostQuantile = "0.75"
	// PostRange: "aggregates its maximum value over two minutes" ([2m]).
	PostRange = 2 * time.Minute
	// PostMetricName is the trigger's metricName in the post's ScaledObject.
	PostMetricName = "querier_autoscaling_metric"
	// PostDeployment is the scale target's name in the post's ScaledObject.
	PostDeployment = "querier"
)

// InflightQuery is the post's trigger query on this scheduler's summary,
//
//	sum(max_over_time(loki_query_scheduler_inflight_requests{namespace="NS",quantile="Q"}[R]))
//
// with Q = quantile (e.g. PostQuantile) and R = rng in Prometheus's duration
// form (PostRange gives "2m"). The post's query names Cortex's metric
// (cortex_query_scheduler_inflight_requests); Loki's scheduler exports the
// same summary as MetricInflightRequests. namespace is used as it is
// (a Kubernetes namespace name needs no escaping).
func InflightQuery(namespace, quantile string, rng time.Duration) string {
	return fmt.Sprintf(`sum(max_over_time(%s{namespace=%q,quantile=%q}[%s]))`,
		MetricInflightRequests, namespace, quantile, promDuration(rng))
}

// PostQuery is InflightQuery with the post's quantile and range.
func PostQuery(namespace string) string {
	return InflightQuery(namespace, PostQuantile, PostRange)
}

// promDuration writes d as Prometheus does: the largest units that divide
// it exactly (2m, 90s, 1h30m, 500ms).
func promDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d%time.Second != 0 {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	s := int64(d / time.Second)
	out := ""
	for _, u := range []struct {
		n    int64
		name string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}} {
		if s >= u.n {
			out += fmt.Sprintf("%d%s", s/u.n, u.name)
			s %= u.n
		}
	}
	return out
}
