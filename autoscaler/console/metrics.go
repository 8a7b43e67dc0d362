package console

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
)

// collector exposes the console's own metrics, read from the controller at
// scrape time.
type collector struct {
	c                              *controller.Controller
	decisions, count, max, enabled *prometheus.Desc
	interval                       *prometheus.Desc
}

func newCollector(c *controller.Controller) *collector {
	return &collector{
		c: c,
		decisions: prometheus.NewDesc("scaleproof_console_decisions_total",
			"Decisions taken since start, by action (up, down, hold; set for forced changes).", []string{"action"}, nil),
		count: prometheus.NewDesc("scaleproof_console_zone_count",
			"Desired workers of a group × zone.", []string{"group", "zone"}, nil),
		max: prometheus.NewDesc("scaleproof_console_zone_max_count",
			"Max workers of a group × zone.", []string{"group", "zone"}, nil),
		enabled: prometheus.NewDesc("scaleproof_console_autorebalance_enabled",
			"1 when the auto-rebalance scheduler is on.", nil, nil),
		interval: prometheus.NewDesc("scaleproof_console_autorebalance_interval_seconds",
			"The auto-rebalance scheduler's interval.", nil, nil),
	}
}

func (k *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- k.decisions
	ch <- k.count
	ch <- k.max
	ch <- k.enabled
	ch <- k.interval
}

func (k *collector) Collect(ch chan<- prometheus.Metric) {
	for a, n := range k.c.DecisionCounts() {
		ch <- prometheus.MustNewConstMetric(k.decisions, prometheus.CounterValue, float64(n), string(a))
	}
	for _, z := range k.c.Zones() {
		ch <- prometheus.MustNewConstMetric(k.count, prometheus.GaugeValue, float64(z.Count), z.Group, z.Zone)
		ch <- prometheus.MustNewConstMetric(k.max, prometheus.GaugeValue, float64(z.MaxCount), z.Group, z.Zone)
	}
	cfg := k.c.AutoRebalance()
	on := 0.0
	if cfg.Enabled {
		on = 1
	}
	ch <- prometheus.MustNewConstMetric(k.enabled, prometheus.GaugeValue, on)
	ch <- prometheus.MustNewConstMetric(k.interval, prometheus.GaugeValue, cfg.Interval.Seconds())
}
