package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/console"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
)

// The web pages' tests without a browser: sessions, CSRF, what each role
// sees, refusals audited like the API's, bad form input. The browser's
// tests are in web_browser_test.go.

const sessionTTL = time.Hour

// webRig is a console with its pages on a test server, on the rig's clock.
type webRig struct {
	*rig
	srv *httptest.Server
}

func newWebRig(t testing.TB, opts ...func(*console.PagesOptions)) *webRig {
	t.Helper()
	r := newRigWith(t, slog.New(slog.NewTextHandler(io.Discard, nil)), func(o *console.Options, clock *controllertest.Clock) {
		cfg := autoscaler.DefaultStepConfig()
		o.Step = &cfg
		o.Pages = console.PagesOptions{Clock: clock, SessionTTL: sessionTTL, Poll: 200 * time.Millisecond}
		for _, f := range opts {
			f(&o.Pages)
		}
	})
	one, three := 1, 3
	for _, gz := range [][2]string{{"g1", "b"}, {"g2", "a"}} {
		if _, err := r.c.Apply(context.Background(), "root", gz[0], gz[1], controller.Change{Count: &one, MaxCount: &three}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(r.h)
	t.Cleanup(srv.Close)
	return &webRig{rig: r, srv: srv}
}

// user is one browser: a cookie jar, redirects not followed.
type user struct {
	t    testing.TB
	base string
	c    *http.Client
	csrf string
}

func (w *webRig) browser(t testing.TB) *user {
	jar, _ := cookiejar.New(nil)
	return &user{t: t, base: w.srv.URL, c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// get returns the status, body and Location of GET path.
func (u *user) get(path string, hdr ...string) (int, string, string) {
	u.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u.base+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return u.do(req)
}

func (u *user) post(path string, form url.Values) (int, string, string) {
	u.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return u.do(req)
}

func (u *user) do(req *http.Request) (int, string, string) {
	u.t.Helper()
	res, err := u.c.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if m := csrfRE.FindSubmatch(b); m != nil {
		u.csrf = string(m[1])
	}
	return res.StatusCode, string(b), res.Header.Get("Location")
}

// signIn signs in with the key of caller (a name of keysJSON).
func (w *webRig) signIn(t testing.TB, caller string) *user {
	t.Helper()
	u := w.browser(t)
	if st, _, _ := u.get("/ui/signin"); st != 200 {
		t.Fatalf("GET signin: %d", st)
	}
	st, body, loc := u.post("/ui/signin", url.Values{"key": {keyOf[caller]}, "csrf": {u.csrf}, "next": {"/ui/zones"}})
	if st != http.StatusSeeOther || loc != "/ui/zones" {
		t.Fatalf("sign in as %s: %d to %q: %s", caller, st, loc, body)
	}
	if st, _, _ := u.get("/ui/zones"); st != 200 {
		t.Fatalf("zones after sign-in as %s: %d", caller, st)
	}
	return u
}

func TestPagesSignIn(t *testing.T) {
	w := newWebRig(t)
	u := w.browser(t)
	// Not signed in: pages go to the sign-in page, a page's own refresh gets 401.
	if st, _, loc := u.get("/ui/zones"); st != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/signin?next=") {
		t.Fatalf("zones without a session: %d to %q", st, loc)
	}
	if st, _, _ := u.get("/ui/zones", "X-Scaleproof-Live", "1"); st != http.StatusUnauthorized {
		t.Fatalf("live refresh without a session: %d, want 401", st)
	}
	// A browser asking for / is sent to the pages; the API's 404 stays JSON.
	if st, _, loc := u.get("/", "Accept", "text/html"); st != http.StatusSeeOther || loc != "/ui/" {
		t.Fatalf("GET / for a browser: %d to %q", st, loc)
	}
	u.get("/ui/signin")
	cases := []struct {
		name, key, csrf string
		want            int
	}{
		{"unknown key", "k-nobody-0123456789", u.csrf, http.StatusUnauthorized},
		{"no token", keyOf["root"], "", http.StatusForbidden},
		{"wrong token", keyOf["root"], "x" + u.csrf, http.StatusForbidden},
	}
	for _, c := range cases {
		if st, _, _ := u.post("/ui/signin", url.Values{"key": {c.key}, "csrf": {c.csrf}}); st != c.want {
			t.Errorf("%s: %d, want %d", c.name, st, c.want)
		}
	}
	if e := w.lastAudit(t); e.Action != console.AuditSignin || e.Actor != "root" || e.Tags["error"] != "forbidden" {
		t.Errorf("a sign-in with a good key and a wrong token audited as %+v", e)
	}
	// A good sign-in: the cookie is HttpOnly, SameSite=Strict, for the pages only.
	u.get("/ui/signin")
	res, err := u.c.PostForm(w.srv.URL+"/ui/signin", url.Values{"key": {keyOf["v"]}, "csrf": {u.csrf}, "next": {"//evil.test/x"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/ui/zones" {
		t.Fatalf("sign-in with next=//evil.test: %d to %q, want /ui/zones", res.StatusCode, loc)
	}
	var got *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "scaleproof_session" {
			got = c
		}
	}
	if got == nil || !got.HttpOnly || got.SameSite != http.SameSiteStrictMode || got.Path != "/ui/" || got.Value == "" {
		t.Fatalf("session cookie %+v", got)
	}
	if st, body, _ := u.get("/ui/zones"); st != 200 || !strings.Contains(body, ">v <span") {
		t.Fatalf("signed in as v: %d", st)
	}
	// Signing out needs the token too, and ends the session.
	if st, _, _ := u.post("/ui/signout", url.Values{}); st != http.StatusForbidden {
		t.Errorf("sign out without the token: %d, want 403", st)
	}
	if st, _, _ := u.post("/ui/signout", url.Values{"csrf": {u.csrf}}); st != http.StatusSeeOther {
		t.Errorf("sign out: %d", st)
	}
	if st, _, _ := u.get("/ui/zones"); st != http.StatusSeeOther {
		t.Errorf("zones after sign-out: %d, want 303", st)
	}
}

// TestPagesSessionExpiry: a session ends SessionTTL after sign-in, by the
// injected clock.
func TestPagesSessionExpiry(t *testing.T) {
	w := newWebRig(t)
	u := w.signIn(t, "ga")
	w.clock.Advance(sessionTTL - time.Second)
	if st, _, _ := u.get("/ui/zones"); st != 200 {
		t.Fatalf("a second before expiry: %d", st)
	}
	w.clock.Advance(time.Second)
	if st, _, loc := u.get("/ui/zones"); st != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/signin") {
		t.Fatalf("at expiry: %d to %q, want the sign-in page", st, loc)
	}
	if st, _, _ := u.post("/ui/groups/g1/zones/a/workers", url.Values{"csrf": {u.csrf}, "max_count": {"2"}}); st != http.StatusUnauthorized {
		t.Fatalf("a form after expiry: %d, want 401", st)
	}
	if v, _ := w.c.Zone("g1", "a"); v.MaxCount != 3 {
		t.Fatalf("max changed by an expired session: %d", v.MaxCount)
	}
}

// TestPagesRoles: what each role sees, as the API decides it.
func TestPagesRoles(t *testing.T) {
	w := newWebRig(t)
	w.fleet.SetLoad("g1", "a", 7, 100)
	cases := []struct {
		caller             string
		g1Full, g2Full     bool
		audit, config      int
		auditLink, cfgLink bool
	}{
		{"root", true, true, 200, 200, true, true},
		{"ga", true, false, 200, 403, true, false},
		{"gb", false, true, 200, 403, true, false},
		{"v", false, false, 403, 403, false, false},
		{"m", false, false, 403, 403, false, false},
	}
	for _, c := range cases {
		t.Run(c.caller, func(t *testing.T) {
			u := w.signIn(t, c.caller)
			_, zones, _ := u.get("/ui/zones")
			rows := rowsOf(zones)
			if len(rows) != 3 {
				t.Fatalf("zones page: %d rows, want 3 (g1/a, g1/b, g2/a)", len(rows))
			}
			for id, full := range map[string]bool{"zone:g1/a": c.g1Full, "zone:g1/b": c.g1Full, "zone:g2/a": c.g2Full} {
				row := rows[id]
				if !strings.Contains(row, `class="num count">1<`) {
					t.Errorf("%s: no count 1 in %s", id, row)
				}
				for _, s := range []string{"Save max", `name="max_count"`, `class="rate"`, "act-set"} {
					if strings.Contains(row, s) != full {
						t.Errorf("%s: has %q = %v, want %v", id, s, !full, full)
					}
				}
			}
			if c.g1Full && !strings.Contains(rows["zone:g1/a"], `<b class="inflight">7 / 32</b>`) {
				t.Errorf("g1/a: the worker's load is missing: %s", rows["zone:g1/a"])
			}
			_, group, _ := u.get("/ui/groups/g1")
			for _, s := range []string{"Scale workers", "Rebalance and autoscale", "Last decision", `name="count"`} {
				if strings.Contains(group, s) != c.g1Full {
					t.Errorf("group page g1: has %q = %v, want %v", s, !c.g1Full, c.g1Full)
				}
			}
			if !c.g1Full && !strings.Contains(group, "You see the count only") {
				t.Error("group page g1: no note that the count only is shown")
			}
			if st, _, _ := u.get("/ui/audit"); st != c.audit {
				t.Errorf("audit page: %d, want %d", st, c.audit)
			}
			st, cfg, _ := u.get("/ui/config")
			if st != c.config {
				t.Errorf("config page: %d, want %d", st, c.config)
			}
			if st == 403 && !strings.Contains(cfg, "the Config page is for super admins") {
				t.Errorf("config page refused without saying why: %s", cfg)
			}
			if got := strings.Contains(zones, `href="/ui/audit"`); got != c.auditLink {
				t.Errorf("audit link shown: %v, want %v", got, c.auditLink)
			}
			if got := strings.Contains(zones, `href="/ui/config"`); got != c.cfgLink {
				t.Errorf("config link shown: %v, want %v", got, c.cfgLink)
			}
		})
	}
}

var rowRE = regexp.MustCompile(`(?s)<tr id="(zone:[^"]+)".*?</tr>`)

// rowsOf maps each zone row's id to its HTML.
func rowsOf(page string) map[string]string {
	out := map[string]string{}
	for _, m := range rowRE.FindAllStringSubmatch(page, -1) {
		out[m[1]] = m[0]
	}
	return out
}

// TestPagesFormsAudited: every form, by every kind of caller: the status,
// and the audit entry the API would have written.
func TestPagesFormsAudited(t *testing.T) {
	w := newWebRig(t)
	const workersForm, rebalanceForm, configForm = "/ui/groups/g1/zones/a/workers", "/ui/groups/g1/zones/a/rebalance", "/ui/config/autorebalance"
	cases := []struct {
		name, caller, path string
		form               url.Values
		noToken, badToken  bool
		want               int
		action             string            // the audit entry's action; "" nothing audited
		tags               map[string]string // tags it must have
	}{
		{"admin saves max", "ga", workersForm, url.Values{"max_count": {"2"}, "back": {"zones"}}, false, false, 303,
			controller.AuditMaxCount, map[string]string{"from": "3", "to": "2"}},
		{"admin scales workers", "ga", workersForm, url.Values{"count": {"2"}, "max_count": {"3"}, "back": {"group"}}, false, false, 303,
			controller.AuditCount, map[string]string{"from": "1", "to": "2"}},
		{"count over max", "ga", workersForm, url.Values{"count": {"9"}}, false, false, 422,
			controller.AuditCount, map[string]string{"error": "invalid"}},
		{"max 0", "root", workersForm, url.Values{"max_count": {"0"}, "back": {"group"}}, false, false, 422,
			controller.AuditMaxCount, map[string]string{"error": "invalid"}},
		{"viewer's forged max", "v", workersForm, url.Values{"max_count": {"3"}}, false, false, 403,
			controller.AuditMaxCount, map[string]string{"error": "forbidden", "detail": "viewer"}},
		{"MCP user's forged count", "m", workersForm, url.Values{"count": {"3"}}, false, false, 403,
			controller.AuditCount, map[string]string{"error": "forbidden"}},
		{"other group's admin", "gb", rebalanceForm, url.Values{}, false, false, 403,
			controller.AuditRebalance, map[string]string{"error": "forbidden"}},
		{"no CSRF token", "ga", workersForm, url.Values{"max_count": {"1"}}, true, false, 403,
			controller.AuditMaxCount, map[string]string{"error": "forbidden", "detail": "csrf"}},
		{"wrong CSRF token", "root", configForm, url.Values{"enabled": {"true"}}, false, true, 403,
			controller.AuditAutoRebalance, map[string]string{"error": "forbidden", "detail": "csrf"}},
		{"count not a number", "ga", workersForm, url.Values{"count": {"two"}}, false, false, 400, "", nil},
		{"empty form", "ga", workersForm, url.Values{}, false, false, 400, "", nil},
		{"admin rebalances", "ga", rebalanceForm, url.Values{"back": {"group"}}, false, false, 303, "", nil},
		{"viewer's forged config", "v", configForm, url.Values{"enabled": {"true"}}, false, false, 403,
			controller.AuditAutoRebalance, map[string]string{"error": "forbidden"}},
		{"group admin's config", "ga", configForm, url.Values{"enabled": {"true"}}, false, false, 403,
			controller.AuditAutoRebalance, map[string]string{"error": "forbidden"}},
		{"interval too short", "root", configForm, url.Values{"interval_seconds": {"0.01"}}, false, false, 422,
			controller.AuditAutoRebalance, map[string]string{"error": "invalid"}},
		{"interval not a number", "root", configForm, url.Values{"interval_seconds": {"NaN"}}, false, false, 400, "", nil},
		{"scheduler on", "root", configForm, url.Values{"enabled": {"true"}, "interval_seconds": {"20"}}, false, false, 303,
			controller.AuditAutoRebalance, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := w.signIn(t, c.caller)
			form := url.Values{}
			for k, v := range c.form {
				form[k] = v
			}
			switch {
			case c.badToken:
				form.Set("csrf", u.csrf+"x")
			case !c.noToken:
				form.Set("csrf", u.csrf)
			}
			before := w.lastAudit(t).ID
			st, body, _ := u.post(c.path, form)
			if st != c.want {
				t.Fatalf("%d, want %d: %s", st, c.want, body)
			}
			e := w.lastAudit(t)
			if c.action == "" {
				if e.ID != before && c.want != 303 {
					t.Fatalf("audited %+v", e)
				}
				return
			}
			if e.ID == before || e.Action != c.action || e.Actor != c.caller {
				t.Fatalf("audit: %+v, want %s by %s", e, c.action, c.caller)
			}
			for k, v := range c.tags {
				if e.Tags[k] != v {
					t.Errorf("audit tag %s = %q, want %q (%+v)", k, e.Tags[k], v, e.Tags)
				}
			}
			if c.want >= 400 && !strings.Contains(body, `role="alert"`) && !strings.Contains(body, "<h1>Refused") {
				t.Errorf("a %d page without the refusal: %s", st, body)
			}
		})
	}
	// No session at all (a cross-site post without the cookie): 401, nothing audited.
	before := w.lastAudit(t).ID
	anon := w.browser(t)
	if st, _, _ := anon.post(workersForm, url.Values{"max_count": {"1"}}); st != http.StatusUnauthorized {
		t.Errorf("a post without a session: %d, want 401", st)
	}
	if w.lastAudit(t).ID != before {
		t.Error("a post without a session was audited")
	}
}

// TestPagesAuditFilters: the Audit page filters by actor, group, zone and
// action, and shows the entries' tags.
func TestPagesAuditFilters(t *testing.T) {
	w := newWebRig(t)
	two := 2
	if _, err := w.c.Apply(context.Background(), "ga", "g1", "a", controller.Change{MaxCount: &two}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.Apply(context.Background(), "root", "g2", "a", controller.Change{MaxCount: &two}); err != nil {
		t.Fatal(err)
	}
	root := w.signIn(t, "root")
	cases := []struct {
		query      string
		rows       int
		want, lack []string
	}{
		{"actor=ga", 1, []string{`data-actor="ga"`, "from:3", "to:2"}, []string{`data-actor="root"`}},
		{"group=g2&action=workers.max_count", 2, []string{`data-actor="root"`}, []string{`data-actor="ga"`}},
		{"group=g1&zone=a&action=workers.max_count", 2, []string{`data-actor="ga"`, `data-actor="root"`}, nil},
		{"action=workers.count", 3, []string{"from:0", "to:1"}, nil},
		{"actor=nobody", 0, []string{"no entries match"}, nil},
	}
	for _, c := range cases {
		st, body, _ := root.get("/ui/audit?" + c.query)
		if st != 200 {
			t.Fatalf("%s: %d", c.query, st)
		}
		if n := strings.Count(body, `class="audit-row"`); n != c.rows {
			t.Errorf("%s: %d rows, want %d", c.query, n, c.rows)
		}
		for _, s := range c.want {
			if !strings.Contains(body, s) {
				t.Errorf("%s: lacks %q", c.query, s)
			}
		}
		for _, s := range c.lack {
			if strings.Contains(body, s) {
				t.Errorf("%s: has %q", c.query, s)
			}
		}
	}
	// A group admin sees only their groups' entries, as through the API.
	gb := w.signIn(t, "gb")
	if _, body, _ := gb.get("/ui/audit"); strings.Contains(body, "<td>g1</td>") {
		t.Error("gb (admin of g2) sees g1's audit entries")
	}
	if st, _, _ := gb.get("/ui/audit?group=g1"); st != http.StatusForbidden {
		t.Errorf("gb filtering on g1: %d, want 403", st)
	}
}

// TestPagesLiveParts: a page's own refresh returns the live parts with the
// workers' load as it is now.
func TestPagesLiveParts(t *testing.T) {
	w := newWebRig(t)
	u := w.signIn(t, "ga")
	w.fleet.SetLoad("g1", "a", 5, 0)
	_, first, _ := u.get("/ui/zones", "X-Scaleproof-Live", "1")
	if !strings.Contains(rowsOf(first)["zone:g1/a"], "5 / 32</b>") {
		t.Fatal("in flight 5 not shown")
	}
	w.fleet.SetLoad("g1", "a", 30, 500)
	w.clock.Advance(10 * time.Second)
	_, second, _ := u.get("/ui/zones", "X-Scaleproof-Live", "1")
	row := rowsOf(second)["zone:g1/a"]
	if !strings.Contains(row, "30 / 32</b>") || !strings.Contains(row, `<b class="rate">50.0</b>`) ||
		!strings.Contains(row, "load-high") {
		t.Fatalf("after the load changed (30 in flight, 500 calls in 10 s): %s", row)
	}
	for _, s := range []string{`id="zones-body" data-live`, `id="live-stamp" data-live`, "X-Scaleproof-Live"} {
		if !strings.Contains(second, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
}

// TestPagesNeverServerError: odd paths, methods and bodies under /ui/ are
// answered 2xx-4xx, never 5xx (FuzzPageForm explores further).
func TestPagesNeverServerError(t *testing.T) {
	w := newWebRig(t)
	u := w.signIn(t, "root")
	for _, c := range pageSeeds {
		checkPage(t, w, u, c.method, c.path, c.body)
	}
}

var pageSeeds = []struct{ method, path, body string }{
	{"POST", "/ui/groups/g1/zones/a/workers", "csrf=%s&count=%zz"},
	{"POST", "/ui/groups/g1/zones/a/workers", "csrf=%s&count=99999999999999999999999"},
	{"POST", "/ui/groups/g1/zones/a/workers", "csrf=%s&count=-1&max_count=1e3"},
	{"POST", "/ui/groups/g1/zones/a/workers", "csrf=%s&max_count=1001"},
	{"POST", "/ui/groups/g1/zones/a/workers", "csrf=%s&count=2&count=3&max_count=%00"},
	{"POST", "/ui/groups/g1/zones/nope/workers", "csrf=%s&count=1"},
	{"POST", "/ui/groups/-bad/zones/a/workers", "csrf=%s&count=1"},
	{"POST", "/ui/groups/g1/zones/a/rebalance", "csrf=%s&back=%2F%2Fevil"},
	{"POST", "/ui/groups/g9/zones/a/rebalance", "csrf=%s"},
	{"POST", "/ui/config/autorebalance", "csrf=%s&enabled=maybe&interval_seconds=1e999"},
	{"POST", "/ui/config/autorebalance", "csrf=%s&interval_seconds=0x10"},
	{"POST", "/ui/config/autorebalance", "csrf=%s&interval_seconds=3600.5"},
	{"POST", "/ui/signin", "key=&csrf="},
	{"POST", "/ui/signout", "csrf=nope"},
	{"GET", "/ui/groups/%00", ""},
	{"GET", "/ui/groups/g9", ""},
	{"GET", "/ui/audit?limit=-1&actor=%ff&group=" + strings.Repeat("g", 300), ""},
	{"GET", "/ui/nope", ""},
	{"DELETE", "/ui/zones", ""},
	{"PUT", "/ui/config/autorebalance", ""},
	{"GET", "/ui/signin?next=http://evil.test/", ""},
}

// checkPage sends one request as u (its body's %s is u's CSRF token) and
// fails on a 5xx or a change made by a 4xx.
func checkPage(t *testing.T, w *webRig, u *user, method, path, body string) {
	t.Helper()
	before, _ := w.c.Zone("g1", "a")
	body = strings.Replace(body, "%s", u.csrf, 1)
	req, err := http.NewRequest(method, w.srv.URL+path, strings.NewReader(body))
	if err != nil {
		return // not a request a client can send
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	st, resp, _ := u.do(req)
	if st >= 500 {
		t.Fatalf("%s %s %q: %d: %s", method, path, body, st, resp)
	}
	if after, _ := w.c.Zone("g1", "a"); st >= 400 && (after.Count != before.Count || after.MaxCount != before.MaxCount) {
		t.Fatalf("%s %s %q: %d but g1/a changed from %d/%d to %d/%d", method, path, body, st,
			before.Count, before.MaxCount, after.Count, after.MaxCount)
	}
}

// FuzzPageForm: any form body to any of the pages' forms, signed in as any
// role: never a 5xx, and a refused or invalid change changes nothing.
func FuzzPageForm(f *testing.F) {
	for _, s := range pageSeeds {
		if s.method == "POST" {
			f.Add(s.path, s.body, "root")
		}
	}
	f.Add("/ui/groups/g1/zones/a/workers", "csrf=%s&max_count=2", "v")
	f.Add("/ui/groups/g1/zones/a/workers", "csrf=%s&count=2", "gb")
	f.Add("/ui/config/autorebalance", "csrf=%s&enabled=on", "m")
	w := newWebRig(f)
	users := map[string]*user{}
	f.Fuzz(func(t *testing.T, path, body, caller string) {
		if _, ok := keyOf[caller]; !ok || caller == "unknown" {
			caller = "root"
		}
		if !strings.HasPrefix(path, "/ui/") {
			path = "/ui/" + path
		}
		u := users[caller]
		if u == nil {
			u = w.signIn(t, caller)
			users[caller] = u
		}
		u.t = t
		checkPage(t, w, u, "POST", path, body)
	})
}

// TestPagesSessionCap: past MaxSessions the oldest session ends.
func TestPagesSessionCap(t *testing.T) {
	w := newWebRig(t, func(o *console.PagesOptions) { o.MaxSessions = 2 })
	first := w.signIn(t, "v")
	w.clock.Advance(time.Second)
	second := w.signIn(t, "ga")
	w.clock.Advance(time.Second)
	third := w.signIn(t, "root")
	for _, c := range []struct {
		name string
		u    *user
		want int
	}{{"first", first, http.StatusSeeOther}, {"second", second, 200}, {"third", third, 200}} {
		if st, _, _ := c.u.get("/ui/zones"); st != c.want {
			t.Errorf("%s session: %d, want %d", c.name, st, c.want)
		}
	}
}

// TestPagesSelfContained: every page loads nothing from elsewhere, runs only
// its own nonce'd script and style, and may not be framed.
func TestPagesSelfContained(t *testing.T) {
	w := newWebRig(t)
	u := w.signIn(t, "root")
	external := regexp.MustCompile(`(?i)<link|<img|<iframe|@import|url\(|\ssrc\s*=|https?://`)
	nonceRE := regexp.MustCompile(`<(?:script|style) nonce="([^"]+)"`)
	for _, path := range []string{"/ui/signin", "/ui/zones", "/ui/groups/g1", "/ui/audit", "/ui/config", "/ui/nope"} {
		req, _ := http.NewRequest(http.MethodGet, w.srv.URL+path, nil)
		res, err := u.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		page, csp := string(b), res.Header.Get("Content-Security-Policy")
		if m := external.FindString(page); m != "" {
			t.Errorf("%s references something external: %q", path, m)
		}
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		ms := nonceRE.FindAllStringSubmatch(page, -1)
		if len(ms) == 0 || strings.Count(page, "<script")+strings.Count(page, "<style") != len(ms) {
			t.Errorf("%s: a script or style without a nonce", path)
		}
		for _, m := range ms {
			if !strings.Contains(csp, "'nonce-"+m[1]+"'") {
				t.Errorf("%s: nonce %s not in the CSP %q", path, m[1], csp)
			}
		}
	}
}

// TestPagesScaleWorkersSendsWhatChanged: the Group page's Scale workers
// sends the fields the user changed, so a max someone else changed after
// the page was drawn is not put back.
func TestPagesScaleWorkersSendsWhatChanged(t *testing.T) {
	w := newWebRig(t)
	u := w.signIn(t, "ga")
	u.get("/ui/groups/g1")
	five := 5
	if _, err := w.c.Apply(context.Background(), "root", "g1", "b", controller.Change{MaxCount: &five}); err != nil {
		t.Fatal(err)
	}
	const path = "/ui/groups/g1/zones/b/workers"
	cases := []struct {
		name                       string
		count, countWas, max, maxW string
		wantCount, wantMax         int
		action                     string
	}{
		{"a new count, the max as drawn", "2", "1", "3", "3", 2, 5, controller.AuditCount},
		{"a new max, the count as drawn", "2", "2", "4", "5", 2, 4, controller.AuditMaxCount},
		{"both new", "3", "2", "3", "4", 3, 3, controller.AuditCount}, // the max entry, then the count one
	}
	for _, c := range cases {
		st, body, _ := u.post(path, url.Values{"csrf": {u.csrf}, "back": {"group"}, "count": {c.count}, "count_was": {c.countWas},
			"max_count": {c.max}, "max_count_was": {c.maxW}})
		if st != http.StatusSeeOther {
			t.Fatalf("%s: %d: %s", c.name, st, body)
		}
		v, _ := w.c.Zone("g1", "b")
		if v.Count != c.wantCount || v.MaxCount != c.wantMax {
			t.Errorf("%s: count %d max %d, want %d and %d", c.name, v.Count, v.MaxCount, c.wantCount, c.wantMax)
		}
		if e := w.lastAudit(t); e.Action != c.action || e.Actor != "ga" {
			t.Errorf("%s: last audit %+v, want %s by ga", c.name, e, c.action)
		}
	}
}

func TestShortWorkerName(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"g1-a-w1", "w1"},
		{"worker-g1-a-6f6dc45966-hbmkg", "6f6dc45966-hbmkg"},
		{"worker-g1-a-canary-6f6dc45966-hbmkg", "canary-6f6dc45966-hbmkg"},
		{"g1-a-", "g1-a-"},
		{"other-zone-w1", "other-zone-w1"},
		{"worker-g1-b-x", "worker-g1-b-x"},
	} {
		if got := console.ShortWorkerName(tc.id, "g1", "a"); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.id, got, tc.want)
		}
	}
}
