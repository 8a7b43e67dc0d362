package autoscaler

import "time"

// Action is what a decision does to a zone's worker count.
type Action string

// The actions a policy can decide. "up" and "down" change the count; "hold"
// keeps it (and is never audited, Ramen 0.7.5 "Audit and logs"). "set" is a
// forced change (max lowered, manual count) applied by the console, not by a
// policy.
const (
	ActionUp   Action = "up"
	ActionDown Action = "down"
	ActionHold Action = "hold"
	ActionSet  Action = "set"
)

// WorkerSample is one scrape of one worker of a zone, taken by the controller
// in one round.
//
// Reachable is false when the worker did not answer its /metrics within the
// scrape timeout (InFlight, Limit, CallsTotal are then meaningless). Ready is
// the worker's own readiness as reported (gauge or /readyz) and by discovery.
// Starting is true for a worker discovery lists as not ready whose creation is
// newer than the startup grace: it counts as capacity on
// its way, at zero in-flight, and is neither ready nor down.
//
// Canary is true for the zone's canary worker (another version, run beside
// the stable workers and not part of the count): it counts as capacity like
// any worker (Ramen 0.7.5: "The canary counts as capacity"), is down when it
// does not answer like any worker, and is never a scale-in victim.
type WorkerSample struct {
	ID         string    `json:"id"`
	Reachable  bool      `json:"reachable"`
	Ready      bool      `json:"ready"`
	Starting   bool      `json:"starting,omitempty"`
	Canary     bool      `json:"canary,omitempty"`
	InFlight   int       `json:"in_flight"`   // calls in flight now
	Limit      int       `json:"limit"`       // in-flight limit (RAMEN_MAX_INFLIGHT); <= 0 means down
	CallsTotal uint64    `json:"calls_total"` // monotonic counter of calls served since the worker started
	SampledAt  time.Time `json:"sampled_at"`  // when this sample was taken (controller clock)
	Created    time.Time `json:"created"`     // when the worker was created (discovery); breaks victim ties: newest first
	// Down says why the worker counts as down when the controller knows
	// more than "no answer" (a /metrics without the in-flight limit); the
	// decision's reason names it. Empty otherwise.
	Down string `json:"down,omitempty"`
}

// Observation is everything a policy sees of a zone in one round.
type Observation struct {
	Workers []WorkerSample `json:"workers"`
	// Missing is the number of workers the zone's count asks for that
	// discovery does not list yet. Within the startup grace after the last
	// change they count as starting; after it as down.
	Missing int `json:"missing,omitempty"`
}

// ZoneState is the per-zone state a policy carries between rounds. The
// controller persists Count, Max and LastChange; the rest is in memory.
type ZoneState struct {
	Count      int       `json:"count"`       // desired worker count (the scale target's replicas); a canary is not part of it
	Max        int       `json:"max_count"`   // upper bound, >= 1
	LastChange time.Time `json:"last_change"` // last change of Count for any reason (cooldowns run from it)
	LowStreak  int       `json:"low_streak"`  // consecutive all-low rounds (Ramen 0.7.5: DOWN after 3)
	// Prev holds each worker's previous sample, keyed by worker ID, so the
	// policy can work out calls per second (Ramen 0.7.5 "How it decides").
	Prev map[string]WorkerSample `json:"-"`
}

// Decision is a policy's verdict for one zone in one round.
type Decision struct {
	Action Action    `json:"action"`
	From   int       `json:"from"`
	To     int       `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// Victims names the workers a DOWN should remove, in order of preference
	// (fewest in flight first, ties: newest); never a canary. Empty for
	// other actions.
	Victims []string `json:"victims,omitempty"`
	// AtMaxUnderLoad is true when an UP was wanted but the zone already runs
	// at its max: the controller logs a warning (Ramen 0.7.5 "Audit and logs").
	AtMaxUnderLoad bool `json:"at_max_under_load,omitempty"`
}
