// Package sim is scaleproof's discrete-event simulator: the five scenarios
// of the load test (and the spike scenario) in virtual time, against a
// model of the workers, the edge and the platform, with the real policy and
// controller round code deciding.
//
// # What is real and what is modelled
//
// Real: the step and hpa policies (package autoscaler) and the controller's
// rounds and scheduler passes (package autoscaler/controller), driven
// through the controller's own Clock, ScaleTarget, Discovery, Scraper and
// MetricSource interfaces; the load's profiles (scenarios/load Profile,
// VUsAt, its stages) and the harness's profiles (scenarios.Profile).
//
// Modelled (Model): each worker admits calls up to its in-flight limit and
// answers 429 (Retry-After 1 s) beyond it; a call holds a worker for a
// service time drawn from Model.Service; a new worker turns ready in
// discovery Model.ReadyDelay after the scale decision (after a node is
// provisioned, Model.NodeDelay, when no node has a free slot) and the edge
// routes to it up to Model.EdgeLag later; the edge sends each call to the
// routable worker with the fewest calls in flight, ties round-robin, and
// answers 503 (Retry-After 1 s) when none is routable. VUs are closed-loop
// as in the load engine: each runs one call at a time, then pauses for the
// think time and, after a 429 or 5xx, for min(Retry-After, 1 s). The hpa
// signal is the edge's in-flight calls observed at each call's start and
// end, as a 0.75 quantile over the summary's window, scraped and read with
// max_over_time like the local platform's Prometheus (signal.go). Each
// scheduler pass reads the clock up to Model.PassJitter after its tick, as
// a round reads it after discovery and scrapes. For cloud runs: a load
// generator far from the cluster (Model.ClientRTT, which delays every call
// and holds no worker), canary pods that serve beside the count
// (Model.Canary), and the scenarios run in order on one zone made before
// the run (Config.OneZone), as Ramen's load test ran them; PublishedCloud
// sets them for GKE, EKS and AKS.
//
// # Time and randomness
//
// Everything runs on one virtual clock: events (a VU's call, a call's end,
// a zone sample, a scheduler pass, a scenario's next step) run in time
// order, ties in the order they were scheduled. Every draw comes from a
// seeded PCG, one stream per zone, so the same Config and seed give the same
// results, byte for byte, whatever the controller's concurrency.
//
// Must not import: net/http (the sim sends no traffic), the platforms.
package sim
