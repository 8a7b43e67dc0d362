package kubeconfig

import (
	"errors"
	"testing"
)

func TestCheckNodeHost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		host  string
		ports map[string]int
		want  string // the joined errors; "" for none
	}{
		{"loopback with ports", "127.0.0.1", map[string]int{"edge": 30080}, ""},
		{"other loopback", "127.0.0.2", nil, ""},
		{"not loopback", "10.0.0.5", map[string]int{"edge": 1},
			`node host "10.0.0.5": want a loopback address (127.0.0.0/8): load goes to loopback only`},
		{"a name", "localhost", nil,
			`node host "localhost": want a loopback address (127.0.0.0/8): load goes to loopback only`},
		{"no port", "127.0.0.1", map[string]int{"target": 0}, "target host port 0: want 1..65535 with a node host"},
		{"port too high", "127.0.0.1", map[string]int{"prometheus": 65536}, "prometheus host port 65536: want 1..65535 with a node host"},
		{"both", "::2", map[string]int{"console": -1},
			"node host \"::2\": want a loopback address (127.0.0.0/8): load goes to loopback only\nconsole host port -1: want 1..65535 with a node host"},
	} {
		errs := checkNodeHost(tc.host, tc.ports)
		if got := errors.Join(errs...); (got == nil) != (tc.want == "") || (got != nil && got.Error() != tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, got, tc.want)
		}
	}
}
