package controller

import (
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
//     ratio other than 1 scales.
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
	return cfg
}
