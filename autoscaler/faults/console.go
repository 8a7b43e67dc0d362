package faults

// The reference console's faults: each one a realistic bug in how it applies
// the step policy ("How it decides" and "Audit and logs" in Ramen 0.7.5's
// autoscaling notes). They live in the controller and the console API; the
// policy's own arithmetic (autoscaler.Step) stays faultless.

// Names of the console's faults.
const (
	IgnoreUpCooldown   = "ignore-up-cooldown"
	IgnoreDownCooldown = "ignore-down-cooldown"
	DropToOne          = "drop-to-one"
	PlusOneSteps       = "plus-one-steps"
	AuditHolds         = "audit-holds"
	LoweredMaxLazy     = "lowered-max-lazy"
	DownTooEarly       = "down-too-early"
	Linger             = "linger"
)

var consoleFaults = []Fault{
	{
		Name: IgnoreUpCooldown, Component: ComponentConsole,
		Rule:      "no step up within the up cooldown of the last change of the count",
		Doc:       "steps up as soon as a trigger fires, however recent the last change (the zone's creation included)",
		Scenarios: []string{"sustained"},
	},
	{
		Name: IgnoreDownCooldown, Component: ComponentConsole,
		Rule:      "no step down within the down cooldown of the last change of the count",
		Doc:       "steps down after the low rounds alone, however recent the last change",
		Scenarios: []string{"sustained"},
	},
	{
		Name: DropToOne, Component: ComponentConsole,
		Rule:      "every step down is exactly one worker",
		Doc:       "a step down goes straight from the count to 1",
		Scenarios: []string{"sustained"},
	},
	{
		Name: PlusOneSteps, Component: ComponentConsole,
		Rule:      "under load a step up goes straight to the proportional target, not +1",
		Doc:       "every step up adds one worker, whatever the load (the pre-0.7.5 behaviour)",
		Scenarios: []string{"sustained"},
	},
	{
		Name: AuditHolds, Component: ComponentConsole,
		Rule:      "holds are not audited",
		Doc:       "every hold is written to the audit log as workers.autoscale action:hold",
		Scenarios: []string{"max-1"},
	},
	{
		Name: LoweredMaxLazy, Component: ComponentConsole,
		Rule:      "a lowered max takes effect in the request itself",
		Doc:       "PUT max_count under the count only stores the max; the next scheduler round brings the count down",
		Scenarios: []string{"max-lowered"},
	},
	{
		Name: DownTooEarly, Component: ComponentConsole,
		Rule:      "no step down before 3 low rounds in a row",
		Doc:       "steps down after a single low round",
		Scenarios: []string{"sustained"},
	},
	{
		Name: Linger, Component: ComponentConsole,
		Rule:      "once a step down is allowed it comes within one scheduler interval",
		Doc:       "holds three more rounds each time a step down is allowed, so a zone lingers above its need",
		Scenarios: []string{"sustained"},
	},
}

func init() { Catalog = append(Catalog, consoleFaults...) }
