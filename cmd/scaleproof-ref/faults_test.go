package main

import (
	"strings"
	"testing"
)

func TestParseFaults(t *testing.T) {
	for _, tc := range []struct {
		v, component, want, err string
	}{
		{"", "worker", "", ""},
		{"no-drain", "worker", "no-drain", ""},
		{" edge-resend , ", "edge", "edge-resend", ""},
		{"scale-in-unreachable,ignore-rate", "console", "ignore-rate,scale-in-unreachable", ""},
		{"no-drain", "console", "", "a fault of the worker, not of the console"},
		{"nope", "edge", "", `unknown fault "nope"`},
	} {
		set, err := parseFaults(tc.v, tc.component)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q on the %s: err %v, want %q", tc.v, tc.component, err, tc.err)
			}
			continue
		}
		if err != nil || set.String() != tc.want {
			t.Errorf("%q on the %s: %q %v, want %q", tc.v, tc.component, set.String(), err, tc.want)
		}
	}
}
