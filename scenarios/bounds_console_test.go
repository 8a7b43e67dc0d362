package scenarios

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/console"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/store"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// boundsKeys are the run's keys against the in-process console.
var boundsKeys = platform.Keys{
	SuperAdmin: platform.Key{Name: "root", Key: "k-root-0123456789", Role: "super_admin"},
	GroupAdmin: platform.Key{Name: "ga", Key: "k-ga-0123456789", Role: "group_admin", Groups: []string{"g1"}},
	Viewer:     platform.Key{Name: "v", Key: "k-v-0123456789", Role: "viewer"},
	MCPUser:    platform.Key{Name: "m", Key: "k-m-0123456789", Role: "mcp_user"},
}

// boundsScope is a Scope against the reference console in this process
// (a fake fleet, a fresh store) with fs switched on.
func boundsScope(t *testing.T, fs faults.Set) *Scope {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clock := controllertest.NewClock(time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC))
	fl := controllertest.NewFleet(clock)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := autoscaler.DefaultStepConfig()
	c, err := controller.New(controller.Options{Store: st, Target: fl, Discovery: fl, Scraper: fl,
		Policy: controller.StepPolicy(cfg), StartupGrace: cfg.StartupGrace, Clock: clock, Logger: quiet, Faults: fs})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := console.ParseKeys([]byte(`{"keys":[
 {"name":"root","key":"k-root-0123456789","role":"super_admin"},
 {"name":"ga","key":"k-ga-0123456789","role":"group_admin","groups":["g1"]},
 {"name":"v","key":"k-v-0123456789","role":"viewer"},
 {"name":"m","key":"k-m-0123456789","role":"mcp_user"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := console.New(console.Options{Controller: c, Store: st, Keys: keys, Logger: quiet, Faults: fs,
		Pages: console.PagesOptions{Off: true}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cl := consoleclient.New(srv.URL, 5*time.Second)
	e := &Env{Endpoints: platform.Endpoints{ConsoleURL: srv.URL, Group: "g1", Keys: boundsKeys},
		Profile: Quick(), Console: cl, Log: quiet}
	return &Scope{Name: "viewer-refused", Zone: "z", Start: time.Now(), env: e}
}

// The probes, the audit's actors and the sibling zone against the reference
// console: every fact passes clean, and each fault of the bounds fails the
// fact that judges its rule.
func TestBoundsFactsAgainstTheReferenceConsole(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T, fs faults.Set) []string {
		s := boundsScope(t, fs)
		e := s.env
		one, three := 1, 3
		if st, err := e.Console.PutZone(ctx, s.admin(), "g1", s.Zone, consoleclient.Update{Count: &one, MaxCount: &three}); err != nil || st != 200 {
			t.Fatalf("create: %d %v", st, err)
		}
		if err := s.ensureSibling(ctx); err != nil {
			t.Fatal(err)
		}
		s.probeAdminReads(ctx, "viewer", e.Endpoints.Keys.Viewer.Key)
		s.probeAdminReads(ctx, "MCP user", e.Endpoints.Keys.MCPUser.Key)
		probeBounds(ctx, s)
		if st, err := s.lowerMax(ctx, 1); err != nil || st != 200 {
			t.Fatalf("lower the max: %d %v", st, err)
		}
		s.judgeSibling()
		entries, err := s.AuditTrail(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f := FactAuditActors(entries, s.auditActors())
		s.Check(f.Name, f.Passed, "%s", f.Detail)
		var failed []string
		for _, f := range s.facts {
			if !f.Passed {
				failed = append(failed, f.Name)
				t.Logf("%s: %s", f.Name, f.Detail)
			}
		}
		if len(s.facts) != 8 {
			t.Errorf("%d facts, want 8: %+v", len(s.facts), s.facts)
		}
		return failed
	}
	if failed := run(t, nil); len(failed) > 0 {
		t.Fatalf("clean: failed %q", failed)
	}
	for _, c := range []struct{ fault, fact string }{
		{faults.MaxLeaksToGroup, factSiblingUnmoved},
		{faults.CountAboveMaxAccepted, "an admin's count above the max (count 4, max 3) is refused with 422: nothing changed, error:invalid audited"},
		{faults.AuditForcedAsScheduler, factAuditActors},
		{faults.AuditReadableByViewer, "viewer gets 403 on every admin-only read (the audit log, the zone's audit, the zone's policy)"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			if failed := run(t, faults.Set{c.fault: true}); !slices.Contains(failed, c.fact) {
				t.Errorf("failed %q, want %q among them", failed, c.fact)
			}
		})
	}
}
