package render

import (
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/reports"
)

// TestLatencyCaptionNamesTheModel: a closed-loop run's latency chart says
// closed-loop and never claims coordinated-omission correction; an open
// model's says it counts from the scheduled start.
func TestLatencyCaptionNamesTheModel(t *testing.T) {
	cases := []struct {
		settings map[string]string
		want     string
	}{
		{nil, "closed-loop"},
		{map[string]string{"load_model": reports.ModelClosed}, "closed-loop"},
		{map[string]string{"load_model": reports.ModelOpen}, "scheduled start"},
	}
	for _, tc := range cases {
		res := &reports.Results{Meta: reports.RunMeta{Settings: tc.settings}, Scenarios: []reports.ScenarioStart{{Scenario: "load"}},
			Seconds: []reports.Second{{Scenario: "load", T: 0, Calls: reports.Calls{OK: 3}, P50ms: 1, P95ms: 2, P99ms: 3}}}
		views := res.Views()
		charts, err := ScenarioCharts(views[0], 0)
		if err != nil {
			t.Fatal(err)
		}
		var caption string
		for _, c := range charts {
			if c.Kind == "latency" {
				caption = c.Caption
			}
		}
		if !strings.Contains(caption, tc.want) || strings.Contains(caption, "omission corrected") {
			t.Errorf("settings %v: latency caption %q, want it to say %q", tc.settings, caption, tc.want)
		}
	}
}
