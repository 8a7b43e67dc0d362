package main

import (
	"testing"

	"github.com/scaleproof/scaleproof/scenarios"
)

// The results file records the Prometheus a run used: on local the mode as
// given (auto, off or a URL), elsewhere the URL or "none" (auto and off mean
// nothing off local).
func TestSettingsPrometheus(t *testing.T) {
	for _, tc := range []struct{ platform, flag, want string }{
		{"local", "auto", "auto"},
		{"local", "off", "off"},
		{"local", "http://127.0.0.1:9090", "http://127.0.0.1:9090"},
		{"external", "auto", "none"},
		{"kind", "off", "none"},
		{"kubeconfig", "", "none"},
		{"external", "http://127.0.0.1:9090", "http://127.0.0.1:9090"},
	} {
		o := policyOpts{policy: scenarios.PolicyStep, prometheus: tc.flag}
		if got := o.settings(tc.platform, scenarios.Quick())["prometheus"]; got != tc.want {
			t.Errorf("%s --prometheus %q: recorded %q, want %q", tc.platform, tc.flag, got, tc.want)
		}
	}
}
