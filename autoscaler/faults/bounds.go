package faults

// The faults of the bounds and of the audit log's actors and readers ("The
// bounds" and "Audit and logs" in Ramen 0.7.5's autoscaling notes), each
// caught by a fact of "viewer-refused" or "max-lowered": the zone-isolation
// fact over a sibling zone of the same group, the bounds probes, the audit's
// actors, the admin-only reads and the roles on every mutating route; and
// one caught by "restart-keeps-changes": a change lost across a restart.
func init() { Catalog = append(Catalog, boundsFaults...) }

// Names of the faults below, for the console that carries them.
const (
	MaxLeaksToGroup        = "max-leaks-to-group"
	CountAboveMaxAccepted  = "count-above-max-accepted"
	AuditForcedAsScheduler = "audit-forced-as-scheduler"
	AuditReadableByViewer  = "audit-readable-by-viewer"
	ViewerMayRebalance     = "viewer-may-rebalance"
	MaxAloneNotPersisted   = "max-alone-not-persisted"
)

var boundsFaults = []Fault{
	{
		Name: MaxLeaksToGroup, Component: ComponentConsole,
		Rule: "a max set on one zone leaves the group's other zones alone",
		Doc: "PUT max_count on an existing zone also writes the new max to every other zone of its group " +
			"(not audited there: the bug stores the group's zones with the new max)",
		Scenarios: []string{"max-lowered"},
	},
	{
		Name: CountAboveMaxAccepted, Component: ComponentConsole,
		Rule:      "a count outside 1..max is refused (422)",
		Doc:       "a manual count above the max is accepted and applied instead of refused with 422",
		Scenarios: []string{"viewer-refused"},
	},
	{
		Name: AuditForcedAsScheduler, Component: ComponentConsole,
		Rule: "every audit entry names the actor that caused it",
		Doc: "the workers.count entry of a forced change (the zone's creation, a manual count, a lowered max) " +
			"names the scheduler as its actor instead of the API key that made it",
		Scenarios: []string{"viewer-refused"},
	},
	{
		Name: AuditReadableByViewer, Component: ComponentConsole,
		Rule:      "the audit log is for super admins and group admins: a viewer's read is 403",
		Doc:       "GET /api/v1/audit answers a viewer key with every entry instead of 403",
		Scenarios: []string{"viewer-refused"},
	}, {
		Name: ViewerMayRebalance, Component: ComponentConsole,
		Rule: "only a super admin or a group admin may change a zone: every other key gets 403 on every mutating route",
		Doc: "POST …/rebalance skips its role check: a viewer or an MCP user triggers a decision round, " +
			"and the attempt is not audited as refused",
		Scenarios: []string{"viewer-refused"},
	}, {
		Name: MaxAloneNotPersisted, Component: ComponentConsole,
		Rule: "every accepted change survives a console restart",
		Doc: "a change of the max alone is applied in memory and audited but the store keeps the old max, " +
			"so a restarted console brings the old max back",
		Scenarios: []string{"restart-keeps-changes"},
	},
}
