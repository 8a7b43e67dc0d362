package scenarios

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
)

// Profile is the settings of one run: the system's (scheduler, cooldowns,
// in-flight limit) and the load's (VUs, phase lengths). Durations are
// wall-clock. "published" is the settings of the published load test; "quick" is the same
// shape with every time scaled down by 10 so the five scenarios fit in a few
// minutes.
type Profile struct {
	Name string `json:"name"`

	// The system (Ramen 0.7.5's autoscaling notes ("How it decides", "Load tests").
	SchedulerInterval time.Duration `json:"scheduler_interval"` // auto-rebalance every 20 s in the load test
	UpCooldown        time.Duration `json:"up_cooldown"`        // RAMEN_AUTOSCALE_UP_COOLDOWN_SECS, 30 s
	DownCooldown      time.Duration `json:"down_cooldown"`      // RAMEN_AUTOSCALE_COOLDOWN_SECS, 120 s
	StartupGrace      time.Duration `json:"startup_grace"`      // starting workers are capacity, not down: 120 s
	TargetRPS         float64       `json:"target_rps"`         // RAMEN_AUTOSCALE_TARGET_RPS, 50 calls/s per worker
	MaxInflight       int           `json:"max_inflight"`       // RAMEN_MAX_INFLIGHT, 32
	WorkMS            int           `json:"work_ms"`            // how long one tools/call holds a worker
	BootDelay         time.Duration `json:"boot_delay"`         // a new worker turns ready this long after start
	ConsoleDrain      time.Duration `json:"console_drain"`      // Ramen 0.7.5: 40 s

	// The load (Ramen 0.7.5's autoscaling notes, "Load tests": 64 concurrent tools/call, max 3).
	VUs            int           `json:"vus"`
	Max            int           `json:"max"`
	ThinkTime      time.Duration `json:"think_time"`      // pause between a VU's iterations
	SampleInterval time.Duration `json:"sample_interval"` // count/max/ready sampled every 1 s
	ReadyzInterval time.Duration `json:"readyz_interval"` // console /readyz polled every 1 s
	ReadyzTimeout  time.Duration `json:"readyz_timeout"`  // 5 s
	MaxOneLoad     time.Duration `json:"max_one_load"`    // load length of "max 1 never scales"
	SustainHold    time.Duration `json:"sustain_hold"`    // load kept on after all max workers are ready
	Burst          time.Duration `json:"burst"`           // Ramen 0.7.5: a 45 s burst
	LoweredHold    time.Duration `json:"lowered_hold"`    // load kept on after max is lowered
	UpTimeout      time.Duration `json:"up_timeout"`      // longest wait for the count to reach max
	DownTimeout    time.Duration `json:"down_timeout"`    // longest wait for the count to come back to 1
	GracefulStop   time.Duration `json:"graceful_stop"`   // k6 gracefulStop for the load's end

	// A target run's (run --target; TargetQuick, TargetPublished; zero in
	// the console's profiles above). The autoscaler as deployed for the
	// run: the HPA controller's sync period (kube-controller-manager
	// --horizontal-pod-autoscaler-sync-period), the metric's resolution
	// (metrics-server --metric-resolution, or the trigger's polling
	// interval) and the scale-down stabilization window
	// (behavior.scaleDown.stabilizationWindowSeconds). They size the waits
	// and margins, never a verdict's bound.
	SyncPeriod       time.Duration `json:"sync_period,omitempty"`
	MetricResolution time.Duration `json:"metric_resolution,omitempty"`
	Stabilization    time.Duration `json:"stabilization,omitempty"`
	// CountHold is how long a count set by hand is watched when the
	// contract says it is kept; SettleTimeout the longest wait for the
	// count to settle at min before a target scenario (not judged).
	CountHold     time.Duration `json:"count_hold,omitempty"`
	SettleTimeout time.Duration `json:"settle_timeout,omitempty"`
	// SpikeScale scales the post's k6 stages (1: the post's 7 minutes of
	// load); SpikeVUScale multiplies the spike's VU targets (the post's
	// 5 → 50 → 100); 0 or 1 keeps them.
	SpikeScale   float64 `json:"spike_scale,omitempty"`
	SpikeVUScale float64 `json:"spike_vu_scale,omitempty"`
	// OutageHold is how long outage keeps a worker frozen on a target
	// (the console's profiles leave it 0: outageFreeze).
	OutageHold time.Duration `json:"outage_hold,omitempty"`
}

// Published is the published load test as run on the clouds.
func Published() Profile {
	return Profile{
		Name:              "published",
		SchedulerInterval: 20 * time.Second,
		UpCooldown:        30 * time.Second,
		DownCooldown:      120 * time.Second,
		StartupGrace:      120 * time.Second,
		TargetRPS:         50,
		MaxInflight:       32,
		WorkMS:            200,
		BootDelay:         5 * time.Second,
		ConsoleDrain:      40 * time.Second,
		VUs:               64,
		Max:               3,
		ThinkTime:         0,
		SampleInterval:    time.Second,
		ReadyzInterval:    time.Second,
		ReadyzTimeout:     5 * time.Second,
		MaxOneLoad:        120 * time.Second,
		SustainHold:       60 * time.Second,
		Burst:             45 * time.Second,
		LoweredHold:       30 * time.Second,
		UpTimeout:         10 * time.Minute,
		DownTimeout:       20 * time.Minute,
		GracefulStop:      30 * time.Second,
	}
}

// Quick is Published with the system's and the load's times divided by 10
// (sampling and /readyz polling stay at 1 s, as do call lengths), so
// `make run` fits in a few minutes on 2 cores.
func Quick() Profile {
	p := Published()
	p.Name = "quick"
	for _, d := range []*time.Duration{&p.SchedulerInterval, &p.UpCooldown, &p.DownCooldown, &p.StartupGrace,
		&p.BootDelay, &p.ConsoleDrain, &p.MaxOneLoad, &p.SustainHold, &p.Burst, &p.LoweredHold,
		&p.UpTimeout, &p.DownTimeout, &p.GracefulStop} {
		*d /= 10
	}
	return p
}

// SelfTest is the profile of `scaleproof selftest`: quick's load on a
// faster clock, shaped so that each planted bug shows within a few
// seconds. The scheduler runs every 1 s; the up cooldown (4 s) outlasts the
// time from a zone's creation to its first round under load, so a step up
// that ignores it comes early; the down cooldown (6 s) is twice the three
// low rounds, so a step down that ignores it shows; and the sustained hold
// (6 s) outlasts the down cooldown, so the low rounds, not the cooldown,
// gate the first step down after the load. Sampling stays at 1 s.
func SelfTest() Profile {
	p := Quick()
	p.Name = "selftest"
	p.SchedulerInterval = time.Second
	p.UpCooldown = 4 * time.Second
	p.DownCooldown = 6 * time.Second
	p.StartupGrace = 8 * time.Second
	p.ConsoleDrain = time.Second
	p.MaxOneLoad = 5 * time.Second
	p.SustainHold = 6 * time.Second
	p.Burst = 4 * time.Second
	p.LoweredHold = 2 * time.Second
	p.UpTimeout = 20 * time.Second
	p.DownTimeout = 40 * time.Second
	p.GracefulStop = 2 * time.Second
	return p
}

// Profiles lists the named profiles.
func Profiles() map[string]Profile {
	return map[string]Profile{"published": Published(), "quick": Quick(), "selftest": SelfTest()}
}

// ProfileByName returns a named profile or an error listing the names.
func ProfileByName(name string) (Profile, error) {
	ps := Profiles()
	if p, ok := ps[name]; ok {
		return p, nil
	}
	names := make([]string, 0, len(ps))
	for n := range ps {
		names = append(names, n)
	}
	sort.Strings(names)
	return Profile{}, fmt.Errorf("unknown profile %q (have: %s)", name, strings.Join(names, ", "))
}

// Validate checks the profile for values no run can use.
func (p Profile) Validate() error {
	var errs []string
	if p.VUs < 1 {
		errs = append(errs, "vus must be >= 1")
	}
	if p.VUs > load.VULimit {
		errs = append(errs, fmt.Sprintf("vus must be <= %d (the load engine's limit)", load.VULimit))
	}
	if p.Max < 2 {
		errs = append(errs, "max must be >= 2 (the sustained scenario scales from 1 to max)")
	}
	if p.SchedulerInterval <= 0 || p.SampleInterval <= 0 || p.ReadyzInterval <= 0 {
		errs = append(errs, "scheduler, sample and readyz intervals must be > 0")
	}
	if p.MaxInflight < 1 || p.WorkMS < 0 {
		errs = append(errs, "max_inflight must be >= 1 and work_ms >= 0")
	}
	if p.UpTimeout <= 0 || p.DownTimeout <= 0 {
		errs = append(errs, "up and down timeouts must be > 0")
	}
	if len(errs) > 0 {
		return fmt.Errorf("profile %s: %s", p.Name, strings.Join(errs, "; "))
	}
	return nil
}

// Settings renders the profile as flat strings for the results file.
func (p Profile) Settings() map[string]string {
	return map[string]string{
		"scheduler_interval": p.SchedulerInterval.String(),
		"up_cooldown":        p.UpCooldown.String(),
		"down_cooldown":      p.DownCooldown.String(),
		"startup_grace":      p.StartupGrace.String(),
		"target_rps":         fmt.Sprint(p.TargetRPS),
		"max_inflight":       fmt.Sprint(p.MaxInflight),
		"work_ms":            fmt.Sprint(p.WorkMS),
		"boot_delay":         p.BootDelay.String(),
		"vus":                fmt.Sprint(p.VUs),
		"max":                fmt.Sprint(p.Max),
		"burst":              p.Burst.String(),
		"sample_interval":    p.SampleInterval.String(),
		"readyz_interval":    p.ReadyzInterval.String(),
		"readyz_timeout":     p.ReadyzTimeout.String(),
	}
}
