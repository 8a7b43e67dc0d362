// Package querier is the queue workload's querier: it connects to a
// autoscaler/scheduler, keeps a session open, and pulls calls from the
// scheduler's queue with a fixed number of workers (DefaultWorkers, 6, as
// in Grafana's post: "each querier is configured to run six workers"), so
// it never runs more calls at once than it has workers; the rest wait in the
// scheduler's queue, counted in its in-flight requests. Each call is served
// by the reference worker's MCP handler (autoscaler/worker: the work tool
// holds the call ms milliseconds, burning Config.CPUPerCall millicores
// meanwhile when set) and the answer goes back through the scheduler to
// the caller.
//
// A querier that goes away mid-call (killed, its connection cut) never
// loses the call: the scheduler re-queues it once, at the front, when the
// session ends (scheduler.MaxAttempts). Drain (SIGTERM through serve.Run's
// OnDrain) stops pulling, lets the running calls finish and be answered,
// then ends the session; Run returns nil.
//
// HTTP surface of Handler (the querier's own port, for probes and scrapes):
//
//	GET /readyz   200 "ok" while a session is open; 503 before, between
//	              sessions and while draining
//	GET /livez    200 "ok"
//	GET /metrics  Prometheus text format (own registry): workers, busy
//	              workers, calls, connected
//
// Must not import other packages of this module except autoscaler/serve,
// autoscaler/scheduler (the protocol) and autoscaler/worker (the work tool).
package querier
