package faults

// The faults of routing: where the edge sends a call. Each is caught by the
// contract scenario "readiness-routing".
func init() { Catalog = append(Catalog, routingFaults...) }

// Names of the faults below, for the servers that carry them.
const (
	EdgeRouteUnready = "edge-route-unready"
)

var routingFaults = []Fault{
	{
		Name:      EdgeRouteUnready,
		Component: ComponentEdge,
		Rule:      "no call is sent to a worker that is not ready",
		Doc: "the edge routes to every worker discovery lists, ready or not (an endpoint's ready condition " +
			"ignored): a booting worker, and one whose readiness fails while it is draining or overloaded, " +
			"keep getting new calls",
		Scenarios: []string{"readiness-routing"},
	},
}
