package main

import (
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
)

// The progress line shows the calls so far; while sharded loads run (their
// calls come when they end) it says so instead of a row of zeros.
func TestStatusLineCalls(t *testing.T) {
	calls := reports.Calls{OK: 1200, TooMany: 30}
	for _, tc := range []struct {
		name string
		st   scenarios.Status
		want string
	}{
		{"local", scenarios.Status{VUs: 64, Calls: calls}, "ok 1 200 429 30 5xx 0"},
		{"local, nothing yet", scenarios.Status{VUs: 64}, "ok 0 429 0 5xx 0"},
		{"sharded, running", scenarios.Status{VUs: 64, Shards: 3}, "calls: from the 3 shards when the load ends"},
		{"sharded, merged", scenarios.Status{VUs: 0, Shards: 3, Calls: calls}, "ok 1 200 429 30 5xx 0"},
		{"sharded, idle", scenarios.Status{Shards: 3}, "ok 0 429 0 5xx 0"},
	} {
		if got := statusLine(tc.st, time.Second); !strings.HasSuffix(got, tc.want) {
			t.Errorf("%s: %q, want it to end with %q", tc.name, got, tc.want)
		}
	}
}
