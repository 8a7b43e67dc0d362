package worker

import "github.com/prometheus/client_golang/prometheus"

// Metric names a worker serves on GET /metrics (no labels but MetricInfo's). The console's
// scraper reads them to make the step policy's decision: a worker is high over 80 %
// of its limit, low under 30 %, and calls per second come from the change of
// MetricCallsTotal between two scrapes.
const (
	// MetricInflight is a gauge: admitted POST /mcp not yet finished.
	MetricInflight = "scaleproof_worker_inflight"
	// MetricInflightLimit is a gauge: the in-flight limit (RAMEN_MAX_INFLIGHT).
	MetricInflightLimit = "scaleproof_worker_inflight_limit"
	// MetricInflightHighWater is a gauge: the most admitted POST /mcp the
	// worker has held at once since it started. A correct worker never
	// shows more than MetricInflightLimit, and refuses with 429 (and counts
	// MetricRefusedTotal) only once it has reached it.
	MetricInflightHighWater = "scaleproof_worker_inflight_high_water"
	// MetricReady is a gauge: 1 when /readyz answers 200, else 0.
	MetricReady = "scaleproof_worker_ready"
	// MetricCallsTotal is a counter: admitted POST /mcp that finished.
	MetricCallsTotal = "scaleproof_worker_calls_total"
	// MetricRefusedTotal is a counter: POST /mcp refused with 429 at the limit.
	MetricRefusedTotal = "scaleproof_worker_refused_total"
	// MetricInfo is a gauge, always 1, with one label, version: the
	// worker's Config.Version ("stable", or e.g. "canary").
	MetricInfo = "scaleproof_worker_info"
)

func (w *Worker) initMetrics() {
	w.reg = prometheus.NewRegistry()
	w.calls = prometheus.NewCounter(prometheus.CounterOpts{
		Name: MetricCallsTotal, Help: "Admitted POST /mcp calls that finished.",
	})
	w.refused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: MetricRefusedTotal, Help: "POST /mcp calls refused with 429 at the in-flight limit.",
	})
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: MetricInfo, Help: "Always 1; the version label names the worker's version (stable, canary).",
		ConstLabels: prometheus.Labels{"version": w.version},
	})
	info.Set(1)
	w.reg.MustRegister(
		info,
		w.calls,
		w.refused,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: MetricInflight, Help: "Admitted POST /mcp calls not yet finished.",
		}, func() float64 { return float64(w.InFlight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: MetricInflightLimit, Help: "The in-flight limit (RAMEN_MAX_INFLIGHT).",
		}, func() float64 { return float64(w.limit) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: MetricInflightHighWater, Help: "The most admitted POST /mcp calls held at once since the worker started.",
		}, func() float64 { return float64(w.HighWater()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: MetricReady, Help: "1 when /readyz answers 200, else 0.",
		}, func() float64 {
			if w.Ready() != nil {
				return 0
			}
			return 1
		}),
	)
}
