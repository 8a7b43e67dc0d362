// Package controller runs the reference autoscaler around the pure policy in
// package autoscaler: it owns the clock and the per-zone state, discovers and
// scrapes a zone's workers, asks the policy for a decision, applies it
// through the scale target, persists it in the store, audits it and logs it
// (Ramen 0.7.5's autoscaling notes ("Who runs it", "How it decides", "Audit and logs")).
//
// It also applies the forced changes of the API (a max or a count set by an
// admin) and runs the auto-rebalance scheduler, which visits every group ×
// zone each interval. Operations on one zone are serialised, so a scheduler
// round and an API call never interleave on a zone.
//
// The platform is reached through two small interfaces, ScaleTarget (the
// scale subresource) and Discovery (the EndpointSlices), with adapters for
// autoscaler/fleet; workers are scraped through a Scraper.
//
// Each zone runs the step policy (Options.Policy) or, when an admin set it,
// the hpa policy of autoscaler/hpa.go on a PromQL query answered by a
// MetricSource (Prometheus through client_golang's api/v1), with its own
// polling interval: policy.go holds the API shape, its defaults and the
// bounds rule, hpa_round.go the per-zone dispatch and memory.
//
// Must not import: net/http/httptest outside tests, scenarios/, or the
// console package.
package controller
