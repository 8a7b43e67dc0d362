package reports

import "testing"

func TestPassFail(t *testing.T) {
	for _, tc := range []struct {
		ok   bool
		want string
	}{{true, "PASS"}, {false, "FAIL"}} {
		if got := PassFail(tc.ok); got != tc.want {
			t.Errorf("PassFail(%t) = %q, want %q", tc.ok, got, tc.want)
		}
	}
}

func TestVerdictStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    Verdict
		want string
	}{
		{"passed", Verdict{Passed: true}, "PASS"},
		{"failed", Verdict{}, "FAIL"},
		{"skipped", Verdict{Skipped: "not offered"}, "SKIP"},
		{"stopped while skipped", Verdict{Interrupted: true, Skipped: "x"}, "STOP"},
		{"stopped after passing", Verdict{Interrupted: true, Passed: true}, "STOP"},
	} {
		if got := tc.v.Status(); got != tc.want {
			t.Errorf("%s: Status() = %q, want %q", tc.name, got, tc.want)
		}
		if got := (ScenarioView{Verdict: &tc.v}).Status(); got != tc.want {
			t.Errorf("%s: ScenarioView.Status() = %q, want %q", tc.name, got, tc.want)
		}
	}
}
