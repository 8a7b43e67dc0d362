package main

import (
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// The line that says where to watch a run names the pages' address always,
// and the viewer key only on a terminal: off one, stderr is a CI log that
// may be published while the key still works.
func TestConsolePagesLine(t *testing.T) {
	ep := platform.Endpoints{ConsoleURL: "http://127.0.0.1:40681/", Keys: platform.Keys{Viewer: platform.Key{Key: "vw_secret", Role: "viewer"}}}
	for _, tc := range []struct {
		name    string
		onTTY   bool
		withKey bool
	}{
		{"terminal", true, true},
		{"log", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := consolePagesLine(ep, tc.onTTY)
			if !strings.Contains(line, "http://127.0.0.1:40681/ui/") {
				t.Errorf("no pages address in %q", line)
			}
			if got := strings.Contains(line, "vw_secret"); got != tc.withKey {
				t.Errorf("key printed = %v, want %v: %q", got, tc.withKey, line)
			}
		})
	}
}
