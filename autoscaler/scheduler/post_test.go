package scheduler

// The post's formula, kept as a test oracle: the product does not compute
// desired replicas (the HPA or KEDA does).

// DesiredReplicas is the post's formula, the HPA's:
// desiredReplicas = ceil[currentReplicas * (currentMetricValue / threshold)],
// where for an AverageValue trigger like KEDA's the metric is the total in-flight
// and currentReplicas cancels: ceil(inflight / threshold). The post's example:
// 20 in-flight at threshold 4 gives 5. Clamped to [minR, maxR]; threshold <= 0 gives minR.
func DesiredReplicas(inflight float64, threshold, minR, maxR int) int {
	if threshold <= 0 {
		return minR
	}
	n := int(inflight / float64(threshold))
	if float64(n*threshold) < inflight {
		n++
	}
	return min(max(n, minR), maxR)
}
