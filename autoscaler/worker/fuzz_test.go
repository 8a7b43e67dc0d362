package worker_test

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

	"github.com/scaleproof/scaleproof/autoscaler/worker"
)

// The worker's HTTP surface under any input: whatever the method, target,
// headers and body, it never panics, never answers 5xx, answers only the
// statuses an MCP server may (200 and 202 for JSON-RPC, 4xx for bad
// requests, 429 at the limit), and every JSON answer is a JSON-RPC message.
// Seeds: f.Add and testdata/fuzz; TestFuzzShort mutates them in the normal
// suite; `go test -fuzz FuzzWorkerRequest ./autoscaler/worker` explores.

var workerAllowed = []int{200, 202, 400, 404, 405, 406, 413, 415, 429}

// fuzzWorker is a worker whose calls return at once (a work call of any
// length does not hold the fuzzer) and whose log is kept.
func fuzzWorker(t testing.TB) http.Handler {
	w := worker.New(worker.Config{ID: "fuzz", MaxInflight: 4, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Wait: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	return w.Handler()
}

func checkWorkerRequest(t *testing.T, h http.Handler, method, target, contentType, accept string, body []byte) {
	raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: worker.test\r\nContent-Type: %s\r\nAccept: %s\r\nContent-Length: %d\r\n\r\n",
		method, target, contentType, accept, len(body))
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + string(body))))
	if err != nil || req.RequestURI == "*" {
		return // net/http answers these itself
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req = req.WithContext(ctx)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	what := fmt.Sprintf("%s %q (Content-Type %q, Accept %q) %q", method, target, contentType, accept, body)
	if !slices.Contains(workerAllowed, rec.Code) {
		t.Fatalf("%s: status %d: %s", what, rec.Code, rec.Body)
	}
	if req.URL.Path != "/mcp" || req.Method != http.MethodPost {
		return
	}
	ct := rec.Header().Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") && rec.Body.Len() > 0 && !jsonRPCResponses(rec.Body.Bytes()) {
		t.Fatalf("%s: %d %s is not a JSON-RPC response (or a batch of them)", what, rec.Code, rec.Body)
	}
}

// jsonRPCResponses reports whether b is one JSON-RPC 2.0 response or a
// non-empty array of them.
func jsonRPCResponses(b []byte) bool {
	type response struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	ok := func(m response) bool { return m.JSONRPC == "2.0" && (m.Result == nil) != (m.Error == nil) }
	var one response
	if json.Unmarshal(b, &one) == nil {
		return ok(one)
	}
	var batch []response
	if json.Unmarshal(b, &batch) != nil || len(batch) == 0 {
		return false
	}
	for _, m := range batch {
		if !ok(m) {
			return false
		}
	}
	return true
}

// FuzzWorkerRequest: any request to a worker.
func FuzzWorkerRequest(f *testing.F) {
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{"ms":5}}}`
	const mcpAccept = "application/json, text/event-stream"
	for _, s := range []struct{ method, target, ct, accept, body string }{
		{"POST", "/mcp", "application/json", mcpAccept, call},
		{"POST", "/mcp", "application/json", mcpAccept, `{"jsonrpc":"2.0","id":"x","method":"tools/list"}`},
		{"POST", "/mcp", "application/json", mcpAccept, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"work"}}`},
		{"POST", "/mcp", "application/json", mcpAccept, `[` + call + `,` + call + `]`},
		{"POST", "/mcp", "application/json", mcpAccept, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		{"POST", "/mcp", "application/json", mcpAccept, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{"ms":1e400}}}`},
		{"POST", "/mcp", "application/json", mcpAccept, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{"ms":-9223372036854775808}}}`},
		{"POST", "/mcp", "application/json", mcpAccept, `{"jsonrpc":"2.0","id":{},"method":"tools/call"}`},
		{"POST", "/mcp", "application/json", mcpAccept, `{"jsonrpc":"1.0","id":1,"method":"tools/call"}`},
		{"POST", "/mcp", "application/json", mcpAccept, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"POST", "/mcp", "text/plain", mcpAccept, call},
		{"POST", "/mcp", "application/json", "text/html", call},
		{"POST", "/mcp", "", "", call},
		{"POST", "/mcp?x=1", "application/json", mcpAccept, "\xef\xbb\xbf" + call},
		{"GET", "/mcp", "", "text/event-stream", ""},
		{"DELETE", "/mcp", "", mcpAccept, ""},
		{"POST", "//mcp", "application/json", mcpAccept, call},
		{"POST", "/mcp/", "application/json", mcpAccept, call},
		{"GET", "/metrics", "", "", ""},
		{"POST", "/readyz", "", "", ""},
	} {
		f.Add(s.method, s.target, s.ct, s.accept, []byte(s.body))
	}
	h := fuzzWorker(f)
	f.Fuzz(func(t *testing.T, method, target, contentType, accept string, body []byte) {
		checkWorkerRequest(t, h, method, target, contentType, accept, body)
	})
}

// TestFuzzShort is a short fuzz run in the normal suite: random mutations
// of FuzzWorkerRequest's seeds (SCALEPROOF_FUZZ_SEED replays a run).
func TestFuzzShort(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("SCALEPROOF_FUZZ_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SCALEPROOF_FUZZ_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 8))
	h := fuzzWorker(t)
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{"ms":5}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	}
	for i := range 400 {
		method, target := "POST", "/mcp"
		if i%10 == 0 {
			method = []string{"GET", "PUT", "DELETE", "POST"}[rng.IntN(4)]
			target = mutate(rng, target)
		}
		checkWorkerRequest(t, h, method, target, "application/json", "application/json, text/event-stream",
			[]byte(mutate(rng, bodies[rng.IntN(len(bodies))])))
		if t.Failed() {
			t.Fatalf("iteration %d failed (seed %d)", i, seed)
		}
	}
}

var tokens = []string{`{`, `}`, `[`, `]`, `"`, `:`, `,`, `null`, `true`, `0`, `-1`, `1e999`, `9223372036854775808`,
	`"id"`, `"method"`, `"params"`, `"arguments"`, `"ms"`, `"name"`, `"work"`, `\u0000`, "\x00", "\xff", "/", "..", "%"}

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
