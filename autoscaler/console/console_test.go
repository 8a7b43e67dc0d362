package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/console"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)

const keysJSON = `{"keys":[
 {"name":"root","key":"k-root-0123456789","role":"super_admin"},
 {"name":"ga","key":"k-ga-0123456789","role":"group_admin","groups":["g1"]},
 {"name":"gb","key":"k-gb-0123456789","role":"group_admin","groups":["g2"]},
 {"name":"v","key":"k-v-0123456789","role":"viewer"},
 {"name":"m","key":"k-m-0123456789","role":"mcp_user"}]}`

// Callers of the matrix: a key name from keysJSON, "unknown" (a key nobody
// has) or "none" (no Authorization header).
var keyOf = map[string]string{
	"root": "k-root-0123456789", "ga": "k-ga-0123456789", "gb": "k-gb-0123456789",
	"v": "k-v-0123456789", "m": "k-m-0123456789", "unknown": "k-nobody-0123456789",
}

type rig struct {
	store  *store.Store
	clock  *controllertest.Clock
	fleet  *controllertest.Fleet
	c      *controller.Controller
	health *serve.Health
	h      http.Handler
}

func newRig(t testing.TB) *rig {
	t.Helper()
	return newRigWith(t, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
}

// newRigWith is a console over a fresh store and a fake fleet on the rig's
// clock, its controller and handler logging to log, with zone g1/a at count
// 1, max 3; opts, when not nil, amends the console's options before New
// (clock is the rig's).
func newRigWith(t testing.TB, log *slog.Logger, opts func(o *console.Options, clock *controllertest.Clock)) *rig {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clock := controllertest.NewClock(t0)
	fl := controllertest.NewFleet(clock)
	cfg := autoscaler.DefaultStepConfig()
	c, err := controller.New(controller.Options{Store: st, Target: fl, Discovery: fl, Scraper: fl,
		Policy: controller.StepPolicy(cfg), StartupGrace: cfg.StartupGrace, Clock: clock, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := console.ParseKeys([]byte(keysJSON))
	if err != nil {
		t.Fatal(err)
	}
	health := &serve.Health{}
	o := console.Options{Controller: c, Store: st, Keys: keys, Health: health, Logger: log}
	if opts != nil {
		opts(&o, clock)
	}
	h, err := console.New(o)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{store: st, clock: clock, fleet: fl, c: c, health: health, h: h}
	one, three := 1, 3
	if _, err := c.Apply(context.Background(), "root", "g1", "a", controller.Change{Count: &one, MaxCount: &three}); err != nil {
		t.Fatal(err)
	}
	return r
}

// do runs one request against the handler.
func (r *rig) do(t testing.TB, caller, method, path, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if k, ok := keyOf[caller]; ok {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	var m map[string]any
	if ct := rec.Header().Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatalf("%s %s: body %q is not JSON: %v", method, path, rec.Body.String(), err)
		}
	}
	return rec.Code, m
}

func (r *rig) lastAudit(t testing.TB) store.AuditEntry {
	t.Helper()
	es, err := r.store.Audit(store.AuditQuery{Limit: 1})
	if err != nil || len(es) == 0 {
		t.Fatalf("audit: %v, %d entries", err, len(es))
	}
	return es[0]
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

const workers = "/api/v1/groups/g1/zones/a/workers"

var (
	fullKeys  = []string{"count", "group", "last_change", "last_decision", "last_scale", "max_count", "ready", "starting", "workers", "zone"}
	countKeys = []string{"count", "group", "zone"}
)

// TestRoleMatrix is every role against every endpoint.
func TestRoleMatrix(t *testing.T) {
	type endpoint struct {
		name, method, path, body string
		audit                    string // the audit action of a refused change; "" for reads
	}
	eps := []endpoint{
		{"GET workers", "GET", workers, "", ""},
		{"PUT max", "PUT", workers, `{"max_count": 3}`, controller.AuditMaxCount},
		{"PUT count", "PUT", workers, `{"count": 1}`, controller.AuditCount},
		{"POST rebalance", "POST", "/api/v1/groups/g1/zones/a/rebalance", "", controller.AuditRebalance},
		{"GET autorebalance", "GET", "/api/v1/config/autorebalance", "", ""},
		{"PUT autorebalance", "PUT", "/api/v1/config/autorebalance", `{"enabled": false, "interval_seconds": 60}`, controller.AuditAutoRebalance},
		{"GET audit", "GET", "/api/v1/audit", "", ""},
	}
	callers := []string{"root", "ga", "gb", "v", "m", "unknown", "none"}
	// want[caller] lists the status per endpoint, in the order of eps.
	want := map[string][]int{
		"root":    {200, 200, 200, 200, 200, 200, 200},
		"ga":      {200, 200, 200, 200, 200, 403, 200},
		"gb":      {200, 403, 403, 403, 200, 403, 200},
		"v":       {200, 403, 403, 403, 200, 403, 403},
		"m":       {200, 403, 403, 403, 200, 403, 403},
		"unknown": {401, 401, 401, 401, 401, 401, 401},
		"none":    {401, 401, 401, 401, 401, 401, 401},
	}
	r := newRig(t)
	srv := httptest.NewServer(r.h)
	defer srv.Close()
	cl := srv.Client()
	for _, caller := range callers {
		for i, ep := range eps {
			t.Run(caller+"/"+ep.name, func(t *testing.T) {
				before, _ := r.store.Audit(store.AuditQuery{Limit: 1})
				req, err := http.NewRequest(ep.method, srv.URL+ep.path, strings.NewReader(ep.body))
				if err != nil {
					t.Fatal(err)
				}
				if k, ok := keyOf[caller]; ok {
					req.Header.Set("Authorization", "Bearer "+k)
				}
				resp, err := cl.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want[caller][i] {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, want[caller][i], b)
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatalf("body %q: %v", b, err)
				}
				if resp.StatusCode >= 400 {
					if s, _ := m["error"].(string); s == "" {
						t.Fatalf("error body %s", b)
					}
				}
				switch {
				case resp.StatusCode == 403 && ep.audit != "":
					e := r.lastAudit(t)
					if e.Actor != caller || e.Action != ep.audit || e.Tags["error"] != "forbidden" || e.Error != "forbidden" {
						t.Fatalf("refused attempt audited as %+v, want %s by %s with error:forbidden", e, ep.audit, caller)
					}
				case resp.StatusCode != 200 || ep.audit == "":
					// A read or a 401 adds nothing to the audit log.
					after, _ := r.store.Audit(store.AuditQuery{Limit: 1})
					if len(after) > 0 && (len(before) == 0 || after[0].ID != before[0].ID) {
						t.Fatalf("audit grew on %s by %s: %+v", ep.name, caller, after[0])
					}
				}
				if ep.name == "GET workers" && resp.StatusCode == 200 {
					wantKeys := countKeys
					if caller == "root" || caller == "ga" {
						wantKeys = fullKeys
					}
					if got := keys(m); !slices.Equal(got, wantKeys) {
						t.Fatalf("fields %v, want %v", got, wantKeys)
					}
				}
			})
		}
	}
}

func TestGetWorkersShape(t *testing.T) {
	r := newRig(t)
	r.clock.Advance(time.Minute)
	code, m := r.do(t, "ga", "POST", "/api/v1/groups/g1/zones/a/rebalance", "")
	if code != 200 || m["action"] != "hold" {
		t.Fatalf("rebalance: %d %v", code, m)
	}
	code, m = r.do(t, "ga", "GET", workers, "")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	ld, _ := m["last_decision"].(map[string]any)
	if m["group"] != "g1" || m["zone"] != "a" || m["count"] != 1.0 || m["max_count"] != 3.0 || m["ready"] != 1.0 ||
		m["starting"] != 0.0 || ld["action"] != "hold" || ld["reason"] == "" || m["last_change"] != t0.Format(time.RFC3339) {
		t.Fatalf("view %v", m)
	}
	if got := keys(ld); !slices.Equal(got, []string{"action", "at", "from", "reason", "to"}) {
		t.Fatalf("last_decision fields %v", got)
	}
	if e := r.lastAudit(t); e.Action != controller.AuditRebalance || e.Actor != "ga" {
		t.Fatalf("rebalance audit %+v", e)
	}
	if code, m := r.do(t, "v", "GET", workers, ""); code != 200 || m["count"] != 1.0 || len(m) != 3 {
		t.Fatalf("viewer: %d %v", code, m)
	}
}

func TestBadRequests(t *testing.T) {
	r := newRig(t)
	big := `{"count": 1` + strings.Repeat(" ", console.MaxBody) + `}`
	for _, tc := range []struct {
		name, caller, method, path, body string
		want                             int
	}{
		{"malformed", "ga", "PUT", workers, `{"count":`, 400},
		{"not JSON", "ga", "PUT", workers, `count=1`, 400},
		{"unknown field", "ga", "PUT", workers, `{"max": 3}`, 400},
		{"string count", "ga", "PUT", workers, `{"count": "2"}`, 400},
		{"fractional count", "ga", "PUT", workers, `{"count": 1.5}`, 400},
		{"exponent count", "ga", "PUT", workers, `{"count": 1e2}`, 400},
		{"huge count", "ga", "PUT", workers, `{"count": 100000000000000000000000}`, 400},
		{"bool max", "ga", "PUT", workers, `{"max_count": true}`, 400},
		{"empty object", "ga", "PUT", workers, `{}`, 400},
		{"nulls only", "ga", "PUT", workers, `{"count": null}`, 400},
		{"null", "ga", "PUT", workers, `null`, 400},
		{"array", "ga", "PUT", workers, `[{"count": 1}]`, 400},
		{"empty body", "ga", "PUT", workers, ``, 400},
		{"trailing object", "ga", "PUT", workers, `{"count": 1}{"count": 2}`, 400},
		{"trailing garbage", "ga", "PUT", workers, `{"count": 1} x`, 400},
		{"too large", "ga", "PUT", workers, big, 413},
		{"config too large", "root", "PUT", "/api/v1/config/autorebalance", `{"enabled": true` + strings.Repeat(" ", console.MaxBody) + `}`, 413},
		{"bad group name", "root", "PUT", "/api/v1/groups/bad%20name/zones/a/workers", `{"count": 1}`, 400},
		{"bad zone name", "root", "GET", "/api/v1/groups/g1/zones/-a/workers", ``, 400},
		{"slash in name", "root", "GET", "/api/v1/groups/g1%2Fx/zones/a/workers", ``, 400},
		{"long name", "root", "GET", "/api/v1/groups/" + strings.Repeat("g", 64) + "/zones/a/workers", ``, 400},
		{"config wrong type", "root", "PUT", "/api/v1/config/autorebalance", `{"enabled": "yes"}`, 400},
		{"config empty", "root", "PUT", "/api/v1/config/autorebalance", `{}`, 400},
		{"config unknown field", "root", "PUT", "/api/v1/config/autorebalance", `{"interval": 5}`, 400},
		{"audit limit 0", "root", "GET", "/api/v1/audit?limit=0", ``, 400},
		{"audit limit word", "root", "GET", "/api/v1/audit?limit=ten", ``, 400},
		{"audit limit too big", "root", "GET", "/api/v1/audit?limit=1001", ``, 400},
		{"audit other group", "ga", "GET", "/api/v1/audit?group=g2", ``, 403},
		{"unknown zone", "root", "GET", "/api/v1/groups/g1/zones/nope/workers", ``, 404},
		{"unknown zone viewer", "v", "GET", "/api/v1/groups/g1/zones/nope/workers", ``, 404},
		{"rebalance unknown zone", "ga", "POST", "/api/v1/groups/g1/zones/nope/rebalance", ``, 404},
		{"unknown path", "root", "GET", "/api/v1/nothing", ``, 404},
		{"wrong method", "root", "DELETE", workers, ``, 405},
		{"viewer with a bad body is still refused", "v", "PUT", workers, `{"count":`, 403},
		{"viewer with a huge body is still refused", "v", "PUT", workers, big, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.lastAudit(t)
			code, m := r.do(t, tc.caller, tc.method, tc.path, tc.body)
			if code != tc.want {
				t.Fatalf("status %d, want %d (%v)", code, tc.want, m)
			}
			if s, _ := m["error"].(string); s == "" {
				t.Fatalf("no JSON error: %v", m)
			}
			if tc.want == 400 || tc.want == 404 || tc.want == 405 || tc.want == 413 {
				if after := r.lastAudit(t); after.ID != before.ID {
					t.Fatalf("a malformed request was audited: %+v", after)
				}
			}
			z, _ := r.store.Zone("g1", "a")
			if z.Count != 1 || z.MaxCount != 3 {
				t.Fatalf("zone changed: %+v", z)
			}
		})
	}
}

// A value of the wrong type is answered in a person's words, because the
// pages show the API's message as it is.
func TestWrongTypeMessages(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct{ body, want string }{
		{`{"count": "abc"}`, "field count: want a whole number, got text"},
		{`{"count": 1.5}`, "field count: want a whole number, got 1.5 (not a whole number, or out of range)"},
		{`{"count": 100000000000000000000000}`, "field count: want a whole number, got 100000000000000000000000 (not a whole number, or out of range)"},
		{`{"max_count": true}`, "field max_count: want a whole number, got true or false"},
		{`{"count": [1]}`, "field count: want a whole number, got a list"},
	} {
		code, m := r.do(t, "ga", "PUT", workers, tc.body)
		if got, _ := m["error"].(string); code != 400 || got != tc.want {
			t.Errorf("%s: %d %q, want 400 %q", tc.body, code, got, tc.want)
		}
	}
}

func TestInvalidValues(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		name, path, body, action string
	}{
		{"count 0", workers, `{"count": 0}`, controller.AuditCount},
		{"count negative", workers, `{"count": -1}`, controller.AuditCount},
		{"count over max", workers, `{"count": 4}`, controller.AuditCount},
		{"count over new max", workers, `{"count": 3, "max_count": 2}`, controller.AuditMaxCount},
		{"max 0", workers, `{"max_count": 0}`, controller.AuditMaxCount},
		{"max over limit", workers, `{"max_count": 1001}`, controller.AuditMaxCount},
		{"create with count 0", "/api/v1/groups/g1/zones/new/workers", `{"count": 0}`, controller.AuditCount},
		{"interval 0", "/api/v1/config/autorebalance", `{"interval_seconds": 0}`, controller.AuditAutoRebalance},
		{"interval negative", "/api/v1/config/autorebalance", `{"enabled": true, "interval_seconds": -5}`, controller.AuditAutoRebalance},
		{"interval over an hour", "/api/v1/config/autorebalance", `{"interval_seconds": 3600.5}`, controller.AuditAutoRebalance},
		{"interval huge", "/api/v1/config/autorebalance", `{"interval_seconds": 1e300}`, controller.AuditAutoRebalance},
		{"interval under a nanosecond", "/api/v1/config/autorebalance", `{"interval_seconds": 1e-12}`, controller.AuditAutoRebalance},
		{"interval under the 0.1 s minimum (a pass would burn a core)", "/api/v1/config/autorebalance", `{"enabled": true, "interval_seconds": 0.0001}`, controller.AuditAutoRebalance},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, m := r.do(t, "root", "PUT", tc.path, tc.body)
			if code != 422 {
				t.Fatalf("status %d, want 422 (%v)", code, m)
			}
			e := r.lastAudit(t)
			if e.Action != tc.action || e.Actor != "root" || e.Tags["error"] != "invalid" {
				t.Fatalf("invalid attempt audited as %+v", e)
			}
		})
	}
	z, _ := r.store.Zone("g1", "a")
	if z.Count != 1 || z.MaxCount != 3 {
		t.Fatalf("zone changed: %+v", z)
	}
	if _, err := r.store.Zone("g1", "new"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an invalid create made a zone: %v", err)
	}
	if code, m := r.do(t, "root", "GET", "/api/v1/config/autorebalance", ""); code != 200 || m["enabled"] != false || m["interval_seconds"] != 60.0 {
		t.Fatalf("config: %d %v (want off, 60 s)", code, m)
	}
}

func TestLowerMaxUnderLoadViaAPI(t *testing.T) {
	r := newRig(t)
	if code, m := r.do(t, "ga", "PUT", workers, `{"count": 3}`); code != 200 || m["count"] != 3.0 {
		t.Fatalf("count 3: %d %v", code, m)
	}
	r.fleet.SetLoad("g1", "a", 32, 0)
	code, m := r.do(t, "ga", "PUT", workers, `{"max_count": 1}`)
	if code != 200 || m["count"] != 1.0 || m["max_count"] != 1.0 {
		t.Fatalf("max 1: %d %v", code, m)
	}
	if n := r.fleet.Replicas("g1", "a"); n != 1 {
		t.Fatalf("fleet runs %d, want 1 at once", n)
	}
	code, m = r.do(t, "ga", "GET", "/api/v1/audit?group=g1&zone=a&limit=2", "")
	if code != 200 {
		t.Fatalf("audit: %d %v", code, m)
	}
	es := m["entries"].([]any)
	first, second := es[0].(map[string]any), es[1].(map[string]any)
	if first["action"] != "workers.count" || second["action"] != "workers.max_count" {
		t.Fatalf("entries %v", es)
	}
	tags := second["tags"].(map[string]any)
	if tags["from"] != "3" || tags["to"] != "1" || second["actor"] != "ga" {
		t.Fatalf("max_count entry %v", second)
	}
	if tags := first["tags"].(map[string]any); tags["from"] != "3" || tags["to"] != "1" {
		t.Fatalf("count entry %v", first)
	}
	for _, k := range []string{"id", "at", "actor", "group", "zone", "action", "tags"} {
		if _, ok := first[k]; !ok {
			t.Fatalf("entry lacks %s: %v", k, first)
		}
	}
}

func TestAuditVisibility(t *testing.T) {
	r := newRig(t)
	if code, _ := r.do(t, "root", "PUT", "/api/v1/groups/g2/zones/b/workers", `{"max_count": 2}`); code != 200 {
		t.Fatal(code)
	}
	r.do(t, "v", "PUT", workers, `{"max_count": 9}`) // refused, audited in g1
	count := func(caller, query string) (int, []string) {
		code, m := r.do(t, caller, "GET", "/api/v1/audit"+query, "")
		if code != 200 {
			t.Fatalf("%s: %d %v", caller, code, m)
		}
		var groups []string
		for _, e := range m["entries"].([]any) {
			groups = append(groups, e.(map[string]any)["group"].(string))
		}
		return len(groups), groups
	}
	nRoot, _ := count("root", "")
	nGa, ga := count("ga", "")
	nGb, gb := count("gb", "")
	if nGa+nGb != nRoot {
		t.Fatalf("root sees %d, ga %d, gb %d", nRoot, nGa, nGb)
	}
	for _, g := range ga {
		if g != "g1" {
			t.Fatalf("ga sees group %q", g)
		}
	}
	for _, g := range gb {
		if g != "g2" {
			t.Fatalf("gb sees group %q", g)
		}
	}
	if n, _ := count("root", "?action=workers.max_count&limit=1"); n != 1 {
		t.Fatalf("limit/action: %d", n)
	}
}

func TestAutoRebalanceConfig(t *testing.T) {
	r := newRig(t)
	code, m := r.do(t, "root", "PUT", "/api/v1/config/autorebalance", `{"enabled": true, "interval_seconds": 0.25}`)
	if code != 200 || m["enabled"] != true || m["interval_seconds"] != 0.25 {
		t.Fatalf("put: %d %v", code, m)
	}
	code, m = r.do(t, "v", "GET", "/api/v1/config/autorebalance", "")
	if code != 200 || m["enabled"] != true || m["interval_seconds"] != 0.25 {
		t.Fatalf("get: %d %v", code, m)
	}
	if cfg := r.c.AutoRebalance(); !cfg.Enabled || cfg.Interval != 250*time.Millisecond {
		t.Fatalf("controller config %+v", cfg)
	}
	code, m = r.do(t, "root", "PUT", "/api/v1/config/autorebalance", `{"enabled": false}`)
	if code != 200 || m["enabled"] != false || m["interval_seconds"] != 0.25 {
		t.Fatalf("partial put: %d %v", code, m)
	}
	if e := r.lastAudit(t); e.Action != controller.AuditAutoRebalance || e.Actor != "root" || e.Tags["enabled"] != "false" {
		t.Fatalf("audit %+v", e)
	}
}

func TestFailuresAreServerErrors(t *testing.T) {
	r := newRig(t)
	r.fleet.SetScaleError(errors.New("fleet down"))
	if code, m := r.do(t, "ga", "PUT", workers, `{"count": 2}`); code != 502 || !strings.Contains(m["error"].(string), "scale target") {
		t.Fatalf("scale down: %d %v", code, m)
	}
	r.fleet.SetScaleError(nil)
	r.fleet.SetDiscoveryError(errors.New("no endpoints"))
	if code, m := r.do(t, "ga", "POST", "/api/v1/groups/g1/zones/a/rebalance", ""); code != 502 {
		t.Fatalf("discovery down: %d %v", code, m)
	}
	// GET workers still answers with the last seen readiness.
	if code, _ := r.do(t, "ga", "GET", workers, ""); code != 200 {
		t.Fatalf("GET workers with discovery down: %d", code)
	}
	r.fleet.SetDiscoveryError(nil)

	if code, _ := r.do(t, "", "GET", "/readyz", ""); code != 200 {
		t.Fatalf("readyz: %d", code)
	}
	if err := r.store.Close(); err != nil {
		t.Fatal(err)
	}
	if code, _ := r.do(t, "", "GET", "/readyz", ""); code != 503 {
		t.Fatalf("readyz with the store closed: %d", code)
	}
	if code, m := r.do(t, "root", "GET", "/api/v1/audit", ""); code != 503 || !strings.Contains(m["error"].(string), "store") {
		t.Fatalf("audit with the store closed: %d %v", code, m)
	}
	if code, m := r.do(t, "root", "PUT", workers, `{"max_count": 2}`); code != 503 {
		t.Fatalf("put with the store closed: %d %v", code, m)
	}
	if code, _ := r.do(t, "", "GET", "/livez", ""); code != 200 {
		t.Fatalf("livez: %d", code)
	}
}

func TestReadyzDraining(t *testing.T) {
	r := newRig(t)
	r.health.SetDraining()
	if code, _ := r.do(t, "", "GET", "/readyz", ""); code != 503 {
		t.Fatalf("readyz while draining: %d", code)
	}
}

func TestMetrics(t *testing.T) {
	r := newRig(t)
	r.do(t, "ga", "POST", "/api/v1/groups/g1/zones/a/rebalance", "")
	req := httptest.NewRequest("GET", "/metrics", nil)
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	body := rec.Body.String()
	for _, want := range []string{
		`scaleproof_console_decisions_total{action="hold"} 1`,
		`scaleproof_console_decisions_total{action="set"} 1`,
		`scaleproof_console_zone_count{group="g1",zone="a"} 1`,
		`scaleproof_console_zone_max_count{group="g1",zone="a"} 3`,
		`scaleproof_console_autorebalance_enabled 0`,
		`scaleproof_console_autorebalance_interval_seconds 60`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

func TestParseKeys(t *testing.T) {
	for _, tc := range []struct {
		name, doc, err string
	}{
		{"ok", keysJSON, ""},
		{"no keys", `{"keys":[]}`, "no keys"},
		{"duplicate name", `{"keys":[{"name":"a","key":"x1","role":"viewer"},{"name":"a","key":"x2","role":"viewer"}]}`, "duplicate name"},
		{"duplicate key", `{"keys":[{"name":"a","key":"x1","role":"viewer"},{"name":"b","key":"x1","role":"viewer"}]}`, "duplicate key"},
		{"unknown role", `{"keys":[{"name":"a","key":"x1","role":"admin"}]}`, "unknown role"},
		{"group admin without groups", `{"keys":[{"name":"a","key":"x1","role":"group_admin"}]}`, "needs groups"},
		{"empty key", `{"keys":[{"name":"a","key":"","role":"viewer"}]}`, "empty key"},
		{"unknown field", `{"keys":[{"name":"a","key":"x","role":"viewer","admin":true}]}`, "unknown field"},
		{"not JSON", `keys`, "parse keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := console.ParseKeys([]byte(tc.doc))
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if strings.Contains(fmt.Sprint(err), "x1") {
				t.Fatalf("error leaks a key: %v", err)
			}
		})
	}
	ks, _ := console.ParseKeys([]byte(keysJSON))
	if p, ok := ks.Authenticate("k-ga-0123456789"); !ok || p.Name != "ga" || !p.AdminOf("g1") || p.AdminOf("g2") {
		t.Fatalf("ga = %+v, %v", p, ok)
	}
	for _, bad := range []string{"", "k-ga", "k-ga-01234567890", "K-GA-0123456789"} {
		if _, ok := ks.Authenticate(bad); ok {
			t.Fatalf("%q authenticated", bad)
		}
	}
}

// FuzzPutWorkers: whatever the body and path, PUT workers never answers 5xx
// or panics, and every error is JSON.
func FuzzPutWorkers(f *testing.F) {
	for _, s := range []struct {
		body, group, zone, caller string
	}{
		{`{"max_count": 3}`, "g1", "a", "root"},
		{`{"count": 2, "max_count": 2}`, "g1", "b", "ga"},
		{`{"count": 0}`, "g1", "a", "ga"},
		{`{"max_count": 1}`, "g1", "a", "ga"},
		{`{"count": 4}`, "g1", "a", "root"},
		{`{"count": "x"}`, "g1", "a", "root"},
		{`{"count": 1}{`, "g1", "a", "root"},
		{`{"max_count": 9223372036854775807}`, "g1", "a", "root"},
		{`{"max_count": -9223372036854775808}`, "g1", "a", "root"},
		{`{"count": 1}`, "..", "a", "root"},
		{`{"count": 1}`, "g1/a", "%", "root"},
		{`{"count": 1}`, "", "a", "root"},
		{`{"count": 1}`, "g2", "a", "v"},
		{"\xff\xfe", "g\x00", "z", "m"},
		{`{"count": 1}`, "g1", "a", "nobody"},
	} {
		f.Add([]byte(s.body), s.group, s.zone, s.caller)
	}
	r := newRig(f)
	f.Fuzz(func(t *testing.T, body []byte, group, zone, caller string) {
		path := "/api/v1/groups/" + escape(group) + "/zones/" + escape(zone) + "/workers"
		req := httptest.NewRequest("PUT", "http://console.test/", bytes.NewReader(body))
		req.URL.Path, req.URL.RawPath = "/api/v1/groups/"+group+"/zones/"+zone+"/workers", path
		req.RequestURI = path
		if k, ok := keyOf[caller]; ok {
			req.Header.Set("Authorization", "Bearer "+k)
		}
		rec := httptest.NewRecorder()
		r.h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("PUT %s %q by %q: %d %s", path, body, caller, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var m map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m["error"] == "" {
				t.Fatalf("PUT %s %q: %d, error body %q not JSON", path, body, rec.Code, rec.Body)
			}
		}
	})
}

// escape percent-encodes every byte outside the unreserved set, so any
// group or zone, '/' and '%' included, lands in one path segment.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// TestIndexListsEveryRoute: GET /api/v1 lists the route table, every
// listed path and method is served (neither 404 nor 405), and a viewer is
// refused on every listed mutating method, audited as forbidden.
func TestIndexListsEveryRoute(t *testing.T) {
	r := newRig(t)
	st, m := r.do(t, "v", "GET", console.PathIndex, "")
	if st != http.StatusOK {
		t.Fatalf("GET %s: %d", console.PathIndex, st)
	}
	b, _ := json.Marshal(m)
	var idx console.IndexJSON
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Routes) != 6 {
		t.Errorf("%d routes listed, want the 6 of the API: %+v", len(idx.Routes), idx.Routes)
	}
	if st, _ := r.do(t, "none", "GET", console.PathIndex, ""); st != http.StatusUnauthorized {
		t.Errorf("GET %s without a key: %d, want 401", console.PathIndex, st)
	}
	fill := strings.NewReplacer("{g}", "g1", "{z}", "a")
	mutating := 0
	for _, rt := range idx.Routes {
		path := fill.Replace(rt.Path)
		for _, method := range rt.Methods {
			if method == http.MethodGet {
				st, m := r.do(t, "root", method, path, "")
				if msg, _ := m["error"].(string); st == http.StatusMethodNotAllowed || strings.HasPrefix(msg, "no such endpoint") {
					t.Errorf("%s %s listed but not served: %d %s", method, path, st, msg)
				}
				continue
			}
			mutating++
			st, _ := r.do(t, "v", method, path, "{}")
			if st != http.StatusForbidden {
				t.Errorf("viewer %s %s: %d, want 403", method, path, st)
				continue
			}
			if e := r.lastAudit(t); e.Actor != "v" || e.Error != "forbidden" {
				t.Errorf("viewer %s %s audited as %+v, want a forbidden entry by v", method, path, e)
			}
		}
	}
	if mutating != 4 {
		t.Errorf("%d mutating methods listed, want 4 (PUT workers, POST rebalance, PUT policy, PUT autorebalance)", mutating)
	}
}
