package scenarios

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/reports"
)

// TestRunOneRunsTheFlow: a platform run runs a scenario's Flow on the
// console's Scope, then OnPlatform, and the verdict is what they judged;
// the simulator runs the same Flow on its model (sim's
// TestSimRunsTheCatalogueFlow), so a bound changed in a Flow moves both
// verdicts. Where the Flow fails, OnPlatform is not run.
func TestRunOneRunsTheFlow(t *testing.T) {
	for _, tc := range []struct {
		name       string
		flowOK     bool
		flowErr    error
		wantFacts  []string
		wantPassed bool
		wantErr    string
	}{
		{"both judged", true, nil, []string{"from the flow", "from the platform"}, true, ""},
		{"a failed fact in the flow", false, nil, []string{"from the flow", "from the platform"}, false, ""},
		{"an error in the flow stops it", true, errors.New("zone lost"), []string{"from the flow"}, false, "zone lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Env{Profile: Quick(), Log: slog.New(slog.DiscardHandler)}
			var world World
			sc := Scenario{Name: "planted",
				Flow: func(_ context.Context, w World) error {
					world = w
					w.Check("from the flow", tc.flowOK, "the flow's bound")
					return tc.flowErr
				},
				OnPlatform: func(_ context.Context, _ *Env, s *Scope) error {
					s.Check("from the platform", true, "")
					return nil
				}}
			v := e.RunOne(context.Background(), sc)
			if _, ok := world.(*Scope); !ok {
				t.Fatalf("the flow ran on %T, want the console's *Scope", world)
			}
			var names []string
			for _, f := range v.Facts {
				names = append(names, f.Name)
			}
			if v.Passed != tc.wantPassed || v.Error != tc.wantErr || !slices.Equal(names, tc.wantFacts) {
				t.Errorf("passed %v, error %q, facts %v; want %v, %q, %v", v.Passed, v.Error, names, tc.wantPassed, tc.wantErr, tc.wantFacts)
			}
			if got := reports.FactsPass(v.Facts); tc.wantErr == "" && got != tc.wantPassed {
				t.Errorf("FactsPass %v, verdict %v", got, v.Passed)
			}
		})
	}
}

// TestSpikeNeedsPrometheus: a platform run of spike without a Prometheus
// fails before its zone is made (the env has no console to make one on).
func TestSpikeNeedsPrometheus(t *testing.T) {
	e := &Env{Profile: Quick(), Log: slog.New(slog.DiscardHandler)}
	v := e.RunOne(context.Background(), Spike())
	if v.Passed || !strings.Contains(v.Error, "spike needs a Prometheus") || len(v.Facts) != 0 {
		t.Errorf("passed %v, error %q, facts %v; want the Prometheus error and nothing judged", v.Passed, v.Error, v.Facts)
	}
}
