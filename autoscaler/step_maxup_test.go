package autoscaler

import (
	"strings"
	"testing"
)

// TestStepMaxUpStep: MaxUpStep caps the proportional step; 0 leaves it.
// Two ready workers at their limit of 32 (mean 100 %, no rate yet): the
// proportional step asks ceil(2 × 100 % / 50 %) = 4.
func TestStepMaxUpStep(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxUpStep int
		maxCount  int
		want      Action
		wantTo    int
	}{
		{"uncapped: the proportional step", 0, 5, ActionUp, 4},
		{"one at a time", 1, 5, ActionUp, 3},
		{"cap above the step changes nothing", 5, 5, ActionUp, 4},
		{"cap and max: the lower wins", 3, 3, ActionUp, 3},
		{"negative is an invalid config: hold", -1, 5, ActionHold, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultStepConfig()
			cfg.MaxUpStep = tc.maxUpStep
			st := ZoneState{Count: 2, Max: tc.maxCount, LastChange: longAgo}
			obs := Observation{Workers: []WorkerSample{ready("a", 32, 32), ready("b", 32, 32)}}
			d, next := Step(cfg, st, obs, now)
			if d.Action != tc.want || d.To != tc.wantTo {
				t.Fatalf("decision %s to %d (%s), want %s to %d", d.Action, d.To, d.Reason, tc.want, tc.wantTo)
			}
			if d.Action == ActionUp && next.Count != tc.wantTo {
				t.Errorf("next count %d, want %d", next.Count, tc.wantTo)
			}
			if tc.maxUpStep < 0 && !strings.Contains(d.Reason, "MaxUpStep") {
				t.Errorf("reason %q does not name MaxUpStep", d.Reason)
			}
		})
	}
}
