package controller

import (
	"math"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
)

// hpaWithFaults applies the planted bugs of the hpa round (autoscaler/faults,
// hpa.go; only the self-test and tests switch them on) to the config a
// round decides with:
//
//   - hpa-ignore-stabilization: the scale-down stabilization window is read
//     as 0, so a lower recommendation is applied at once;
//   - hpa-ignore-tolerance: both directions' tolerance is read as 0, so any
//     ratio other than 1 scales;
//   - hpa-ignore-scale-up-limit: the scale-up rate policies are replaced by
//     one that allows any step, so a step up goes straight to the
//     recommendation (bounded by the max only).
//
// The spec the console shows stays as set: the bug is in the behaviour, not
// the settings. With neither on, cfg is returned unchanged.
func hpaWithFaults(cfg autoscaler.HPAConfig, fs faults.Set) autoscaler.HPAConfig {
	if fs.On(faults.HPAIgnoreStabilization) {
		cfg.ScaleDown.StabilizationWindow = 0
	}
	if fs.On(faults.HPAIgnoreTolerance) {
		cfg.ScaleUp.Tolerance, cfg.ScaleDown.Tolerance = 0, 0
	}
	if fs.On(faults.HPAIgnoreScaleUpLimit) {
		cfg.ScaleUp.Policies = []autoscaler.HPAScalingPolicy{{Type: autoscaler.HPAPodsPolicy, Value: math.MaxInt32 / 2, Period: time.Second}}
		cfg.ScaleUp.SelectPolicy = autoscaler.HPASelectMax
	}
	return cfg
}
