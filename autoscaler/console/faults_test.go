package console_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/console"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
)

// The audit-readable-by-viewer fault opens GET /api/v1/audit to a viewer
// key, and to no one else: clean, a viewer and an MCP user get 403.
func TestAuditReadableByViewerFault(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name        string
		fs          faults.Set
		viewer, mcp int
	}{
		{"clean", nil, 403, 403},
		{faults.AuditReadableByViewer, faults.Set{faults.AuditReadableByViewer: true}, 200, 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRigWith(t, quiet, func(o *console.Options, _ *controllertest.Clock) { o.Faults = c.fs })
			for _, q := range []string{"/api/v1/audit", "/api/v1/audit?group=g1&zone=a"} {
				if code, _ := r.do(t, "v", "GET", q, ""); code != c.viewer {
					t.Errorf("viewer GET %s: %d, want %d", q, code, c.viewer)
				}
				if code, _ := r.do(t, "m", "GET", q, ""); code != c.mcp {
					t.Errorf("MCP user GET %s: %d, want %d", q, code, c.mcp)
				}
			}
		})
	}
}
