package faults

// The faults of an outage, a scale-in, a console restart, the rate path and
// a worker's back-pressure, each caught by one of the scenarios "outage",
// "scale-in-drain", "no-double-execution", "rate-path", "restart-cooldown"
// and "max-1".
//
// They join Catalog in init so this list and the one of the step rules can
// be kept apart; the self-test's order is Catalog's.
func init() { Catalog = append(Catalog, outageFaults...) }

// Names of the faults below, for the servers that carry them.
const (
	ScaleInUnreachable      = "scale-in-unreachable"
	NoDrain                 = "no-drain"
	EdgeResend              = "edge-resend"
	IgnoreRate              = "ignore-rate"
	DownUnderRate           = "down-under-rate"
	ForgetCooldownOnRestart = "forget-cooldown-on-restart"
	WorkerAdmitsOverLimit   = "worker-admits-over-limit"
)

var outageFaults = []Fault{
	{
		Name:      ScaleInUnreachable,
		Component: ComponentConsole,
		Rule:      "no step down while a worker of the zone is unreachable",
		Doc: "the controller takes a worker whose /metrics does not answer for a ready worker with nothing in " +
			"flight, so an outage looks like an idle zone and is scaled in",
		Scenarios: []string{"outage"},
	},
	{
		Name:      NoDrain,
		Component: ComponentWorker,
		Rule:      "a worker leaving the zone finishes the calls it has in flight",
		Doc:       "the worker exits at once on SIGTERM, cutting the calls it has in flight",
		Scenarios: []string{"scale-in-drain"},
	},
	{
		Name:      EdgeResend,
		Component: ComponentEdge,
		Rule:      "a call that reached a worker is never sent again",
		Doc: "the edge gives each worker 1 s to answer and sends the call again to another ready worker when " +
			"it does not, or when its connection fails after the call was sent (a per-try timeout with " +
			"retries on reset and timeout, applied to calls that are not idempotent)",
		Scenarios: []string{"no-double-execution"},
	},
	{
		Name:      IgnoreRate,
		Component: ComponentConsole,
		Rule:      "step up when the calls per second per worker reach the target rate",
		Doc:       "the controller decides on in-flight alone: the calls-per-second trigger never fires",
		Scenarios: []string{"rate-path"},
	},
	{
		Name:      DownUnderRate,
		Component: ComponentConsole,
		Rule:      "no step down when count − 1 workers could not carry the calls per second",
		Doc: "the controller's scale-in check looks at in-flight alone: a zone whose in-flight is low is " +
			"stepped down even when the workers left would each carry more than the target rate",
		Scenarios: []string{"rate-path"},
	},
	{
		Name:      ForgetCooldownOnRestart,
		Component: ComponentConsole,
		Rule:      "a console restarted in the middle of a cooldown still honours it",
		Doc:       "the console does not read the zones' last change times back on start, so a restart ends every cooldown",
		Scenarios: []string{"restart-cooldown"},
	}, {
		Name:      WorkerAdmitsOverLimit,
		Component: ComponentWorker,
		Rule:      "a worker holds at most its in-flight limit at once and refuses the rest with 429",
		Doc: "the worker's admission check is off by one (in flight > limit instead of >=): it holds one call " +
			"beyond its in-flight limit before it answers 429",
		Scenarios: []string{"max-1"},
	},
}
