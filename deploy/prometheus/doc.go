// Package prometheus ships the Prometheus files of the reference autoscaler:
// alerts.yaml (seed 000's "maxed out" alert on the console's zone gauges) and
// its promtool unit test, alerts_test.yaml. The Go test runs promtool on them
// (skipped when promtool is not on PATH, unless CI=true).
//
// It holds no Go code and imports nothing.
package prometheus
