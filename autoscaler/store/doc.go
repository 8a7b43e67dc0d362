// Package store keeps the reference autoscaler's persistent state in one
// bbolt file: every group × zone's count, max, last change and last decision
// (Ramen 0.7.5 "The bounds", "Who runs it"), the append-only audit log ("Audit and
// logs"), the auto-rebalance configuration (off by default, every 60 s) and
// each zone's decision policy, step or hpa (policy.go).
//
// The state survives a restart of the console: cooldowns run from the
// persisted last change, so a restarted console does not step again early.
//
// Writes are transactions: Commit writes zones and appends audit entries
// atomically, and an audit entry's ID is monotonic and never reused.
//
// Must not import: net/http, or any package of this module other than
// autoscaler (for its Decision type).
package store
