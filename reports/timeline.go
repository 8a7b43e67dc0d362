package reports

// TimelinePoint is the "timeline" record: one sample of a target scenario
// (--target hpa or keda), taken every sample interval while it runs. T is
// seconds (0.1 s resolution) from the scenario's start; InFlight and VUs are
// the load generator's (calls started and not yet answered; VUs alive), 0
// when no load runs; Count, Ready, Desired, Min and Max are the target's
// reading (the Deployment's spec.replicas and status.readyReplicas, the
// HPA's status.desiredReplicas and its bounds); Metric is the autoscaler's
// own reading of its signal in the metric's unit, when HasMetric. Err is set
// when the target could not be read (the numbers are then 0).
type TimelinePoint struct {
	Scenario  string  `json:"scenario"`
	T         float64 `json:"t"`
	InFlight  int64   `json:"in_flight"`
	VUs       int     `json:"vus"`
	Count     int     `json:"count"`
	Ready     int     `json:"ready"`
	Desired   int     `json:"desired"`
	Min       int     `json:"min"`
	Max       int     `json:"max"`
	Metric    float64 `json:"metric,omitempty"`
	HasMetric bool    `json:"has_metric,omitempty"`
	Err       string  `json:"err,omitempty"`
}

// TimelineOf returns the points of one scenario, in the file's order.
func (res *Results) TimelineOf(scenario string) []TimelinePoint {
	var out []TimelinePoint
	for _, p := range res.Timeline {
		if p.Scenario == scenario {
			out = append(out, p)
		}
	}
	return out
}
