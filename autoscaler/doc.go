// Package autoscaler is the pure decision core of the reference autoscaler.
//
// It holds the decision policies (the Ramen 0.7.5 step policy in step.go, the
// policy faithful to upstream HPA and KEDA in hpa.go) as pure
// functions of (config, zone state, observation, now) that return a Decision
// and the next zone state. Nothing here does I/O, reads a clock, logs, or
// starts goroutines: the controller (autoscaler/controller) owns the clock,
// scrapes workers and applies decisions through a ScaleTarget.
//
// Must not import: net/http, os, log/slog, or any package of this module
// outside autoscaler/.
package autoscaler
