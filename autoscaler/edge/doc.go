// Package edge is the reference system's edge: it routes an MCP call for one
// group × zone to a ready worker of that zone, like the load balancer in
// front of the workers.
//
// HTTP surface of Handler:
//
//	POST /g/{group}/z/{zone}/mcp  forwarded to http://<worker addr>/mcp
//	GET  /readyz                  200 once the first discovery succeeded; 503 before and while draining
//	GET  /livez                   200
//	GET  /metrics                 Prometheus text format (own registry)
//
// Routing: among the zone's ready workers (fleet discovery, refreshed every
// Config.Interval), the one with the fewest calls the edge itself has in
// flight to it; ties go round-robin. The worker's response (status,
// Content-Type, Retry-After, body) is copied back unchanged, so a worker's
// 429 at its in-flight limit (the intended back-pressure) reaches the client as
// it was sent.
//
// A call is never sent twice to workers once it may have reached one: only a
// dial failure (the request never left the edge) is retried, once, on
// another ready worker, and the worker that failed to dial is skipped until
// the next discovery refresh. Any other upstream failure is a 502 (504 when
// the upstream timeout ends it).
//
// Errors the edge makes itself are JSON-RPC 2.0 error bodies (code -32000,
// the request's id when it parses, else null) with Content-Type
// application/json:
//
//	404  unknown path or a group/zone name outside [A-Za-z0-9._-]{1,63}
//	405  not a POST (Allow: POST)
//	413  body over MaxBodyBytes
//	503  no ready worker in the zone, or none could be dialled (Retry-After: 1)
//	502  the worker failed after the request may have reached it
//	504  the worker did not answer within the upstream timeout
//
// The edge keeps the last good discovery list when a refresh fails, so it
// keeps routing while the fleet server or console is briefly down.
//
// Must not import other packages of this module except autoscaler/fleet,
// autoscaler/serve and autoscaler/faults (its planted bugs, off by default).
package edge
