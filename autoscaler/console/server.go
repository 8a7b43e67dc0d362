package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/api"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/serve"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// MaxBody is the largest request body the API reads.
const MaxBody = 64 << 10

// Audit query limits.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// liveTimeout bounds the discovery call of an admin's GET workers.
const liveTimeout = 2 * time.Second

// Options configure New. Controller, Store and Keys are required.
type Options struct {
	Controller *controller.Controller
	Store      store.Backend
	Keys       *Keys
	Health     *serve.Health // /readyz turns 503 while draining; a new one when nil
	Logger     *slog.Logger  // slog.Default() when nil
	// Step is the step policy's configuration the console runs with, shown
	// read-only at GET /api/v1/config/autoscale; nil: that endpoint is 404.
	Step *autoscaler.StepConfig
	// Pages configure the web pages under /ui/ (web.go).
	Pages PagesOptions
	// Faults are planted bugs (autoscaler/faults) for the self-test; nil in
	// every real run. The console API honours audit-readable-by-viewer.
	Faults faults.Set
}

// Server is the console's HTTP handler.
type Server struct {
	c      *controller.Controller
	st     store.Backend
	keys   *Keys
	health *serve.Health
	log    *slog.Logger
	mux    *http.ServeMux
	step   *autoscaler.StepConfig
	faults faults.Set
	// handler is mux behind serve.RejectNonCanonical: a path with an empty,
	// "." or ".." segment is a JSON 404, not the mux's redirect.
	handler http.Handler
}

var _ http.Handler = (*Server)(nil)

// New builds the handler.
func New(o Options) (*Server, error) {
	switch {
	case o.Controller == nil:
		return nil, errors.New("console: no controller")
	case o.Store == nil:
		return nil, errors.New("console: no store")
	case o.Keys == nil || o.Keys.Len() == 0:
		return nil, errors.New("console: no keys")
	}
	if o.Health == nil {
		o.Health = &serve.Health{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(newCollector(o.Controller)); err != nil {
		return nil, fmt.Errorf("console: register metrics: %w", err)
	}
	m := serve.ProbeMux(o.Health, o.Store.Ready, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s := &Server{c: o.Controller, st: o.Store, keys: o.Keys, health: o.Health, log: o.Logger, mux: m, step: o.Step,
		faults: o.Faults}

	routes := s.apiRoutes()
	for _, rt := range routes {
		m.HandleFunc(rt.path, s.methods(rt.handlers))
	}
	m.HandleFunc(PathIndex, s.methods(map[string]handler{http.MethodGet: serveIndex(routes)}))
	if !o.Pages.Off {
		pg, err := newPages(s, o.Pages)
		if err != nil {
			return nil, err
		}
		m.Handle(pagesPrefix, pg)
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && !o.Pages.Off && wantsHTML(r) {
			http.Redirect(w, r, pagesPrefix, http.StatusSeeOther)
			return
		}
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	s.handler = serve.RejectNonCanonical(m, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path+" (not a canonical path)")
	})
	return s, nil
}

// apiRoute is one path of the JSON API and its handlers by method.
type apiRoute struct {
	path     string
	handlers map[string]handler
}

// apiRoutes is the console's route table: every path of the JSON API, each
// registered with its methods and listed, in this order, by GET PathIndex.
func (s *Server) apiRoutes() []apiRoute {
	return []apiRoute{
		{"/api/v1/groups/{g}/zones/{z}/workers", map[string]handler{http.MethodGet: s.getWorkers, http.MethodPut: s.putWorkers}},
		{"/api/v1/groups/{g}/zones/{z}/rebalance", map[string]handler{http.MethodPost: s.postRebalance}},
		{"/api/v1/groups/{g}/zones/{z}/policy", map[string]handler{http.MethodGet: s.getPolicy, http.MethodPut: s.putPolicy}},
		{"/api/v1/config/autorebalance", map[string]handler{http.MethodGet: s.getAutoRebalance, http.MethodPut: s.putAutoRebalance}},
		{"/api/v1/config/autoscale", map[string]handler{http.MethodGet: s.getAutoscaleConfig}},
		{"/api/v1/audit", map[string]handler{http.MethodGet: s.getAudit}},
	}
}

// PathIndex is the API index: GET lists every path of the JSON API and its
// methods (IndexJSON), for any valid key, as Kubernetes' discovery lists its
// resources and verbs.
const PathIndex = "/api/v1"

// IndexJSON is the answer of GET PathIndex.
type IndexJSON struct {
	Routes []RouteJSON `json:"routes"`
}

// RouteJSON is one path of the API ({g} a group's name, {z} a zone's) and
// its methods, sorted.
type RouteJSON struct {
	Path    string   `json:"path"`
	Methods []string `json:"methods"`
}

func serveIndex(routes []apiRoute) handler {
	var idx IndexJSON
	for _, rt := range routes {
		idx.Routes = append(idx.Routes, RouteJSON{Path: rt.path, Methods: slices.Sorted(maps.Keys(rt.handlers))})
	}
	return func(w http.ResponseWriter, _ *http.Request, _ Principal) { writeJSON(w, http.StatusOK, idx) }
}

// ServeHTTP serves the API. A panic is logged and answered 500, never
// propagated.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
			writeError(w, http.StatusInternalServerError, "internal error")
		}
	}()
	s.handler.ServeHTTP(w, r)
}

// handler is an API handler for an authenticated caller.
type handler func(w http.ResponseWriter, r *http.Request, p Principal)

// methods authenticates the caller and dispatches on the method: 401 for a
// missing or unknown key, 405 (JSON) for an unknown method.
func (s *Server) methods(hs map[string]handler) http.HandlerFunc {
	allow := slices.Sorted(maps.Keys(hs))
	return func(w http.ResponseWriter, r *http.Request) {
		h, ok := hs[r.Method]
		if !ok {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; allowed: "+strings.Join(allow, ", "))
			return
		}
		p, ok := s.authenticate(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="scaleproof-ref console"`)
			writeError(w, http.StatusUnauthorized, "missing or unknown API key (Authorization: Bearer KEY)")
			return
		}
		h(w, r, p)
	}
}

func (s *Server) authenticate(r *http.Request) (Principal, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return Principal{}, false
	}
	return s.keys.Authenticate(strings.TrimSpace(h[len(prefix):]))
}

// zoneParams validates {g} and {z}; on failure it has written a 400.
func zoneParams(w http.ResponseWriter, r *http.Request) (group, zone string, ok bool) {
	group, zone = r.PathValue("g"), r.PathValue("z")
	switch {
	case !controller.ValidName(group):
		writeError(w, http.StatusBadRequest, "invalid group name (1-63 letters, digits, '.', '_', '-')")
		return "", "", false
	case !controller.ValidName(zone):
		writeError(w, http.StatusBadRequest, "invalid zone name (1-63 letters, digits, '.', '_', '-')")
		return "", "", false
	}
	return group, zone, true
}

// lastDecision is the API shape of a zone's last decision.
type lastDecision struct {
	Action autoscaler.Action `json:"action"`
	From   int               `json:"from"`
	To     int               `json:"to"`
	Reason string            `json:"reason"`
	At     time.Time         `json:"at"`
}

// WorkersView is GET workers for admins of the group.
type WorkersView struct {
	Group        string        `json:"group"`
	Zone         string        `json:"zone"`
	Count        int           `json:"count"`
	MaxCount     int           `json:"max_count"`
	Ready        int           `json:"ready"`
	Starting     int           `json:"starting"`
	LastDecision *lastDecision `json:"last_decision"`
	LastChange   *time.Time    `json:"last_change"`
	// LastScale is the last decision that changed the count (an up, a down,
	// or a forced set with its cause and actor); a later hold leaves it.
	LastScale *lastDecision `json:"last_scale,omitempty"`
	// Workers lists the zone's workers as last seen, each with "canary":
	// true for the zone's canary (capacity like any worker, not part of
	// the count); Ready and Starting above count the stable ones.
	Workers []controller.WorkerView `json:"workers"`
}

// WorkersCount is GET workers for everyone else.
type WorkersCount struct {
	Group string `json:"group"`
	Zone  string `json:"zone"`
	Count int    `json:"count"`
}

func fullView(v controller.ZoneView) WorkersView {
	out := WorkersView{Group: v.Group, Zone: v.Zone, Count: v.Count, MaxCount: v.MaxCount, Ready: v.Ready, Starting: v.Starting,
		Workers: v.Workers}
	if out.Workers == nil {
		out.Workers = []controller.WorkerView{}
	}
	out.LastDecision, out.LastScale = toLastDecision(v.LastDecision), toLastDecision(v.LastScale)
	if !v.LastChange.IsZero() {
		t := v.LastChange
		out.LastChange = &t
	}
	return out
}

// toLastDecision is d in the API's shape; nil for nil.
func toLastDecision(d *autoscaler.Decision) *lastDecision {
	if d == nil {
		return nil
	}
	return &lastDecision{Action: d.Action, From: d.From, To: d.To, Reason: d.Reason, At: d.At}
}

func (s *Server) getWorkers(w http.ResponseWriter, r *http.Request, p Principal) {
	group, zone, ok := zoneParams(w, r)
	if !ok {
		return
	}
	if !p.AdminOf(group) {
		v, err := s.c.Zone(group, zone)
		s.reply(w, r, WorkersCount{Group: v.Group, Zone: v.Zone, Count: v.Count}, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), liveTimeout)
	defer cancel()
	v, err := s.c.ZoneLive(ctx, group, zone)
	if errors.Is(err, controller.ErrDiscovery) {
		s.log.Warn("workers: discovery failed, showing the last seen readiness", "group", group, "zone", zone, "err", err)
		err = nil
	}
	s.reply(w, r, fullView(v), err)
}

// errBodyTooLarge: the body is over MaxBody.
var errBodyTooLarge = fmt.Errorf("body larger than %d KiB", MaxBody>>10)

// readJSON reads at most MaxBody bytes of r's body and decodes them into v
// (decodeStrict).
func readJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	if len(b) > MaxBody {
		return errBodyTooLarge
	}
	return decodeStrict(b, v)
}

// badBodyStatus is 413 for a body over MaxBody, else 400.
func badBodyStatus(err error) int {
	if errors.Is(err, errBodyTooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// typeWords names a Go type as a person typing a value would: int is "a
// whole number", float64 "a number".
func typeWords(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "text"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// valueWords is encoding/json's UnmarshalTypeError.Value ("string",
// "number 1e400", "bool", "array", "object") in words: a number that does
// not fit is "number X (not a whole number, or out of range)".
func valueWords(v string) string {
	switch {
	case v == "string":
		return "text"
	case v == "bool":
		return "true or false"
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case strings.HasPrefix(v, "number"):
		if n := strings.TrimSpace(strings.TrimPrefix(v, "number")); n != "" {
			return n + " (not a whole number, or out of range)"
		}
		return "a number"
	}
	return v
}

// decodeStrict decodes one JSON object into v: unknown fields, wrong types
// and trailing data are errors.
func decodeStrict(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return errors.New("empty body: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("field %s: want %s, got %s", te.Field, typeWords(te.Type), valueWords(te.Value))
		}
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

type workersRequest struct {
	MaxCount *int `json:"max_count"`
	Count    *int `json:"count"`
}

func (s *Server) putWorkers(w http.ResponseWriter, r *http.Request, p Principal) {
	group, zone, ok := zoneParams(w, r)
	if !ok {
		return
	}
	var req workersRequest
	err := readJSON(r, &req)
	ch := controller.Change{MaxCount: req.MaxCount, Count: req.Count}
	if !p.AdminOf(group) {
		// Refused whatever the body says; the body only names the action.
		s.forbidden(w, p, group, zone, ch.AuditAction(), "only a super admin or a group admin of "+group+" may change its workers")
		return
	}
	if err != nil {
		writeError(w, badBodyStatus(err), err.Error())
		return
	}
	if req.MaxCount == nil && req.Count == nil {
		writeError(w, http.StatusBadRequest, `empty request: give "max_count" and/or "count"`)
		return
	}
	v, err := s.c.Apply(r.Context(), p.Name, group, zone, ch)
	s.reply(w, r, fullView(v), err)
}

func (s *Server) postRebalance(w http.ResponseWriter, r *http.Request, p Principal) {
	group, zone, ok := zoneParams(w, r)
	if !ok {
		return
	}
	if !p.AdminOf(group) && !s.faults.On(faults.ViewerMayRebalance) {
		s.forbidden(w, p, group, zone, controller.AuditRebalance, "only a super admin or a group admin of "+group+" may rebalance")
		return
	}
	d, err := s.c.Rebalance(r.Context(), p.Name, group, zone)
	s.reply(w, r, d, err)
}

// AutoRebalanceJSON is the API shape of the scheduler configuration.
type AutoRebalanceJSON struct {
	Enabled         bool    `json:"enabled"`
	IntervalSeconds float64 `json:"interval_seconds"`
}

func toJSON(c store.AutoRebalance) AutoRebalanceJSON {
	return AutoRebalanceJSON{Enabled: c.Enabled, IntervalSeconds: c.Interval.Seconds()}
}

func (s *Server) getAutoRebalance(w http.ResponseWriter, _ *http.Request, _ Principal) {
	writeJSON(w, http.StatusOK, toJSON(s.c.AutoRebalance()))
}

func (s *Server) putAutoRebalance(w http.ResponseWriter, r *http.Request, p Principal) {
	if !p.MayConfigure() {
		s.forbidden(w, p, "", "", controller.AuditAutoRebalance, "only a super admin may change the auto-rebalance scheduler")
		return
	}
	var req struct {
		Enabled         *bool    `json:"enabled"`
		IntervalSeconds *float64 `json:"interval_seconds"`
	}
	err := readJSON(r, &req)
	if err != nil {
		writeError(w, badBodyStatus(err), err.Error())
		return
	}
	if req.Enabled == nil && req.IntervalSeconds == nil {
		writeError(w, http.StatusBadRequest, `empty request: give "enabled" and/or "interval_seconds"`)
		return
	}
	cfg := s.c.AutoRebalance()
	if req.Enabled != nil {
		cfg.Enabled = *req.Enabled
	}
	if req.IntervalSeconds != nil {
		secs, lo, hi := *req.IntervalSeconds, controller.MinInterval.Seconds(), controller.MaxInterval.Seconds()
		if !(secs >= lo && secs <= hi) {
			msg := fmt.Sprintf("interval_seconds: %g is outside [%g, %g]", secs, lo, hi)
			s.refused(p.Name, "", "", controller.AuditAutoRebalance, controller.RefusedInvalid, msg)
			writeError(w, http.StatusUnprocessableEntity, msg)
			return
		}
		cfg.Interval = api.FromSeconds(secs)
	}
	got, err := s.c.SetAutoRebalance(p.Name, cfg)
	s.reply(w, r, toJSON(got), err)
}

// AutoscaleConfigJSON is GET /api/v1/config/autoscale (autoscaler/api).
type AutoscaleConfigJSON = api.AutoscaleConfig

// getAutoscaleConfig answers any authenticated caller: the settings are not
// secret, and viewers see what the zones they read are scaled by.
func (s *Server) getAutoscaleConfig(w http.ResponseWriter, _ *http.Request, _ Principal) {
	if s.step == nil {
		writeError(w, http.StatusNotFound, "this console does not show its autoscaling configuration")
		return
	}
	c, ar := *s.step, s.c.AutoRebalance()
	writeJSON(w, http.StatusOK, AutoscaleConfigJSON{
		Policy: "step", UpCooldownSeconds: c.UpCooldown.Seconds(), DownCooldownSeconds: c.DownCooldown.Seconds(),
		TargetRPS: c.TargetRPS, HighFraction: c.HighFraction, MeanUpFraction: c.MeanUpFraction, LowFraction: c.LowFraction,
		LowRounds: c.LowRounds, StartupGraceSeconds: c.StartupGrace.Seconds(),
		IntervalSeconds: ar.Interval.Seconds(), SchedulerEnabled: ar.Enabled,
	})
}

// AuditEntryJSON is one entry of GET audit.
type AuditEntryJSON struct {
	ID     uint64            `json:"id"`
	At     time.Time         `json:"at"`
	Actor  string            `json:"actor"`
	Group  string            `json:"group"`
	Zone   string            `json:"zone"`
	Action string            `json:"action"`
	Tags   map[string]string `json:"tags"`
	Error  string            `json:"error,omitempty"`
}

func (s *Server) getAudit(w http.ResponseWriter, r *http.Request, p Principal) {
	q := r.URL.Query()
	aq := store.AuditQuery{Group: q.Get("group"), Zone: q.Get("zone"), Action: q.Get("action"), Limit: DefaultAuditLimit}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > MaxAuditLimit {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit: want an integer in 1..%d", MaxAuditLimit))
			return
		}
		aq.Limit = n
	}
	if !p.MayReadAudit() && !s.viewerReadsAudit(p) {
		writeError(w, http.StatusForbidden, "the audit log is for super admins and group admins")
		return
	}
	if p.Role == RoleGroupAdmin {
		if aq.Group != "" && !p.AdminOf(aq.Group) {
			writeError(w, http.StatusForbidden, "not a group admin of "+aq.Group)
			return
		}
		aq.Groups = p.Groups
	}
	es, err := s.st.Audit(aq)
	if err != nil {
		s.fail(w, r, fmt.Errorf("%w: %w", controller.ErrStore, err))
		return
	}
	out := struct {
		Entries []AuditEntryJSON `json:"entries"`
	}{Entries: make([]AuditEntryJSON, 0, len(es))}
	for _, e := range es {
		tags := e.Tags
		if tags == nil {
			tags = map[string]string{}
		}
		out.Entries = append(out.Entries, AuditEntryJSON{ID: e.ID, At: e.At, Actor: e.Actor, Group: e.Group,
			Zone: e.Zone, Action: e.Action, Tags: tags, Error: e.Error})
	}
	writeJSON(w, http.StatusOK, out)
}

// forbidden audits a refused change (error:forbidden, with the actor) and
// answers 403.
func (s *Server) forbidden(w http.ResponseWriter, p Principal, group, zone, action, msg string) {
	s.refused(p.Name, group, zone, action, controller.RefusedForbidden, string(p.Role), "action", action, "actor", p.Name)
	writeError(w, http.StatusForbidden, msg)
}

// refused audits a refused request (controller.Refused); a failed audit is
// logged "refused request not audited" with attrs (slog pairs), then "err".
func (s *Server) refused(actor, group, zone, action, reason, detail string, attrs ...any) {
	if err := s.c.Refused(actor, group, zone, action, reason, detail); err != nil {
		s.log.Error("refused request not audited", append(attrs, "err", err)...)
	}
}

// reply answers v as JSON with 200 when err is nil, else err as fail does.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// fail maps a controller or store error to its status.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ve *controller.ValidationError
	status, msg := http.StatusInternalServerError, "internal error"
	switch {
	case errors.As(err, &ve):
		status, msg = http.StatusUnprocessableEntity, ve.Error()
	case errors.Is(err, controller.ErrNotFound):
		status, msg = http.StatusNotFound, "no such zone (a group admin creates it with PUT)"
	case errors.Is(err, controller.ErrScale):
		status, msg = http.StatusBadGateway, "scale target unavailable: "+err.Error()
	case errors.Is(err, controller.ErrDiscovery):
		status, msg = http.StatusBadGateway, "discovery unavailable: "+err.Error()
	case errors.Is(err, store.ErrConflict):
		status, msg = http.StatusConflict, "the zone was changed by another console at the same time; read it again and retry: "+err.Error()
	case errors.Is(err, controller.ErrStore), errors.Is(err, store.ErrClosed):
		status, msg = http.StatusServiceUnavailable, "state store unavailable: "+err.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		status, msg = http.StatusServiceUnavailable, "request cancelled or timed out: "+err.Error()
	}
	if status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	writeError(w, status, msg)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// viewerReadsAudit is the audit-readable-by-viewer fault (a planted bug for
// the self-test): a viewer key reads the whole audit log.
func (s *Server) viewerReadsAudit(p Principal) bool {
	return p.Role == RoleViewer && s.faults.On(faults.AuditReadableByViewer)
}
