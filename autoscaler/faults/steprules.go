package faults

// The faults of the step policy's own rules that only a load built for them
// shows: a low streak interrupted by one round that is not low, and a load
// spread unevenly over the workers. Each is caught by one of the scenarios
// "low-streak-reset" and "uneven-load", and one in what the policy reads
// (the canary left out), which only the step-round oracle sees. They live
// in the console's
// controller (autoscaler/controller), never in autoscaler.Step.
func init() { Catalog = append(Catalog, stepRuleFaults...) }

// Names of the faults below.
const (
	StreakNotReset    = "streak-not-reset"
	BusiestWorker     = "busiest-worker"
	CanaryNotCapacity = "canary-not-capacity"
)

var stepRuleFaults = []Fault{
	{
		Name:      StreakNotReset,
		Component: ComponentConsole,
		Rule:      "no step down until 3 new low rounds after a round that is not low",
		Doc: "the controller counts the low rounds but does not reset the count when a round is not low " +
			"(only a change of the count resets it), so low rounds before a busy round still count after it",
		Scenarios: []string{"low-streak-reset"},
	},
	{
		Name:      BusiestWorker,
		Component: ComponentConsole,
		Rule:      "the mean trigger scales up on the zone's mean in-flight, not on one busy worker",
		Doc: "the controller's mean trigger reads the busiest ready worker's in-flight share instead of the " +
			"zone's mean, so one worker at 50 % of its limit scales the zone up while the others are idle",
		Scenarios: []string{"uneven-load"},
	},
	{
		Name:      CanaryNotCapacity,
		Component: ComponentConsole,
		Rule:      "the canary counts as capacity: each round reads every listed worker, the canary included",
		Doc: "the controller leaves the canary out of what the step policy reads (its sample and the policy's " +
			"memory of it): the mean in-flight and the calls per second per worker are taken over the stable " +
			"workers only, and the proportional step does not count the canary; the count still reaches 3 and " +
			"comes back to 1, so only a judge of each round sees it",
		Scenarios: []string{"sustained"},
		Canary:    true,
	},
}
