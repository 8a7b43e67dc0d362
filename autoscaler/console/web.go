package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
)

// The console's web pages (Ramen 0.7.5's autoscaling notes: the Group page's
// zone actions, Zones and workers, Audit, Config), served under /ui/:
//
//	GET  /ui/signin                              sign in with an API key (a session cookie)
//	POST /ui/signin, /ui/signout
//	GET  /ui/zones                               Zones and workers: one row per group × zone
//	GET  /ui/groups/{g}                          the Group page: each zone's actions and last decision
//	GET  /ui/audit?actor=&group=&zone=&action=   the audit log
//	GET  /ui/config                              the Auto-rebalance scheduler (super admin)
//	POST /ui/groups/{g}/zones/{z}/workers        form: count and/or max_count (Scale workers, Save max)
//	POST /ui/groups/{g}/zones/{z}/rebalance      Rebalance and autoscale
//	POST /ui/config/autorebalance                form: enabled, interval_seconds
//
// The pages decide nothing themselves: every read and every change goes
// through the API's own handlers (the same roles, validation, audit and
// status codes), with the form's fields turned into the API's JSON body. So
// viewers and MCP users see the count only, a refused change is 403 and
// audited error:forbidden, an invalid one 422 and error:invalid. On top, a
// POST without the session's CSRF token is 403 and audited error:forbidden
// (detail csrf); a POST without a session is 401. An open page refreshes its
// live parts every PagesOptions.Poll by fetching itself again (a small
// inline script; no external asset, works offline).

// pagesPrefix is where the pages live.
const pagesPrefix = "/ui/"

// DefaultPoll is how often an open page refreshes its live parts.
const DefaultPoll = 2 * time.Second

// liveHeader marks a page's own refresh request: an ended session answers
// 401 instead of redirecting to the sign-in page.
const liveHeader = "X-Scaleproof-Live"

// Audit actions of the pages' own forms (sign-in and sign-out), used when
// their CSRF token is wrong.
const (
	AuditSignin  = "console.signin"
	AuditSignout = "console.signout"
)

// audit page limits: the newest pageAuditRows entries; with an actor filter
// the newest MaxAuditLimit are read and filtered.
const pageAuditRows = DefaultAuditLimit

// PagesOptions configure the web pages (Options.Pages); the zero value
// serves them with the defaults.
type PagesOptions struct {
	// Clock tells the sessions' expiry and the pages' times;
	// controller.SystemClock when nil. Tests inject the controller's clock.
	Clock controller.Clock
	// SessionTTL is how long a sign-in lasts; DefaultSessionTTL when <= 0.
	SessionTTL time.Duration
	// MaxSessions bounds the sessions kept; DefaultMaxSessions when <= 0.
	MaxSessions int
	// Poll is how often an open page refreshes its live parts; DefaultPoll
	// when <= 0.
	Poll time.Duration
	// Off serves no pages: /ui/ is the API's JSON 404.
	Off bool
}

//go:embed web_templates/*.html
var templateFS embed.FS

// pageNames are the page templates, each parsed with layout.html.
var pageNames = []string{"signin", "zones", "group", "audit", "config", "message"}

// pages serves the web pages of a Server.
type pages struct {
	s     *Server
	now   func() time.Time
	poll  time.Duration
	sess  *sessions
	tmpl  map[string]*template.Template
	mux   *http.ServeMux
	rates *rateBook
}

// newPages parses the templates and builds the pages' routes.
func newPages(s *Server, o PagesOptions) (*pages, error) {
	clock := o.Clock
	if clock == nil {
		clock = controller.SystemClock{}
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	pg := &pages{s: s, now: clock.Now, poll: o.Poll, sess: newSessions(clock.Now, o.SessionTTL, o.MaxSessions),
		tmpl: map[string]*template.Template{}, mux: http.NewServeMux(), rates: newRateBook()}
	base, err := template.New("layout.html").Funcs(template.FuncMap{"zoneID": zoneID}).ParseFS(templateFS, "web_templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: pages: %w", err)
	}
	for _, n := range pageNames {
		t, err := base.Clone()
		if err == nil {
			t, err = t.ParseFS(templateFS, "web_templates/"+n+".html")
		}
		if err != nil {
			return nil, fmt.Errorf("console: page %s: %w", n, err)
		}
		pg.tmpl[n] = t
	}

	m := pg.mux
	m.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/zones", http.StatusSeeOther)
	})
	m.HandleFunc("GET /ui/signin", pg.signinPage)
	m.HandleFunc("POST /ui/signin", pg.signin)
	m.HandleFunc("POST /ui/signout", pg.form(pg.signout))
	m.HandleFunc("GET /ui/zones", pg.signedIn(pg.zonesPage))
	m.HandleFunc("GET /ui/groups/{g}", pg.signedIn(pg.groupPage))
	m.HandleFunc("GET /ui/audit", pg.signedIn(pg.auditPage))
	m.HandleFunc("GET /ui/config", pg.signedIn(pg.configPage))
	m.HandleFunc("POST /ui/groups/{g}/zones/{z}/workers", pg.form(pg.postWorkers))
	m.HandleFunc("POST /ui/groups/{g}/zones/{z}/rebalance", pg.form(pg.postRebalance))
	m.HandleFunc("POST /ui/config/autorebalance", pg.form(pg.postAutoRebalance))
	m.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		pg.message(w, r, nil, http.StatusNotFound, "No such page", "There is no page at "+r.URL.Path+".")
	})
	return pg, nil
}

func (pg *pages) ServeHTTP(w http.ResponseWriter, r *http.Request) { pg.mux.ServeHTTP(w, r) }

// wantsHTML reports whether r is a browser asking for a page (GET / with
// Accept: text/html is sent on to /ui/).
func wantsHTML(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// --- page data -------------------------------------------------------------

// pageData is what every page template gets.
type pageData struct {
	Title      string
	Nonce      string // the CSP nonce of the inline style and script
	CSRF       string // the session's CSRF token (every form carries it)
	Flash      string // the result of the last change
	Error      string // why this request was refused
	StatusText string
	Now        string
	PollMS     int64
	Live       bool   // the page refreshes itself
	LiveURL    string // from this address (the page's own GET, also after a refused form)
	User       *userView
	Groups     []string
	Nav        string // the current page, for the nav
	Body       any
}

// userView is the signed-in key as the nav shows it.
type userView struct {
	Name, Role    string
	Audit, Config bool
}

func (pg *pages) data(se *session, title, nav string) pageData {
	d := pageData{Title: title, Nav: nav, Nonce: token()[:22], Now: pg.now().UTC().Format("15:04:05 UTC"),
		PollMS: pg.poll.Milliseconds()}
	if se != nil {
		d.CSRF, d.Flash = se.csrf, se.flash
		d.User = &userView{Name: se.p.Name, Role: string(se.p.Role), Audit: se.p.MayReadAudit(), Config: se.p.MayConfigure()}
		for _, z := range pg.s.c.Zones() { // sorted by group
			d.Groups = append(d.Groups, z.Group)
		}
		d.Groups = slices.Compact(d.Groups)
	}
	return d
}

// render writes page name with status, behind a strict Content-Security-Policy.
func (pg *pages) render(w http.ResponseWriter, name string, status int, d pageData) {
	if d.Error != "" && d.StatusText == "" {
		d.StatusText = fmt.Sprintf("%d %s:", status, http.StatusText(status))
	}
	var b bytes.Buffer
	if err := pg.tmpl[name].ExecuteTemplate(&b, "layout", d); err != nil {
		pg.s.log.Error("render page", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+d.Nonce+"'; style-src 'nonce-"+d.Nonce+
		"'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// messageBody is the message page's content.
type messageBody struct{ Heading, Text string }

// message renders a page with one message (a refusal, a missing page).
func (pg *pages) message(w http.ResponseWriter, r *http.Request, se *session, status int, heading, text string) {
	d := pg.data(se, heading, "")
	d.Body = messageBody{Heading: heading, Text: text}
	pg.render(w, "message", status, d)
}

// --- sessions and forms ------------------------------------------------------

// signedIn runs h for a signed-in browser; without a session a page load is
// sent to the sign-in page and a page's own refresh gets 401.
func (pg *pages) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		se, ok := pg.sess.get(r)
		if !ok {
			if r.Header.Get(liveHeader) != "" {
				http.Error(w, "signed out", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/ui/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r, &se)
	}
}

// form parses a POST's form (at most MaxBody bytes) and checks its CSRF
// token before h runs: no session is 401, a bad body 400 (413 when too
// large), a missing or wrong token 403 audited error:forbidden as the
// action the form was for (formAction), with detail csrf.
func (pg *pages) form(h func(http.ResponseWriter, *http.Request, *session, url.Values)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		se, ok := pg.sess.get(r)
		if !ok {
			pg.message(w, r, nil, http.StatusUnauthorized, "Signed out",
				"Your session has ended or this browser never signed in: sign in again, then repeat the change.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		if err := r.ParseForm(); err != nil {
			status := http.StatusBadRequest
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				status = http.StatusRequestEntityTooLarge
			}
			pg.message(w, r, &se, status, "Bad form", "The form could not be read: "+err.Error())
			return
		}
		g, z := r.PathValue("g"), r.PathValue("z")
		if strings.Contains(r.Pattern, "{g}") && (!controller.ValidName(g) || !controller.ValidName(z)) {
			pg.message(w, r, &se, http.StatusBadRequest, "Bad form", "invalid group or zone name (1-63 letters, digits, '.', '_', '-')")
			return
		}
		if !sameToken(r.PostForm.Get(csrfField), se.csrf) {
			pg.s.refused(se.p.Name, g, z, formAction(r), controller.RefusedForbidden, "csrf", "actor", se.p.Name)
			pg.message(w, r, &se, http.StatusForbidden, "Refused",
				"The form did not carry this session's security token (it may come from another site, or an old page): reload the page and try again.")
			return
		}
		h(w, r, &se, r.PostForm)
	}
}

// formAction is the audit action of a form post (the API's own names).
func formAction(r *http.Request) string {
	switch {
	case strings.HasSuffix(r.URL.Path, "/workers"):
		return controller.Change{MaxCount: nonEmpty(r.PostForm.Get("max_count")), Count: nonEmpty(r.PostForm.Get("count"))}.AuditAction()
	case strings.HasSuffix(r.URL.Path, "/rebalance"):
		return controller.AuditRebalance
	case strings.HasSuffix(r.URL.Path, "/autorebalance"):
		return controller.AuditAutoRebalance
	case strings.HasSuffix(r.URL.Path, "/signout"):
		return AuditSignout
	}
	return AuditSignin
}

// nonEmpty is a non-nil *int when s has something in it (only whether a
// field was given matters for the audit action).
func nonEmpty(s string) *int {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return new(int)
}

type signinBody struct {
	Token, Next, Text string
}

func (pg *pages) signinPage(w http.ResponseWriter, r *http.Request) {
	pg.showSignin(w, r, http.StatusOK, "", r.URL.Query().Get("next"))
}

func (pg *pages) showSignin(w http.ResponseWriter, r *http.Request, status int, errMsg, next string) {
	tok := token()
	setCookie(w, r, signinCookie, tok, 600)
	d := pg.data(nil, "Sign in", "signin")
	d.Error = errMsg
	d.Body = signinBody{Token: tok, Next: safeNext(next)}
	pg.render(w, "signin", status, d)
}

// safeNext is a page address under /ui/ to go to after signing in, else
// the Zones page.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, pagesPrefix) ||
		strings.Contains(next, "//") || strings.ContainsAny(next, "\\\x00\r\n") || u.Path == "/ui/signin" {
		return "/ui/zones"
	}
	return u.RequestURI()
}

// signin checks the sign-in form's CSRF token (the cookie's value) and the
// key: a wrong token is 403 (audited as console.signin when the key is
// good), an unknown key 401; a good one starts a session.
func (pg *pages) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	if err := r.ParseForm(); err != nil {
		pg.showSignin(w, r, http.StatusBadRequest, "the form could not be read: "+err.Error(), "")
		return
	}
	next := r.PostForm.Get("next")
	p, known := pg.s.keys.Authenticate(strings.TrimSpace(r.PostForm.Get("key")))
	c, err := r.Cookie(signinCookie)
	if err != nil || !sameToken(r.PostForm.Get(csrfField), c.Value) {
		if known {
			pg.s.refused(p.Name, "", "", AuditSignin, controller.RefusedForbidden, "csrf", "actor", p.Name)
		}
		pg.showSignin(w, r, http.StatusForbidden, "the sign-in form was not this browser's (cookies off, or an old page): try again", next)
		return
	}
	if !known {
		pg.showSignin(w, r, http.StatusUnauthorized, "unknown API key", next)
		return
	}
	se := pg.sess.create(p)
	setCookie(w, r, signinCookie, "", -1)
	setCookie(w, r, sessionCookie, se.id, int(pg.sess.ttl.Seconds()))
	pg.s.log.Info("signed in", "actor", p.Name, "role", string(p.Role))
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

func (pg *pages) signout(w http.ResponseWriter, r *http.Request, se *session, _ url.Values) {
	pg.sess.remove(se.id)
	setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
}

// --- calling the API's own handlers ------------------------------------------

// call runs the API handler h for p as if it had been sent method with the
// path values vals, the query q and the JSON body, and returns its status
// and body.
func (pg *pages) call(r *http.Request, p Principal, h handler, method string, vals map[string]string, q url.Values, body []byte) (int, []byte) {
	req := r.Clone(r.Context())
	req.Method = method
	req.URL = &url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	req.Header = http.Header{"Content-Type": {"application/json"}}
	for k, v := range vals {
		req.SetPathValue(k, v)
	}
	rec := httptest.NewRecorder()
	h(rec, req, p)
	return rec.Code, rec.Body.Bytes()
}

// apiError is the "error" of an API error body.
func apiError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return "the console could not do it"
	}
	return e.Error
}

// formJSON turns form fields into the API's JSON object. A field left
// empty is left out. A value that does not read as its kind is sent as a
// JSON string, so the API answers it as it answers a malformed body (400),
// after its own role check.
func formJSON(f url.Values, fields ...[2]string) []byte {
	obj := map[string]json.RawMessage{}
	for _, fk := range fields {
		name, kind := fk[0], fk[1]
		s := strings.TrimSpace(f.Get(name))
		if s == "" {
			continue
		}
		raw, _ := json.Marshal(s)
		switch kind {
		case "int":
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				raw = json.RawMessage(strconv.FormatInt(n, 10))
			}
		case "float":
			if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
				raw, _ = json.Marshal(v)
			}
		case "bool":
			switch strings.ToLower(s) {
			case "true", "on":
				raw = json.RawMessage("true")
			case "false", "off":
				raw = json.RawMessage("false")
			}
		}
		obj[name] = raw
	}
	b, _ := json.Marshal(obj)
	return b
}

// --- zones -------------------------------------------------------------------

// decisionView is a decision as the pages show it.
type decisionView struct {
	Action, Reason, When string
	From, To             int
}

// zoneRow is one group × zone. Full is the admin's view (the API answered
// with the max and the decisions); otherwise only Count is known.
type zoneRow struct {
	Group, Zone               string
	Count                     int
	Full                      bool
	MaxCount, Ready, Starting int
	LastDecision, LastScale   *decisionView
	Workers                   []workerView
	WorkersErr                string
	Err                       string
}

// ID is the row's anchor.
func (z zoneRow) ID() string { return zoneID(z.Group, z.Zone) }

// zoneID is a zone's anchor and the prefix of its live parts' ids.
func zoneID(group, zone string) string { return "zone:" + group + "/" + zone }

func (pg *pages) decision(d *lastDecision) *decisionView {
	if d == nil {
		return nil
	}
	return &decisionView{Action: string(d.Action), Reason: d.Reason, From: d.From, To: d.To, When: pg.when(d.At)}
}

// when is "12:00:05 UTC (3 s ago)".
func (pg *pages) when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	ago := pg.now().Sub(t).Round(time.Second)
	s := t.UTC().Format("15:04:05 UTC")
	if t.UTC().Format("2006-01-02") != pg.now().UTC().Format("2006-01-02") {
		s = t.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	switch {
	case ago < 0:
		return s
	case ago < time.Hour:
		return fmt.Sprintf("%s (%s ago)", s, ago)
	}
	return s
}

// zoneRows reads every zone (of group, when not "") through the API's GET
// workers, as p, and the live workers of the zones p administers.
func (pg *pages) zoneRows(r *http.Request, p Principal, group string) []zoneRow {
	var rows []zoneRow
	ctx, cancel := context.WithTimeout(r.Context(), liveTimeout)
	defer cancel()
	for _, z := range pg.s.c.Zones() {
		if group != "" && z.Group != group {
			continue
		}
		row := zoneRow{Group: z.Group, Zone: z.Zone, Count: z.Count}
		status, body := pg.call(r, p, pg.s.getWorkers, http.MethodGet, map[string]string{"g": z.Group, "z": z.Zone}, nil, nil)
		if status == http.StatusNotFound {
			continue // removed since Zones
		}
		var v struct {
			Count        int           `json:"count"`
			MaxCount     *int          `json:"max_count"`
			Ready        int           `json:"ready"`
			Starting     int           `json:"starting"`
			LastDecision *lastDecision `json:"last_decision"`
			LastScale    *lastDecision `json:"last_scale"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &v) != nil {
			row.Err = apiError(body)
			rows = append(rows, row)
			continue
		}
		row.Count = v.Count
		if v.MaxCount != nil {
			row.Full, row.MaxCount, row.Ready, row.Starting = true, *v.MaxCount, v.Ready, v.Starting
			row.LastDecision, row.LastScale = pg.decision(v.LastDecision), pg.decision(v.LastScale)
			ws, err := pg.s.c.Workers(ctx, z.Group, z.Zone)
			if err != nil {
				row.WorkersErr = err.Error()
			}
			row.Workers = pg.rates.views(z.Group, z.Zone, ws, pg.now())
		}
		rows = append(rows, row)
	}
	return rows
}

type zonesBody struct {
	Rows []zoneRow
	Full bool // some row is an admin's view: show the max and decision columns
}

func (pg *pages) zonesPage(w http.ResponseWriter, r *http.Request, se *session) {
	pg.showZones(w, r, se, http.StatusOK, "")
}

func (pg *pages) showZones(w http.ResponseWriter, r *http.Request, se *session, status int, errMsg string) {
	d := pg.data(se, "Zones and workers", "zones")
	d.Error, d.Live, d.LiveURL = errMsg, true, "/ui/zones"
	b := zonesBody{Rows: pg.zoneRows(r, se.p, "")}
	b.Full = slices.ContainsFunc(b.Rows, func(z zoneRow) bool { return z.Full })
	d.Body = b
	pg.render(w, "zones", status, d)
}

type groupBody struct {
	Group string
	Rows  []zoneRow
}

func (pg *pages) groupPage(w http.ResponseWriter, r *http.Request, se *session) {
	pg.showGroup(w, r, se, r.PathValue("g"), http.StatusOK, "")
}

func (pg *pages) showGroup(w http.ResponseWriter, r *http.Request, se *session, group string, status int, errMsg string) {
	if !controller.ValidName(group) {
		pg.message(w, r, se, http.StatusBadRequest, "No such group", "invalid group name (1-63 letters, digits, '.', '_', '-')")
		return
	}
	rows := pg.zoneRows(r, se.p, group)
	if len(rows) == 0 {
		pg.message(w, r, se, http.StatusNotFound, "No such group", "Group "+group+" has no zones (a group admin creates one with the API's PUT workers).")
		return
	}
	d := pg.data(se, "Group "+group, "group:"+group)
	d.Error, d.Live, d.LiveURL = errMsg, true, "/ui/groups/"+url.PathEscape(group)
	d.Body = groupBody{Group: group, Rows: rows}
	pg.render(w, "group", status, d)
}

// back shows the page a form came from again, with the API's refusal.
func (pg *pages) back(w http.ResponseWriter, r *http.Request, se *session, f url.Values, status int, msg string) {
	if f.Get("back") == "group" {
		pg.showGroup(w, r, se, r.PathValue("g"), status, msg)
		return
	}
	pg.showZones(w, r, se, status, msg)
}

// backURL is the page a form came from, at the zone's row.
func backURL(r *http.Request, f url.Values) string {
	g, z := r.PathValue("g"), r.PathValue("z")
	anchor := "#" + url.PathEscape(zoneID(g, z))
	if f.Get("back") == "group" {
		return "/ui/groups/" + url.PathEscape(g) + anchor
	}
	return "/ui/zones" + anchor
}

// postWorkers is Scale workers (count and max) and Save max (max only): PUT
// workers with the form's fields. The Group page's form also says what the
// count and max were when the page was drawn (count_was, max_was): a field
// the user left as it was is not sent, so Scale workers with a new count
// does not put back a max someone else has changed meanwhile (and is
// audited as the count it is). With neither changed it sends the count: a
// manual count, as pressed.
func (pg *pages) postWorkers(w http.ResponseWriter, r *http.Request, se *session, f url.Values) {
	g, z := r.PathValue("g"), r.PathValue("z")
	f = changedOnly(f)
	body := formJSON(f, [2]string{"max_count", "int"}, [2]string{"count", "int"})
	status, out := pg.call(r, se.p, pg.s.putWorkers, http.MethodPut, map[string]string{"g": g, "z": z}, nil, body)
	if status != http.StatusOK {
		pg.back(w, r, se, f, status, apiError(out))
		return
	}
	var v WorkersView
	_ = json.Unmarshal(out, &v)
	pg.sess.setFlash(se.id, fmt.Sprintf("%s/%s: count %d, max %d.", g, z, v.Count, v.MaxCount))
	http.Redirect(w, r, backURL(r, f), http.StatusSeeOther)
}

// changedOnly drops count and max_count when they equal count_was and
// max_was, keeping the count when both do.
func changedOnly(f url.Values) url.Values {
	same := func(k string) bool {
		was, ok := f[k+"_was"]
		return ok && len(was) > 0 && strings.TrimSpace(f.Get(k)) == strings.TrimSpace(was[0])
	}
	sameCount, sameMax := same("count"), same("max_count")
	out := maps.Clone(f)
	if sameMax && f.Get("count") != "" {
		delete(out, "max_count")
	}
	if sameCount && !sameMax && f.Get("max_count") != "" {
		delete(out, "count")
	}
	return out
}

// postRebalance is Rebalance and autoscale: POST rebalance.
func (pg *pages) postRebalance(w http.ResponseWriter, r *http.Request, se *session, f url.Values) {
	g, z := r.PathValue("g"), r.PathValue("z")
	status, out := pg.call(r, se.p, pg.s.postRebalance, http.MethodPost, map[string]string{"g": g, "z": z}, nil, nil)
	if status != http.StatusOK {
		pg.back(w, r, se, f, status, apiError(out))
		return
	}
	var d struct {
		Action   string `json:"action"`
		From, To int
		Reason   string `json:"reason"`
	}
	_ = json.Unmarshal(out, &d)
	pg.sess.setFlash(se.id, fmt.Sprintf("Rebalanced %s/%s: %s %d → %d (%s).", g, z, d.Action, d.From, d.To, d.Reason))
	http.Redirect(w, r, backURL(r, f), http.StatusSeeOther)
}

// --- audit -------------------------------------------------------------------

type auditRow struct {
	When, Actor, Group, Zone, Action, Error string
	Tags                                    []string // "key:value", sorted
}

type auditBody struct {
	Actor, Group, Zone, Action string
	Actions                    []string
	Rows                       []auditRow
	Denied                     bool
}

// auditActions are the actions the filter offers (the API's own names).
var auditActions = []string{controller.AuditAutoscale, controller.AuditMaxCount, controller.AuditCount,
	controller.AuditRebalance, controller.AuditPolicy, controller.AuditAutoRebalance, AuditSignin, AuditSignout}

func (pg *pages) auditPage(w http.ResponseWriter, r *http.Request, se *session) {
	q := r.URL.Query()
	b := auditBody{Actor: strings.TrimSpace(q.Get("actor")), Group: strings.TrimSpace(q.Get("group")),
		Zone: strings.TrimSpace(q.Get("zone")), Action: strings.TrimSpace(q.Get("action")), Actions: auditActions}
	aq := url.Values{"limit": {strconv.Itoa(pageAuditRows)}}
	if b.Actor != "" {
		aq.Set("limit", strconv.Itoa(MaxAuditLimit))
	}
	for k, v := range map[string]string{"group": b.Group, "zone": b.Zone, "action": b.Action} {
		if v != "" {
			aq.Set(k, v)
		}
	}
	d := pg.data(se, "Audit", "audit")
	status, out := pg.call(r, se.p, pg.s.getAudit, http.MethodGet, nil, aq, nil)
	var got struct {
		Entries []AuditEntryJSON `json:"entries"`
	}
	if status != http.StatusOK || json.Unmarshal(out, &got) != nil {
		d.Error, b.Denied = apiError(out), status == http.StatusForbidden
		d.Body = b
		pg.render(w, "audit", status, d)
		return
	}
	for _, e := range got.Entries {
		if b.Actor != "" && e.Actor != b.Actor {
			continue
		}
		if len(b.Rows) == pageAuditRows {
			break
		}
		row := auditRow{When: pg.when(e.At), Actor: e.Actor, Group: e.Group, Zone: e.Zone, Action: e.Action, Error: e.Error}
		for k, v := range e.Tags {
			row.Tags = append(row.Tags, k+":"+v)
		}
		slices.Sort(row.Tags)
		b.Rows = append(b.Rows, row)
	}
	d.Body, d.Live, d.LiveURL = b, true, r.URL.RequestURI()
	pg.render(w, "audit", http.StatusOK, d)
}

// --- config ------------------------------------------------------------------

type configBody struct {
	Enabled  bool
	Interval string
	Step     *AutoscaleConfigJSON
}

func (pg *pages) configPage(w http.ResponseWriter, r *http.Request, se *session) {
	pg.showConfig(w, r, se, http.StatusOK, "")
}

func (pg *pages) showConfig(w http.ResponseWriter, r *http.Request, se *session, status int, errMsg string) {
	if !se.p.MayConfigure() {
		if errMsg == "" {
			status, errMsg = http.StatusForbidden, "the Config page is for super admins"
		}
		pg.message(w, r, se, status, "Refused", errMsg)
		return
	}
	_, out := pg.call(r, se.p, pg.s.getAutoRebalance, http.MethodGet, nil, nil, nil)
	var ar AutoRebalanceJSON
	_ = json.Unmarshal(out, &ar)
	b := configBody{Enabled: ar.Enabled, Interval: strconv.FormatFloat(ar.IntervalSeconds, 'f', -1, 64)}
	if st, out := pg.call(r, se.p, pg.s.getAutoscaleConfig, http.MethodGet, nil, nil, nil); st == http.StatusOK {
		var sc AutoscaleConfigJSON
		if json.Unmarshal(out, &sc) == nil {
			b.Step = &sc
		}
	}
	d := pg.data(se, "Config", "config")
	d.Error, d.Live, d.LiveURL, d.Body = errMsg, true, "/ui/config", b
	pg.render(w, "config", status, d)
}

// postAutoRebalance is the Config page's Save: PUT autorebalance.
func (pg *pages) postAutoRebalance(w http.ResponseWriter, r *http.Request, se *session, f url.Values) {
	body := formJSON(f, [2]string{"enabled", "bool"}, [2]string{"interval_seconds", "float"})
	status, out := pg.call(r, se.p, pg.s.putAutoRebalance, http.MethodPut, nil, nil, body)
	if status != http.StatusOK {
		pg.showConfig(w, r, se, status, apiError(out))
		return
	}
	var ar AutoRebalanceJSON
	_ = json.Unmarshal(out, &ar)
	state := "off"
	if ar.Enabled {
		state = "on"
	}
	pg.sess.setFlash(se.id, fmt.Sprintf("Auto-rebalance scheduler %s, every %g s.", state, ar.IntervalSeconds))
	http.Redirect(w, r, "/ui/config", http.StatusSeeOther)
}
