package store

// Backend is the state the controller and the console keep: zones (count,
// max, last change, last decision), their policies, the audit log and the
// scheduler's configuration. *Store (one bbolt file, for the local
// platform) implements it; on Kubernetes autoscaler/controller/kube's
// ConfigMapStore does, so two console pods share one state.
//
// Every write is all-or-nothing. A Backend that other processes also write
// may fail a write that is based on an outdated zone with an error wrapping
// ErrConflict; the caller then re-reads (controller.Resync) and retries.
type Backend interface {
	// Ready returns nil while the state can be read (for /readyz).
	Ready() error
	// Zones lists every zone, sorted by group then zone.
	Zones() ([]Zone, error)
	// Commit writes zones and appends audit entries in one step and returns
	// the entries with their IDs.
	Commit(zones []Zone, audits []AuditEntry) ([]AuditEntry, error)
	// AppendAudit appends one entry and returns it with its ID.
	AppendAudit(e AuditEntry) (AuditEntry, error)
	// SetLastDecisions records zones' last decisions; a zone that does not
	// exist is skipped and an older decision never overwrites a newer one.
	SetLastDecisions(ds []ZoneDecision) error
	// Audit returns the entries matching q, newest first.
	Audit(q AuditQuery) ([]AuditEntry, error)
	// AutoRebalance reads the scheduler configuration (off, 60 s by default).
	AutoRebalance() (AutoRebalance, error)
	// SetAutoRebalance writes it and appends audits in one step.
	SetAutoRebalance(c AutoRebalance, audits ...AuditEntry) ([]AuditEntry, error)
	// Policies lists every zone's stored policy, sorted by group then zone.
	Policies() ([]ZonePolicy, error)
	// CommitPolicies writes policies and zones and appends audits in one step.
	CommitPolicies(policies []ZonePolicy, zones []Zone, audits []AuditEntry) ([]AuditEntry, error)
}

var _ Backend = (*Store)(nil)
