// Package console is the reference console's HTTP API: a thin layer over
// the autoscaler controller and its store (Ramen 0.7.5's autoscaling notes ("The bounds", "Who runs
// it", "Audit and logs")).
//
//	GET  /api/v1/groups/{g}/zones/{z}/workers    count (+ max, readiness, last decision for admins of g)
//	PUT  /api/v1/groups/{g}/zones/{z}/workers    {"max_count": N} and/or {"count": N}
//	POST /api/v1/groups/{g}/zones/{z}/rebalance  run a decision now
//	GET|PUT /api/v1/groups/{g}/zones/{z}/policy  {"policy":"step"} or {"policy":"hpa","hpa":{...}} (policy.go)
//	GET  /api/v1/config/autorebalance            {"enabled": bool, "interval_seconds": n}
//	PUT  /api/v1/config/autorebalance            super admin only
//	GET  /api/v1/audit?group=&zone=&action=&limit=
//	GET  /readyz  /livez  /metrics
//	GET|POST /ui/...                               the web pages (web.go; docs/console.md)
//
// Callers authenticate with "Authorization: Bearer KEY"; keys come from a
// JSON file and carry a role (super_admin, group_admin of some groups,
// viewer, mcp_user). A refused change is 403 and audited with
// error:forbidden; a value out of range is 422 and audited with
// error:invalid; a malformed request is 400 and a body over MaxBody 413.
// Every error is JSON {"error": "..."}; 5xx only for a failing store (503)
// or platform (502).
//
// Must not import: scenarios/, or anything that reaches a platform other
// than through the controller.
package console
