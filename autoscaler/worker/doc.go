// Package worker is the reference system's worker: an MCP server (official
// go-sdk, stateless, JSON responses) with one tool, "work", that holds a call
// for a given number of milliseconds, behind an in-flight limit. A call
// may also cost CPU while it is held (Config.CPUPerCall, Burner: a duty
// cycle of spin and sleep), so that the pod's CPU use follows its in-flight
// calls for an autoscaler on the HPA's CPU resource metric.
//
// It mirrors the worker of Ramen 0.7.5's autoscaling notes ("Ramen scales the workers, not the
// cloud"): each worker reports its in-flight calls, the in-flight limit it
// runs with (RAMEN_MAX_INFLIGHT, default 32) and its total call count, and it
// refuses calls beyond its limit with HTTP 429 (the intended back-pressure
// until the next worker is ready). The console's autoscaler reads these from
// GET /metrics under the names exported here (MetricInflight, ...).
//
// HTTP surface of Handler:
//
//	POST /mcp      MCP streamable HTTP, stateless: a bare JSON-RPC tools/call
//	               with no initialize gets 200 application/json. The client must
//	               send Content-Type: application/json and Accept listing both
//	               application/json and text/event-stream (MCP transport rule).
//	               Beyond the in-flight limit: 429, Retry-After: 1, JSON-RPC error.
//	               Body over MaxBodyBytes: 413; not JSON: 400 (both JSON-RPC errors).
//	GET  /metrics  Prometheus text format (own registry)
//	GET  /readyz   200 "ok"; 503 during the boot delay, while draining, and
//	               while FailReadiness is on (/mcp keeps serving then)
//	GET  /livez    200 "ok"
//
// Must not import other packages of this module except autoscaler/serve.
package worker
