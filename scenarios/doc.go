// Package scenarios holds the five load-test scenarios of Ramen 0.7.5's autoscaling notes, the runner
// that drives them against any platform's Endpoints, and their judgement.
//
// Each scenario reads top to bottom like the published sentence that names it
// ("a viewer refused, max 1 never scales, sustained load up to the max and
// back to 1, a 45 s burst, and the max lowered under load"): set up a zone,
// apply load with 64 VUs of MCP tools/call through the edge, watch the
// count and the console's /readyz, and check facts. Facts become the
// verdict; the run's table row comes from the verdicts (package reports).
//
// Imports: scenarios/load, scenarios/observe, scenarios/consoleclient,
// scenarios/target, scenarios/platform, reports. Must not import a platform
// implementation, nor autoscaler/ but its wire types (the system under test
// is reached only through its API, so an autoscaler that is not ours is
// tested the same way); internal/archtest checks it.
package scenarios
