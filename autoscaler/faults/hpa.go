package faults

// The faults of the hpa policy: each one a realistic bug in how a console
// applies the upstream HorizontalPodAutoscaler's behaviour (Kubernetes'
// "Horizontal Pod Autoscaling" docs: the stabilization window, the
// tolerance and the scaling policies). They live in the controller's hpa round; the policy's own
// arithmetic (autoscaler.HPA) stays faultless. The self-test runs them on
// zones created with --policy hpa (Fault.Policy), with Prometheus.

func init() { Catalog = append(Catalog, hpaFaults...) }

// Names of the hpa faults.
const (
	HPAIgnoreStabilization = "hpa-ignore-stabilization"
	HPAIgnoreTolerance     = "hpa-ignore-tolerance"
	HPAIgnoreScaleUpLimit  = "hpa-ignore-scale-up-limit"
)

var hpaFaults = []Fault{
	{
		Name: HPAIgnoreStabilization, Component: ComponentConsole, Policy: PolicyHPA,
		Rule: "no scale-down before the stabilization window has held the recommendation " +
			"(the highest recommendation of the window wins)",
		Doc:       "an hpa zone applies a lower recommendation at once: the scale-down stabilization window is read as 0",
		Scenarios: []string{"spike"},
	},
	{
		Name: HPAIgnoreTolerance, Component: ComponentConsole, Policy: PolicyHPA,
		Rule:      "a ratio within the tolerance (0.1) of 1 never scales",
		Doc:       "an hpa zone scales on any ratio other than 1: the tolerance of both directions is read as 0",
		Scenarios: []string{"near-threshold"},
	},
	{
		Name: HPAIgnoreScaleUpLimit, Component: ComponentConsole, Policy: PolicyHPA,
		Rule: "a step up stays within the behaviour's scale-up rate policies " +
			"(at most max(count + 4, 2 × count) per period by default)",
		Doc:       "an hpa zone goes straight to the recommendation: the scale-up rate policies are not applied",
		Scenarios: []string{"scale-up-limit"},
	},
}
