package api

// AutoscaleConfig is GET /api/v1/config/autoscale: the step policy's
// settings as the console runs them (Ramen 0.7.5's autoscaling notes, "How it decides"), read-only,
// so a harness can judge cooldowns and thresholds against the target's own
// configuration. Seconds may be fractional.
type AutoscaleConfig struct {
	Policy              string  `json:"policy"`                // "step"
	UpCooldownSeconds   float64 `json:"up_cooldown_seconds"`   // RAMEN_AUTOSCALE_UP_COOLDOWN_SECS
	DownCooldownSeconds float64 `json:"down_cooldown_seconds"` // RAMEN_AUTOSCALE_COOLDOWN_SECS
	TargetRPS           float64 `json:"target_rps"`            // RAMEN_AUTOSCALE_TARGET_RPS, calls/s per worker
	HighFraction        float64 `json:"high_fraction"`         // a ready worker over this share of its limit is high
	MeanUpFraction      float64 `json:"mean_up_fraction"`      // the zone's mean in-flight that triggers a step up
	LowFraction         float64 `json:"low_fraction"`          // a ready worker under this share is low
	LowRounds           int     `json:"low_rounds"`            // all-low rounds in a row before a step down
	StartupGraceSeconds float64 `json:"startup_grace_seconds"` // a new worker is starting, not down, this long
	IntervalSeconds     float64 `json:"interval_seconds"`      // the auto-rebalance scheduler's interval
	SchedulerEnabled    bool    `json:"scheduler_enabled"`     // the auto-rebalance scheduler is on
}
