package console_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// Fuzz targets for every request body, path parameter and query parameter
// of the console API (PUT workers is FuzzPutWorkers in console_test.go;
// FuzzAnyRequest also reaches the policy endpoints).
// Whatever comes in: no panic, no 5xx, only the statuses the API documents,
// a JSON error body, a refused change (403) and an invalid value (422)
// audited with the caller as actor, and nothing else audited but a change
// that was made. Seeds: f.Add below and testdata/fuzz; `go test` runs them,
// TestFuzzShort runs a few hundred mutations of them, and
// `go test -fuzz FuzzX ./autoscaler/console` explores further.

// allowed are the statuses the API answers when its store and platform work.
var allowed = []int{200, 400, 401, 403, 404, 405, 413, 422}

// answer runs one request against the rig and checks the answer.
func (r *rig) answer(t *testing.T, req *http.Request, caller string) *httptest.ResponseRecorder {
	t.Helper()
	if k, ok := keyOf[caller]; ok {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	before, err := r.store.Audit(store.AuditQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	what := fmt.Sprintf("%s %q by %q", req.Method, req.URL.RequestURI(), caller)
	if !slices.Contains(allowed, rec.Code) {
		t.Fatalf("%s: status %d (%s)", what, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: %d with Content-Type %q", what, rec.Code, ct)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s: %d body %q is not a JSON object", what, rec.Code, rec.Body)
	}
	if rec.Code >= 400 {
		if s, _ := m["error"].(string); s == "" {
			t.Fatalf("%s: %d without an error message: %s", what, rec.Code, rec.Body)
		}
	}
	if rec.Code == 401 && rec.Header().Get("WWW-Authenticate") == "" {
		t.Fatalf("%s: 401 without WWW-Authenticate", what)
	}
	after, err := r.store.Audit(store.AuditQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	grew := len(after) > 0 && (len(before) == 0 || after[0].ID != before[0].ID)
	mutating := req.Method == http.MethodPut || req.Method == http.MethodPost
	switch {
	case rec.Code == 403 && mutating:
		if !grew || after[0].Actor != caller || after[0].Tags["error"] != "forbidden" {
			t.Fatalf("%s: refused (403) but the last audit entry is %+v", what, after)
		}
	case rec.Code == 422:
		if !grew || after[0].Actor != caller || after[0].Tags["error"] != "invalid" {
			t.Fatalf("%s: invalid (422) but the last audit entry is %+v", what, after)
		}
	case rec.Code == 403 && grew:
		if after[0].Actor != caller || after[0].Tags["error"] != "forbidden" {
			t.Fatalf("%s: refused read audited as %+v", what, after[0])
		}
	case rec.Code != 200 && grew:
		t.Fatalf("%s: %d audited as %+v", what, rec.Code, after[0])
	}
	return rec
}

var callers = []string{"root", "ga", "gb", "v", "m", "unknown", "none"}

func checkAutoRebalance(t *testing.T, r *rig, body []byte, caller string) {
	req := httptest.NewRequest(http.MethodPut, "/api/v1/config/autorebalance", bytes.NewReader(body))
	rec := r.answer(t, req, caller)
	if rec.Code == 200 {
		var got struct {
			Enabled         *bool    `json:"enabled"`
			IntervalSeconds *float64 `json:"interval_seconds"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Enabled == nil || got.IntervalSeconds == nil ||
			!(*got.IntervalSeconds > 0 && *got.IntervalSeconds <= 3600) {
			t.Fatalf("PUT autorebalance %q: 200 with %s", body, rec.Body)
		}
	}
}

// FuzzPutAutoRebalance: the scheduler configuration's body.
func FuzzPutAutoRebalance(f *testing.F) {
	for _, s := range []struct{ body, caller string }{
		{`{"enabled": true, "interval_seconds": 60}`, "root"},
		{`{"interval_seconds": 0.000000001}`, "root"},
		{`{"interval_seconds": 1e308}`, "root"},
		{`{"interval_seconds": -0}`, "root"},
		{`{"interval_seconds": 3600.0000001}`, "root"},
		{`{"enabled": null}`, "root"},
		{`{"enabled": 1}`, "root"},
		{`{"enabled": false}{}`, "root"},
		{`{"enabled": false, "enabled": true}`, "root"},
		{`{"enabled": true}`, "ga"},
		{`{"enabled": true}`, "v"},
		{`{"enabled": true}`, "none"},
		{"\x00", "root"},
	} {
		f.Add([]byte(s.body), s.caller)
	}
	r := newRig(f)
	f.Fuzz(func(t *testing.T, body []byte, caller string) { checkAutoRebalance(t, r, body, caller) })
}

func checkPutPolicy(t *testing.T, r *rig, body []byte, caller string) {
	req := httptest.NewRequest(http.MethodPut, "/api/v1/groups/g1/zones/a/policy", bytes.NewReader(body))
	r.answer(t, req, caller)
	// Whatever policy the zone now has, a round on it works or fails
	// without a 5xx or a panic.
	r.answer(t, httptest.NewRequest(http.MethodPost, "/api/v1/groups/g1/zones/a/rebalance", nil), "root")
	r.answer(t, httptest.NewRequest(http.MethodGet, "/api/v1/groups/g1/zones/a/policy", nil), caller)
}

// FuzzPutPolicy: the zone policy's body (step, or hpa with its settings),
// followed by a rebalance under the policy it left.
func FuzzPutPolicy(f *testing.F) {
	for _, s := range []struct{ body, caller string }{
		{`{"policy": "step"}`, "ga"},
		{`{"policy": "hpa", "hpa": {"query": "sum(up)", "threshold": 5}}`, "ga"},
		{`{"policy": "hpa", "hpa": {"query": "sum(up)", "threshold": 0}}`, "root"},
		{`{"policy": "hpa", "hpa": {"query": "sum(up)", "threshold": -1e308}}`, "root"},
		{`{"policy": "hpa", "hpa": {"query": "", "threshold": 1}}`, "root"},
		{`{"policy": "hpa", "hpa": {"query": "%s %s %s $group $zone", "threshold": 1}}`, "root"},
		{`{"policy": "hpa"}`, "root"},
		{`{"policy": "step", "hpa": {}}`, "root"},
		{`{"policy": "none"}`, "root"},
		{`{"policy": "hpa", "hpa": {"query": "x", "threshold": 1, "extra": true}}`, "root"},
		{`{"policy": "step"}`, "v"},
		{`{"policy": "step"}`, "gb"},
	} {
		f.Add([]byte(s.body), s.caller)
	}
	r := newRig(f)
	f.Fuzz(func(t *testing.T, body []byte, caller string) { checkPutPolicy(t, r, body, caller) })
}

func checkAuditQuery(t *testing.T, r *rig, query, caller string) {
	req := httptest.NewRequest(http.MethodGet, "/api/v1/audit", nil)
	req.URL.RawQuery = query
	rec := r.answer(t, req, caller)
	if rec.Code != 200 {
		return
	}
	var got struct {
		Entries []AuditEntry `json:"entries"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Entries == nil {
		t.Fatalf("GET audit?%s: 200 with %s", query, rec.Body)
	}
	q, _ := url.ParseQuery(query)
	limit := 100
	if l := q.Get("limit"); l != "" {
		limit, _ = strconv.Atoi(l)
	}
	if len(got.Entries) > limit {
		t.Fatalf("GET audit?%s: %d entries over the limit %d", query, len(got.Entries), limit)
	}
	for _, e := range got.Entries {
		if caller == "ga" && e.Group != "g1" {
			t.Fatalf("GET audit?%s by ga (admin of g1): an entry of group %q", query, e.Group)
		}
	}
}

// AuditEntry is what GET audit lists.
type AuditEntry struct {
	ID     uint64            `json:"id"`
	Group  string            `json:"group"`
	Action string            `json:"action"`
	Tags   map[string]string `json:"tags"`
}

// FuzzAuditQuery: the audit log's query parameters.
func FuzzAuditQuery(f *testing.F) {
	for _, s := range []struct{ query, caller string }{
		{"group=g1&zone=a&action=workers.count&limit=5", "root"},
		{"limit=1000", "root"},
		{"limit=1001", "root"},
		{"limit=-1", "root"},
		{"limit=%2B5", "root"},
		{"limit=9223372036854775808", "root"},
		{"limit=1&limit=2000", "root"},
		{"group=g2", "ga"},
		{"group=g1&group=g2", "ga"},
		{"group=", "ga"},
		{"group=%00&zone=%ff", "root"},
		{"action=" + strings.Repeat("x", 5000), "root"},
		{"%zz", "root"},
		{";;;", "v"},
	} {
		f.Add(s.query, s.caller)
	}
	r := newRig(f)
	f.Fuzz(func(t *testing.T, query, caller string) { checkAuditQuery(t, r, query, caller) })
}

func zoneRequest(method, group, zone, leaf string) *http.Request {
	path := "/api/v1/groups/" + escape(group) + "/zones/" + escape(zone) + "/" + leaf
	req := httptest.NewRequest(method, "http://console.test/", nil)
	req.URL.Path, req.URL.RawPath = "/api/v1/groups/"+group+"/zones/"+zone+"/"+leaf, path
	req.RequestURI = path
	return req
}

func checkRebalance(t *testing.T, r *rig, group, zone, caller string) {
	rec := r.answer(t, zoneRequest(http.MethodPost, group, zone, "rebalance"), caller)
	if rec.Code == 200 && !(group == "g1" && zone == "a") {
		t.Fatalf("POST rebalance %q/%q: 200 on a zone nobody created: %s", group, zone, rec.Body)
	}
}

// FuzzRebalance: the rebalance path's group and zone.
func FuzzRebalance(f *testing.F) {
	for _, s := range []struct{ group, zone, caller string }{
		{"g1", "a", "ga"}, {"g1", "a", "v"}, {"g1", "b", "root"}, {"g2", "a", "ga"},
		{"..", "a", "root"}, {"g1", "", "root"}, {"g1/../g1", "a", "root"}, {"g1%2f", "a", "root"},
		{"-g", "a", "root"}, {strings.Repeat("g", 64), "a", "root"}, {"g1", "a\x00", "root"}, {"g\u00e9", "a", "ga"},
	} {
		f.Add(s.group, s.zone, s.caller)
	}
	r := newRig(f)
	f.Fuzz(func(t *testing.T, group, zone, caller string) { checkRebalance(t, r, group, zone, caller) })
}

func checkGetWorkers(t *testing.T, r *rig, group, zone, caller string) {
	rec := r.answer(t, zoneRequest(http.MethodGet, group, zone, "workers"), caller)
	if rec.Code == 200 && !(group == "g1" && zone == "a") {
		t.Fatalf("GET workers %q/%q: 200 on a zone nobody created: %s", group, zone, rec.Body)
	}
}

// FuzzGetWorkers: the workers path's group and zone, read by every role.
func FuzzGetWorkers(f *testing.F) {
	for _, s := range []struct{ group, zone, caller string }{
		{"g1", "a", "v"}, {"g1", "a", "root"}, {"g1", "nope", "m"}, {"", "", "root"}, {"g1", "a%20", "ga"},
		{"G1", "A", "root"}, {"g1", ".", "root"}, {"g1", "a.", "root"}, {"g1", "a/policy", "ga"},
	} {
		f.Add(s.group, s.zone, s.caller)
	}
	r := newRig(f)
	f.Fuzz(func(t *testing.T, group, zone, caller string) { checkGetWorkers(t, r, group, zone, caller) })
}

func checkAnyRequest(t *testing.T, r *rig, method, target string, body []byte, caller string) {
	raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: console.test\r\nContent-Length: %d\r\n\r\n", method, target, len(body))
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + string(body))))
	if err != nil {
		return // net/http answers 400 itself before any handler runs
	}
	req.RemoteAddr = "192.0.2.1:1234"
	if p := req.URL.Path; (p == "/metrics" || p == "/readyz" || p == "/livez") && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
		rec := httptest.NewRecorder() // plain-text endpoints
		r.h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("%s %s: %d", req.Method, target, rec.Code)
		}
		return
	}
	if strings.HasPrefix(req.URL.Path, "/ui/") { // the web pages (HTML; web_test.go checks them)
		rec := httptest.NewRecorder()
		r.h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s: %d", req.Method, target, rec.Code)
		}
		return
	}
	r.answer(t, req, caller)
}

// FuzzAnyRequest: any method, request target and body, as net/http parses
// them off the wire.
func FuzzAnyRequest(f *testing.F) {
	for _, s := range []struct{ method, target, body, caller string }{
		{"PUT", "/api/v1/groups/g1/zones/a/workers", `{"count": 2}`, "ga"},
		{"PUT", "/api/v1/groups/g1/zones/a/workers?count=3", `{"max_count": 2}`, "ga"},
		{"POST", "/api/v1/groups/g1/zones/a/workers", `{"count": 2}`, "root"},
		{"GET", "/api/v1/groups/g1/zones/a/workers/", ``, "root"},
		{"GET", "/api/v1/groups/g1/zones/a", ``, "root"},
		{"GET", "//api/v1/audit", ``, "root"},
		{"GET", "/api/v1/audit/../config/autorebalance", ``, "root"},
		{"PUT", "/api/v1/config/autorebalance", `{"enabled": true}`, "ga"},
		{"DELETE", "/api/v1/config/autorebalance", ``, "root"},
		{"OPTIONS", "*", ``, "root"},
		{"GET", "http://evil.test/api/v1/audit", ``, "root"},
		{"PATCH", "/api/v1/groups/%67%31/zones/a/workers", `{}`, "ga"},
		{"POST", "/api/v1/groups/g1/zones/a/rebalance?x=%", ``, "ga"},
		{"HEAD", "/api/v1/audit", ``, "v"},
		{"GET", "/", ``, "none"},
		{"PUT", "/api/v1/groups/g1/zones/a/policy", `{"policy": "hpa", "hpa": {"query": "sum(up)", "threshold": 2}}`, "ga"},
		{"GET", "/api/v1/groups/g1/zones/a/policy", ``, "v"},
		{"POST", "/ui/groups/g1/zones/a/workers", `csrf=x&count=2`, "ga"},
		{"GET", "/ui/zones", ``, "none"},
	} {
		f.Add(s.method, s.target, []byte(s.body), s.caller)
	}
	r := newRig(f)
	f.Fuzz(func(t *testing.T, method, target string, body []byte, caller string) {
		checkAnyRequest(t, r, method, target, body, caller)
	})
}

// TestFuzzShort is a short fuzz run inside the normal suite (no -fuzz): a
// few hundred random mutations of each target's seeds, each checked like
// the fuzz targets check theirs. The seed is logged; SCALEPROOF_FUZZ_SEED
// replays a run.
func TestFuzzShort(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("SCALEPROOF_FUZZ_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SCALEPROOF_FUZZ_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	const n = 300
	r := newRig(t)
	bodies := []string{`{"enabled": true, "interval_seconds": 60}`, `{"count": 2, "max_count": 3}`, `{"max_count": 1}`, `{}`, `null`}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	for i := range n {
		caller := pick(callers)
		switch i % 7 {
		case 6:
			checkPutPolicy(t, r, []byte(mutate(rng, pick([]string{`{"policy": "step"}`, `{"policy": "hpa", "hpa": {"query": "sum(up)", "threshold": 5}}`}))), caller)
		case 0:
			checkAutoRebalance(t, r, []byte(mutate(rng, pick(bodies))), caller)
		case 1:
			checkAuditQuery(t, r, mutate(rng, pick([]string{"group=g1&zone=a&limit=5", "limit=1000", "action=workers.count"})), caller)
		case 2:
			checkRebalance(t, r, mutate(rng, "g1"), mutate(rng, "a"), caller)
		case 3:
			checkGetWorkers(t, r, mutate(rng, "g1"), mutate(rng, "a"), caller)
		case 4:
			checkAnyRequest(t, r, pick([]string{"GET", "PUT", "POST", "DELETE"}),
				mutate(rng, pick([]string{"/api/v1/groups/g1/zones/a/workers", "/api/v1/audit?limit=3", "/api/v1/config/autorebalance", "/api/v1/groups/g1/zones/a/rebalance"})),
				[]byte(mutate(rng, pick(bodies))), caller)
		case 5:
			req := httptest.NewRequest(http.MethodPut, workers, strings.NewReader(mutate(rng, pick(bodies))))
			r.answer(t, req, caller)
		}
		if t.Failed() {
			t.Fatalf("iteration %d failed (seed %d)", i, seed)
		}
	}
}

// tokens are inserted by mutate: JSON and path syntax, edge numbers, bytes
// that break parsers.
var tokens = []string{`{`, `}`, `[`, `]`, `"`, `:`, `,`, `null`, `true`, `0`, `-1`, `1e999`, `9223372036854775808`,
	`"count"`, `"max_count"`, `"enabled"`, `"interval_seconds"`, `\u0000`, "\x00", "\xff", "%", "%2F", "/", "..", "&", "=", "?", "#", " ",
	strings.Repeat("a", 100)}

// mutate applies 1 to 3 random edits to s.
func mutate(rng *rand.Rand, s string) string {
	b := []byte(s)
	for range 1 + rng.IntN(3) {
		switch op := rng.IntN(5); {
		case op == 0 && len(b) > 0: // flip a byte
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		case op == 1: // insert a token
			i := rng.IntN(len(b) + 1)
			b = slices.Insert(b, i, []byte(tokens[rng.IntN(len(tokens))])...)
		case op == 2 && len(b) > 0: // delete a range
			i := rng.IntN(len(b))
			b = slices.Delete(b, i, i+1+rng.IntN(len(b)-i))
		case op == 3 && len(b) > 0: // duplicate a range
			i := rng.IntN(len(b))
			j := i + 1 + rng.IntN(len(b)-i)
			b = slices.Insert(b, j, slices.Clone(b[i:j])...)
		default: // truncate
			b = b[:rng.IntN(len(b)+1)]
		}
	}
	return string(b)
}
