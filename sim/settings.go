package sim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// setting is one key a sweep or --set may change.
type setting struct {
	help string
	set  func(c *Config, v string) error
}

func durationSetting(help string, f func(c *Config) *time.Duration) setting {
	return setting{help: help + " (a duration: 30s, 2m)", set: func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		*f(c) = d
		return nil
	}}
}

func intSetting(help string, f func(c *Config) *int) setting {
	return setting{help: help + " (an integer)", set: func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		*f(c) = n
		return nil
	}}
}

func boolSetting(help string, f func(c *Config) *bool) setting {
	return setting{help: help + " (true or false)", set: func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		*f(c) = b
		return nil
	}}
}

func floatSetting(help string, f func(c *Config) *float64) setting {
	return setting{help: help + " (a number)", set: func(c *Config, v string) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return err
		}
		*f(c) = x
		return nil
	}}
}

// settings are the keys of Set: the step policy's, the scheduler's, the
// load's and the model's.
var settings = map[string]setting{
	"up_cooldown":       durationSetting("no step up within this of the last change", func(c *Config) *time.Duration { return &c.Step.UpCooldown }),
	"down_cooldown":     durationSetting("no step down within this of the last change", func(c *Config) *time.Duration { return &c.Step.DownCooldown }),
	"startup_grace":     durationSetting("a worker not ready yet counts as starting this long", func(c *Config) *time.Duration { return &c.Step.StartupGrace }),
	"target_rps":        floatSetting("calls per second per worker that trigger a step up", func(c *Config) *float64 { return &c.Step.TargetRPS }),
	"high_fraction":     floatSetting("a ready worker over this share of its limit is high", func(c *Config) *float64 { return &c.Step.HighFraction }),
	"mean_up_fraction":  floatSetting("a zone mean in-flight at or over this steps up", func(c *Config) *float64 { return &c.Step.MeanUpFraction }),
	"low_fraction":      floatSetting("a ready worker under this share of its limit is low", func(c *Config) *float64 { return &c.Step.LowFraction }),
	"low_rounds":        intSetting("all-low rounds in a row before a step down", func(c *Config) *int { return &c.Step.LowRounds }),
	"max_up_step":       intSetting("at most this many workers per step up (0: the proportional step)", func(c *Config) *int { return &c.Step.MaxUpStep }),
	"interval":          durationSetting("the scheduler's interval", func(c *Config) *time.Duration { return &c.Profile.SchedulerInterval }),
	"scheduler_phase":   durationSetting("the first scheduler pass, from the run's start (0: one interval)", func(c *Config) *time.Duration { return &c.SchedulerPhase }),
	"vus":               intSetting("VUs of the load", func(c *Config) *int { return &c.Profile.VUs }),
	"max":               intSetting("the zones' max_count", func(c *Config) *int { return &c.Profile.Max }),
	"burst":             durationSetting("the burst's length", func(c *Config) *time.Duration { return &c.Profile.Burst }),
	"sustain_hold":      durationSetting("load kept on after all max workers are ready", func(c *Config) *time.Duration { return &c.Profile.SustainHold }),
	"think_time":        durationSetting("a VU's pause between calls", func(c *Config) *time.Duration { return &c.Profile.ThinkTime }),
	"limit":             intSetting("each worker's in-flight limit", func(c *Config) *int { return &c.Model.Limit }),
	"service":           durationSetting("a call's service time (base)", func(c *Config) *time.Duration { return &c.Model.Service.Base }),
	"service_jitter":    durationSetting("mean of the exponential added to the service time", func(c *Config) *time.Duration { return &c.Model.Service.Jitter }),
	"boot_delay":        durationSetting("a listed worker turns ready after this (base)", func(c *Config) *time.Duration { return &c.Model.ReadyDelay.Base }),
	"boot_jitter":       durationSetting("mean of the exponential added to the boot delay", func(c *Config) *time.Duration { return &c.Model.ReadyDelay.Jitter }),
	"rtt":               durationSetting("network round trip of every call", func(c *Config) *time.Duration { return &c.Model.RTT }),
	"edge_lag":          durationSetting("the edge routes to a ready worker within this", func(c *Config) *time.Duration { return &c.Model.EdgeLag }),
	"retry_cap":         durationSetting("a VU waits min(Retry-After, this) after a 429 or 5xx (0: retries at once)", func(c *Config) *time.Duration { return &c.Model.RetryCap }),
	"pass_jitter":       durationSetting("a round reads the clock up to this after its tick (scrape time)", func(c *Config) *time.Duration { return &c.Model.PassJitter }),
	"node_delay":        durationSetting("a new node's provisioning time", func(c *Config) *time.Duration { return &c.Model.NodeDelay }),
	"pods_per_node":     intSetting("workers per node (0: no node model)", func(c *Config) *int { return &c.Model.PodsPerNode }),
	"client_rtt":        durationSetting("load generator to edge and back, every call (base; holds no worker)", func(c *Config) *time.Duration { return &c.Model.ClientRTT.Base }),
	"client_rtt_jitter": durationSetting("mean of the exponential added to the client round trip", func(c *Config) *time.Duration { return &c.Model.ClientRTT.Jitter }),
	"canary":            intSetting("pods serving beside the count, counted as capacity, never scaled", func(c *Config) *int { return &c.Model.Canary }),
	"retry_after":       durationSetting("the Retry-After of a worker's 429 and the edge's 503", func(c *Config) *time.Duration { return &c.Model.RetryAfter }),
	"one_zone":          boolSetting("the scenarios run in order on one zone, as Ramen's load test ran them (false: a fresh zone each)", func(c *Config) *bool { return &c.OneZone }),
	"seed":              {help: "the random seed (an integer >= 0)", set: func(c *Config, v string) error { n, err := strconv.ParseUint(v, 10, 64); c.Seed = n; return err }},
}

// SettingKeys lists the keys Set takes, sorted.
func SettingKeys() []string {
	return slices.Sorted(maps.Keys(settings))
}

// SettingHelp is one line per key.
func SettingHelp() string {
	var b strings.Builder
	for _, k := range SettingKeys() {
		fmt.Fprintf(&b, "  %-16s %s\n", k, settings[k].help)
	}
	return b.String()
}

// Set changes one setting by key (SettingKeys). An unknown key or a value
// that does not parse is an error naming the key; ranges are checked by
// Validate.
func (c *Config) Set(key, value string) error {
	s, ok := settings[key]
	if !ok {
		return fmt.Errorf("unknown setting %q (have: %s)", key, strings.Join(SettingKeys(), ", "))
	}
	if err := s.set(c, strings.TrimSpace(value)); err != nil {
		return fmt.Errorf("setting %s=%q: %v; want %s", key, value, err, settings[key].help)
	}
	return nil
}

// ParseAssignment splits "key=value".
func ParseAssignment(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return "", "", fmt.Errorf("%q: want key=value (keys: %s)", s, strings.Join(SettingKeys(), ", "))
	}
	return strings.TrimSpace(k), v, nil
}
