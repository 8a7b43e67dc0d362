// Package scheduler is the reference system's query scheduler, the front of
// the queue workload modelled on Loki's read path as Grafana's post "How to
// autoscale Grafana Loki queries using KEDA" describes it: callers' MCP
// tools/call requests wait in one bounded FIFO queue, queriers
// (autoscaler/querier) pull them with a fixed number of workers each, and the
// scheduler exports its in-flight requests (enqueued + running) as a
// Prometheus summary with quantiles, the metric the post's KEDA trigger reads.
//
// HTTP surface of Handler:
//
//	POST /mcp               an MCP call (the body and the MCP headers are
//	                        handed to a querier as they are, the querier's
//	                        answer comes back as it is). Queue full: 429,
//	                        Retry-After: 1; draining: 503, Retry-After: 1;
//	                        body over MaxBodyBytes: 413; not JSON: 400; not
//	                        answered within Config.MaxCallTime: 504 (all with
//	                        a JSON-RPC error body).
//	GET  /querier/connect   a querier's session: one long response, a Hello
//	                        line then a heartbeat line ({}) every
//	                        Config.Heartbeat. While it stays open the querier
//	                        is connected; when it ends, the calls the session
//	                        holds are re-queued once (see Config.MaxAttempts).
//	POST /querier/next      a worker's long poll for its next call: 200 with
//	                        an Assignment, 204 when none came within
//	                        Config.PollTimeout, 410 when the session is gone.
//	POST /querier/answer    a worker's Answer to one call: 204; 404 when the
//	                        call is no longer held by that session.
//	POST /querier/leave     the querier drains: 204; the session's polls end
//	                        with 410 and it gets no more calls, while the
//	                        calls it runs are still answered through it.
//	GET  /metrics           Prometheus text format (own registry), see metrics.go
//	GET  /readyz, /livez    200 "ok"; /readyz 503 while draining
//
// Everything timed reads Config.Now, so tests drive the in-flight summary's
// window with a fake clock. The queue (queue.go) and the window (window.go)
// are plain data structures with no I/O.
//
// Must not import other packages of this module except autoscaler/serve.
package scheduler
