// Package prometheus ships the Prometheus files of the reference autoscaler:
// alerts.yaml (the "maxed out" alert of Grafana's post on autoscaling Loki queries with KEDA on the console's zone gauges) and
// its promtool unit test, alerts_test.yaml. The Go test runs promtool on them
// (skipped when promtool is not on PATH, unless CI=true).
//
// It holds no Go code and imports nothing.
package prometheus
