package edge

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names an edge serves on GET /metrics, and their labels.
const (
	// MetricRequestsTotal is a counter of answered requests to
	// /g/{group}/z/{zone}/mcp (405s included), labels group, zone, code (the
	// HTTP status sent; 499 when the client went away first). Unknown paths
	// (404) are not counted.
	MetricRequestsTotal = "scaleproof_edge_requests_total"
	// MetricInflight is a gauge, labels group, zone: requests inside the edge
	// for the zone now (queued + running).
	MetricInflight = "scaleproof_edge_inflight"
	// MetricInflightRequests is a summary, labels group, zone, with quantiles
	// 0.5, 0.75, 0.9, 0.99 over the last minute: the zone's in-flight requests
	// (queued + running, the request itself included) observed at each
	// request's start and end. It is the signal of Grafana's post on autoscaling Loki queries with KEDA (Cortex's
	// cortex_query_scheduler_inflight_requests), read as
	// sum(max_over_time(scaleproof_edge_inflight_requests{quantile="0.75"}[2m])).
	MetricInflightRequests = "scaleproof_edge_inflight_requests"

	// MetricWorkerAnswersTotal is a counter, labels group, zone, track,
	// code: calls a worker answered, by the worker's HTTP status and its
	// track, TrackCanary for the zone's canary and TrackStable for the
	// others. The canary's share of a zone's calls is its 2xx over all 2xx.
	MetricWorkerAnswersTotal = "scaleproof_edge_worker_answers_total"

	LabelGroup = "group"
	LabelZone  = "zone"
	LabelCode  = "code"
	LabelTrack = "track"

	TrackStable = "stable"
	TrackCanary = "canary"
)

// InflightMaxAge is the default window MetricInflightRequests' quantiles
// cover (Config.InflightMaxAge).
const InflightMaxAge = time.Minute

type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	inflight *prometheus.GaugeVec
	summary  *prometheus.SummaryVec
	answers  *prometheus.CounterVec
}

func newMetrics(maxAge time.Duration) *metrics {
	if maxAge <= 0 {
		maxAge = InflightMaxAge
	}
	// quantile -> allowed error
	objectives := map[float64]float64{0.5: 0.05, 0.75: 0.025, 0.9: 0.01, 0.99: 0.001}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequestsTotal,
			Help: "Answered requests to /g/{group}/z/{zone}/mcp by group, zone and HTTP status (499: client went away).",
		}, []string{LabelGroup, LabelZone, LabelCode}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricInflight,
			Help: "MCP calls inside the edge per group and zone (queued + running).",
		}, []string{LabelGroup, LabelZone}),
		summary: prometheus.NewSummaryVec(prometheus.SummaryOpts{
			Name:       MetricInflightRequests,
			Help:       "A zone's in-flight MCP calls (queued + running) observed at each call's start and end.",
			Objectives: objectives,
			MaxAge:     maxAge,
			AgeBuckets: 6,
		}, []string{LabelGroup, LabelZone}),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricWorkerAnswersTotal,
			Help: "Calls a worker answered, by group, zone, track (stable or canary) and the worker's HTTP status.",
		}, []string{LabelGroup, LabelZone, LabelTrack, LabelCode}),
	}
	m.reg.MustRegister(m.requests, m.inflight, m.summary, m.answers)
	return m
}
