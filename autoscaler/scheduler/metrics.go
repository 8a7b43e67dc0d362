package scheduler

import "github.com/prometheus/client_golang/prometheus"

// Metric names a scheduler serves on GET /metrics.
const (
	// MetricInflightRequests is a summary of the in-flight requests
	// (enqueued + running) sampled every Config.SampleEvery, with quantiles
	// 0.5, 0.75 and 0.99 over the last Config.Window: the metric of the
	// post's KEDA trigger, under the name Loki's query scheduler gives it
	// (the post's query names Cortex's, cortex_query_scheduler_inflight_requests).
	MetricInflightRequests = "loki_query_scheduler_inflight_requests"
	// MetricInflight is a gauge: the in-flight requests now (enqueued + running).
	MetricInflight = "scaleproof_scheduler_inflight"
	// MetricQueueLength is a gauge: calls waiting in the queue.
	MetricQueueLength = "scaleproof_scheduler_queue_length"
	// MetricQueueLimit is a gauge: the queue's bound (beyond it, 429).
	MetricQueueLimit = "scaleproof_scheduler_queue_limit"
	// MetricRunning is a gauge: calls handed to a querier, not yet answered.
	MetricRunning = "scaleproof_scheduler_running"
	// MetricConnectedQueriers is a gauge: open querier sessions.
	MetricConnectedQueriers = "scaleproof_scheduler_connected_queriers"
	// MetricQuerierCallsTotal is a counter with label querier: calls each
	// querier answered.
	MetricQuerierCallsTotal = "scaleproof_scheduler_querier_calls_total"
	// MetricRefusedTotal is a counter: calls refused with 429, queue full.
	MetricRefusedTotal = "scaleproof_scheduler_refused_total"
	// MetricRequeuedTotal is a counter: calls re-queued after their querier went away.
	MetricRequeuedTotal = "scaleproof_scheduler_requeued_total"
	// MetricFailedTotal is a counter: calls answered 503 after their second querier went away.
	MetricFailedTotal = "scaleproof_scheduler_failed_total"
)

// inflightSummary serves the window as a constant summary at each scrape.
type inflightSummary struct {
	s    *Scheduler
	desc *prometheus.Desc
}

func (c inflightSummary) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c inflightSummary) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	qs := c.s.window.Quantiles(c.s.cfg.Now(), quantiles...)
	count, sum := c.s.window.Count(), c.s.window.Sum()
	c.s.mu.Unlock()
	ch <- prometheus.MustNewConstSummary(c.desc, count, sum, qs)
}

func (s *Scheduler) initMetrics() {
	s.reg = prometheus.NewRegistry()
	s.perQ = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricQuerierCallsTotal, Help: "Calls each querier answered.",
	}, []string{"querier"})
	gauge := func(name, help string, f func(Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(s.Stats()) })
	}
	counter := func(name, help string, f func(Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return f(s.Stats()) })
	}
	s.reg.MustRegister(
		inflightSummary{s: s, desc: prometheus.NewDesc(MetricInflightRequests,
			"Number of in-flight requests (enqueued or running on a querier), sampled at a regular interval; the quantiles cover the last window (1 minute by default).",
			nil, nil)},
		s.perQ,
		gauge(MetricInflight, "In-flight requests now: enqueued + running.", func(st Stats) float64 { return float64(st.Inflight()) }),
		gauge(MetricQueueLength, "Calls waiting in the queue for a querier.", func(st Stats) float64 { return float64(st.Queued) }),
		gauge(MetricQueueLimit, "The queue's bound; calls beyond it get 429.", func(Stats) float64 { return float64(s.cfg.MaxQueue) }),
		gauge(MetricRunning, "Calls handed to a querier and not yet answered.", func(st Stats) float64 { return float64(st.Running) }),
		gauge(MetricConnectedQueriers, "Open querier sessions.", func(st Stats) float64 { return float64(st.Queriers) }),
		counter(MetricRefusedTotal, "Calls refused with 429 because the queue was full.", func(st Stats) float64 { return float64(st.Refused) }),
		counter(MetricRequeuedTotal, "Calls re-queued because their querier went away while running them.", func(st Stats) float64 { return float64(st.Requeued) }),
		counter(MetricFailedTotal, "Calls answered 503 because their second querier went away too.", func(st Stats) float64 { return float64(st.Failed) }),
	)
}
