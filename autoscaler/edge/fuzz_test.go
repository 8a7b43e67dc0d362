package edge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/edge"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/autoscaler/worker"
)

// The edge under any input, with a real worker (autoscaler/worker) behind it
// in group g1 zone a: no panic, never a 5xx (the worker is up), only the
// statuses of the edge's contract or the worker's, and every error the edge
// makes itself is a JSON-RPC error. Seeds: f.Add and testdata/fuzz;
// TestFuzzShort mutates them in the normal suite; `go test -fuzz FuzzEdge...
// ./autoscaler/edge` explores.

var edgeAllowed = []int{200, 202, 400, 404, 405, 406, 413, 415, 429}

type fuzzEdge struct {
	h  http.Handler
	ts *httptest.Server
}

func newFuzzEdge(t testing.TB) *fuzzEdge {
	w := worker.New(worker.Config{ID: "w1", MaxInflight: 64, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Wait: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	ws := httptest.NewServer(w.Handler())
	t.Cleanup(ws.Close)
	disc := &fakeDiscovery{}
	disc.set(nil, fleet.Zone{Group: "g1", Zone: "a", Endpoints: []fleet.Endpoint{{ID: "w1", Addr: ws.Listener.Addr().String(), Ready: true}}},
		fleet.Zone{Group: "g1", Zone: "empty", Endpoints: []fleet.Endpoint{}})
	tr := edge.NewTransport()
	t.Cleanup(tr.CloseIdleConnections)
	e, err := edge.New(edge.Config{Discovery: disc, Transport: tr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &fuzzEdge{h: e.Handler()}
}

func (fe *fuzzEdge) check(t *testing.T, method, target, contentType string, body []byte) {
	raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: edge.test\r\nContent-Type: %s\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n",
		method, target, contentType, len(body))
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + string(body))))
	if err != nil || req.RequestURI == "*" {
		return // net/http answers these itself
	}
	what := fmt.Sprintf("%s %q %q", method, target, body)
	if p := req.URL.Path; p == "/metrics" || p == "/readyz" || p == "/livez" {
		if method == http.MethodGet || method == http.MethodHead {
			return // plain-text endpoints
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	fe.h.ServeHTTP(rec, req.WithContext(ctx))
	if rec.Code == 503 && req.URL.Path != path {
		// The documented answer for a zone without a ready worker, which
		// is also what a zone discovery does not list gets (it may be one
		// the edge has not discovered yet): retry later.
		if rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "no ready worker") {
			t.Fatalf("%s: 503 without Retry-After 1 and the reason: %s", what, rec.Body)
		}
		return
	}
	if !slices.Contains(edgeAllowed, rec.Code) {
		t.Fatalf("%s: status %d: %s", what, rec.Code, rec.Body)
	}
	if rec.Code == 404 || rec.Code == 405 || rec.Code == 413 {
		var e struct {
			JSONRPC string `json:"jsonrpc"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.JSONRPC != "2.0" || e.Error.Code != edge.CodeServerError || e.Error.Message == "" {
			t.Fatalf("%s: %d with %q, want a JSON-RPC error", what, rec.Code, rec.Body)
		}
	}
}

// FuzzEdgeCall: the group and zone of the call path, and the call's body.
func FuzzEdgeCall(f *testing.F) {
	for _, s := range []struct{ group, zone, body string }{
		{"g1", "a", call},
		{"g1", "a", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{"ms":"x"}}}`},
		{"g1", "a", `{"jsonrpc":"2.0","id":[1],"method":"tools/call"}`},
		{"g1", "a", `not json`},
		{"g1", "a", ``},
		{"g1", "empty", call},
		{"g1", "nope", call},
		{"..", "a", call},
		{"g1", "a/../a", call},
		{"g 1", "a", call},
		{strings.Repeat("g", 64), "a", call},
		{"g1", "a\x00", call},
		{"", "", call},
	} {
		f.Add(s.group, s.zone, []byte(s.body))
	}
	fe := newFuzzEdge(f)
	f.Fuzz(func(t *testing.T, group, zone string, body []byte) {
		fe.check(t, http.MethodPost, "/g/"+escape(group)+"/z/"+escape(zone)+"/mcp", "application/json", body)
	})
}

// FuzzEdgeRequest: any method and request target.
func FuzzEdgeRequest(f *testing.F) {
	for _, s := range []struct{ method, target, body string }{
		{"POST", "/g/g1/z/a/mcp", call},
		{"GET", "/g/g1/z/a/mcp", ""},
		{"POST", "/g/g1/z/a/mcp/", call},
		{"POST", "//g/g1/z/a/mcp", call},
		{"POST", "/g/g1/z/./a/mcp", call},
		{"POST", "/g/g1/z/%61/mcp", call},
		{"POST", "/g/g1/z/a%2F/mcp", call},
		{"POST", "/g/g1/z/a/mcp?x=%zz", call},
		{"POST", "http://other.test/g/g1/z/a/mcp", call},
		{"PUT", "/", ""},
		{"POST", "/metrics", ""},
	} {
		f.Add(s.method, s.target, []byte(s.body))
	}
	fe := newFuzzEdge(f)
	f.Fuzz(func(t *testing.T, method, target string, body []byte) {
		fe.check(t, method, target, "application/json", body)
	})
}

// TestFuzzShort is a short fuzz run in the normal suite: random mutations
// of the seeds (SCALEPROOF_FUZZ_SEED replays a run).
func TestFuzzShort(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("SCALEPROOF_FUZZ_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SCALEPROOF_FUZZ_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	fe := newFuzzEdge(t)
	for i := range 300 {
		switch i % 3 {
		case 0:
			fe.check(t, http.MethodPost, "/g/"+escape(mutate(rng, "g1"))+"/z/"+escape(mutate(rng, "a"))+"/mcp", "application/json", []byte(call))
		case 1:
			fe.check(t, http.MethodPost, path, "application/json", []byte(mutate(rng, call)))
		case 2:
			fe.check(t, []string{"GET", "POST", "PUT", "DELETE"}[rng.IntN(4)], mutate(rng, path), "application/json", []byte(call))
		}
		if t.Failed() {
			t.Fatalf("iteration %d failed (seed %d)", i, seed)
		}
	}
}

// escape percent-encodes every byte outside the unreserved set.
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

var tokens = []string{`{`, `}`, `[`, `]`, `"`, `:`, `,`, `null`, `0`, `-1`, `1e999`, `"id"`, `"method"`, `"params"`,
	"\x00", "\xff", "/", "..", ".", "%", "%2F", "?", "#", " "}

// mutate applies 1 to 3 random edits to s.
func mutate(rng *rand.Rand, s string) string {
	b := []byte(s)
	for range 1 + rng.IntN(3) {
		switch op := rng.IntN(5); {
		case op == 0 && len(b) > 0:
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		case op == 1:
			b = slices.Insert(b, rng.IntN(len(b)+1), []byte(tokens[rng.IntN(len(tokens))])...)
		case op == 2 && len(b) > 0:
			i := rng.IntN(len(b))
			b = slices.Delete(b, i, i+1+rng.IntN(len(b)-i))
		case op == 3 && len(b) > 0:
			i := rng.IntN(len(b))
			j := i + 1 + rng.IntN(len(b)-i)
			b = slices.Insert(b, j, slices.Clone(b[i:j])...)
		default:
			b = b[:rng.IntN(len(b)+1)]
		}
	}
	return string(b)
}
