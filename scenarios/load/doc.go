// Package load is scaleproof's virtual-user (VU) load engine: closed-loop
// and open-model executors, MCP tools/call and plain HTTP calls, thresholds.
//
// # Model
//
// The engine mirrors the documented semantics of two k6 executors (k6 is only
// described here, none of its code is used):
//
//   - "constant-vus" (https://grafana.com/docs/k6/latest/using-k6/scenarios/executors/constant-vus/):
//     a fixed number of VUs loop over iterations for a fixed duration.
//   - "ramping-vus" (https://grafana.com/docs/k6/latest/using-k6/scenarios/executors/ramping-vus/):
//     the number of VUs starts at StartVUs and follows Stages; each stage
//     interpolates linearly from the previous target (StartVUs for the first
//     stage) to its own Target over its Duration. The VU count is the floor of
//     the interpolated value (see Profile.VUsAt). A zero-duration stage jumps.
//   - "gracefulRampDown" (same page): a VU removed by a ramp-down starts no new
//     iteration; an iteration it has in progress may run GracefulRampDown
//     longer, then its context is canceled and it is recorded as interrupted.
//   - "gracefulStop" (https://grafana.com/docs/k6/latest/using-k6/scenarios/concepts/graceful-stop/):
//     at the end of the profile no iteration starts; iterations in progress
//     may run GracefulStop longer, then they are interrupted.
//
// A VU is a goroutine that runs one Exec call per iteration, then pauses for
// ThinkTime (k6's sleep()) and, after a 429, for min(Retry-After, cap) before
// its next iteration. The engine follows Profile.VUsAt by computing the exact
// instants at which the target changes (no polling); VUs are numbered from 1
// like k6's __VU and removed highest number first. Iteration numbers are
// 0-based and unique within a run; MaxIterations bounds them.
//
// Latency is measured from the intended start of an iteration. For the
// closed-loop executors above that is the VU's activation or the end of its
// previous iteration plus the pause: a VU waits for each answer, so a target
// that stalls delays the next calls instead of showing in the percentiles.
// Closed-loop results are not corrected for coordinated omission and are
// labelled closed-loop in reports. The open-model executors
// (constant-arrival-rate, ramping-arrival-rate, see ArrivalProfile and
// RunArrival) start iterations on a schedule and measure from each
// scheduled start, so a stall shows.
//
// A 429 pauses the VU for min(Retry-After, cap) (WithRetryAfterCap, default
// 1 s) on top of ThinkTime; a 429 without Retry-After adds nothing. Like k6,
// a VU whose calls fail at once with no ThinkTime iterates as fast as they
// fail: the loop is bounded by the profile end and MaxIterations, and
// scenarios should set ThinkTime.
//
// # Results and metrics
//
// Every iteration produces exactly one Result with exactly one Class. Metrics
// (the recorder) aggregates them: totals per class, an HdrHistogram of
// latencies (interrupted results excluded), and per-second buckets relative
// to the run start (starts by intended start, completions and latencies by
// Start+Latency, VUs as the most alive in that second). Metrics can be merged
// (vegeta's lib is the model: Attacker/Result/Metrics) and read live with
// Snapshot (WithMetrics).
//
// WithResults streams each Result to a callback on one goroutine through a
// bounded queue: a VU never waits more than the queue wait (default 50 ms)
// for it; results that do not fit are dropped from the stream, never from
// the Metrics, and counted in Metrics.DroppedResults.
//
// # Distributed load
//
// A load may run as many shards at once (Kubernetes pods): ShardSpec is
// what every shard is given, Profile.Split and ArrivalProfile.Split its
// share (k6's execution segments: shares add up exactly), ShardResult what
// it sends back (counts, per-second buckets, HdrHistograms; framed for a
// pod's log by WriteShardResult), CollectShards each shard's fate (ok,
// idle, dead and why), MergeShards the one Metrics verdicts and thresholds
// read (counts exact, percentiles from merged histograms, seconds aligned by
// wall clock) and JudgeShards the check that every shard reported and the
// merge adds up.
//
// # Units
//
//   - Durations are time.Duration everywhere in the API.
//   - Histograms (Metrics.Histogram) hold microseconds, trackable from 1 µs to
//     10 min with 3 significant figures; latencies outside are clamped.
//     Per-second histograms use 2 significant figures (±1%) to keep memory at
//     ~25 KB per second of run.
//   - Per-second bucket n covers [start+n s, start+(n+1) s) of the run clock.
//   - Retry-After is parsed from delta-seconds or an HTTP date.
//
// # Clock
//
// All waits go through the Clock interface (real clock by default) so tests
// can run on a fake or time-scaled clock.
//
// # Imports
//
// This package must not import other packages of this module: scenarios use
// it, reports render its Metrics, it depends on neither.
package load
