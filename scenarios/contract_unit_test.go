package scenarios

import (
	"errors"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// TestSelectContract: the default set stays the five of the published
// table; "contract" selects the contract scenarios, each also by name.
func TestSelectContract(t *testing.T) {
	def, err := Select(nil)
	if err != nil || len(def) != 5 {
		t.Fatalf("default set: %d scenarios, %v", len(def), err)
	}
	for _, s := range def {
		for _, c := range Contract() {
			if s.Name == c.Name {
				t.Errorf("%s is in the default set", s.Name)
			}
		}
	}
	got, err := Select([]string{ContractSet})
	if err != nil || len(got) != len(Contract()) {
		t.Fatalf("contract: %d scenarios, %v", len(got), err)
	}
	for _, c := range Contract() {
		one, err := Select([]string{c.Name})
		if err != nil || len(one) != 1 || one[0].Name != c.Name || one[0].Expected == nil || one[0].Run == nil {
			t.Errorf("select %s: %v %v", c.Name, one, err)
		}
		if d := c.Expected(Quick(), nil); d <= 0 || d > 2*c.Expected(Published(), nil) {
			t.Errorf("%s: expected %s on quick, %s on published", c.Name, d, c.Expected(Published(), nil))
		}
	}
}

// TestCatalogScenariosExist: every fault names a component that can carry
// it and scenarios the self-test can select by name.
func TestCatalogScenariosExist(t *testing.T) {
	for _, f := range faults.Catalog {
		switch f.Component {
		case "console", "edge", "worker":
		default:
			t.Errorf("%s: component %q", f.Name, f.Component)
		}
		if f.Rule == "" || f.Doc == "" || len(f.Scenarios) == 0 {
			t.Errorf("%s: rule %q doc %q scenarios %v", f.Name, f.Rule, f.Doc, f.Scenarios)
		}
		if _, err := Select(f.Scenarios); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
}

// TestSkipOnlyWhenNotOffered: a platform's refusal of a fault action is a
// skip with its reason; any other error stays an error.
func TestSkipOnlyWhenNotOffered(t *testing.T) {
	nf := platform.NoFaults{Platform: "external", Reason: "no access"}
	err := skip(nf.Freeze(t.Context(), "g", "z", "w"))
	var sk *skipError
	if !errors.As(err, &sk) || sk.reason != "platform external cannot freeze a worker: no access" {
		t.Errorf("not offered: %v", err)
	}
	other := errors.New("connection refused")
	if err := skip(other); err != other {
		t.Errorf("other error: %v", err)
	}
	s := &Scope{env: &Env{}}
	v := s.finish(&skipError{reason: "no access"})
	if v.Passed || v.Skipped != "no access" || v.Error != "" {
		t.Errorf("verdict: %+v", v)
	}
}

// TestStepOnly: the scenarios of the step policy's own rules skip on hpa zones.
func TestStepOnly(t *testing.T) {
	for _, p := range []string{"", PolicyStep} {
		if err := stepOnly(&Env{Policy: p}); err != nil {
			t.Errorf("policy %q: %v", p, err)
		}
	}
	var sk *skipError
	if err := stepOnly(&Env{Policy: PolicyHPA}); !errors.As(err, &sk) || !strings.Contains(sk.reason, "hpa policy") {
		t.Errorf("hpa: %v", err)
	}
}

// TestReasonsText: the no-5xx fact names what the 5xx said, the loads'
// counts of one reason added, the most frequent first, three at most.
func TestReasonsText(t *testing.T) {
	ec := func(err string, n int64) load.ErrorCount {
		return load.ErrorCount{Class: load.Class5xx, Err: err, N: n}
	}
	tests := []struct {
		name string
		in   []load.ErrorCount
		want string
	}{
		{name: "none", want: ""},
		{name: "one", in: []load.ErrorCount{ec("502 Bad Gateway: worker w-2 failed: EOF", 1)}, want: ": 502 Bad Gateway: worker w-2 failed: EOF ×1"},
		{name: "two loads, one reason", in: []load.ErrorCount{ec("503 Service Unavailable", 1), ec("502 Bad Gateway", 1), ec("503 Service Unavailable", 2)},
			want: ": 503 Service Unavailable ×3; 502 Bad Gateway ×1"},
		{name: "three at most", in: []load.ErrorCount{ec("a", 1), ec("b", 4), ec("c", 3), ec("d", 2), ec("e", 1)},
			want: ": b ×4; c ×3; d ×2; and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonsText(tt.in); got != tt.want {
				t.Errorf("reasonsText = %q, want %q", got, tt.want)
			}
		})
	}
}
