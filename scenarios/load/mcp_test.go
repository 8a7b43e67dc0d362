package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rpcRequest is what a test server reads from MCPToolCall.
type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"params"`
}

func readRPC(t testing.TB, r *http.Request) rpcRequest {
	var req rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		t.Errorf("server: decode request: %v", err)
	}
	return req
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, body)
}

func okBody(id int64) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`, id)
}

func TestMCPToolCallClassification(t *testing.T) {
	date := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		handler    func(t *testing.T, w http.ResponseWriter, req rpcRequest)
		class      Class
		status     int
		retryAfter time.Duration
		errHas     string
	}{
		{name: "ok", class: ClassOK, status: 200, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, okBody(req.ID))
		}},
		{name: "ok without isError", class: ClassOK, status: 200, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}`, req.ID))
		}},
		{name: "ok as event stream after a notification", class: ClassOK, status: 200, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
			fmt.Fprintf(w, "id: 7\r\ndata: %s\r\n\r\n", okBody(req.ID))
		}},
		{name: "429 delta seconds", class: Class429, status: 429, retryAfter: 2 * time.Second, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		}},
		{name: "429 HTTP date", class: Class429, status: 429, retryAfter: 3 * time.Second, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Date", date.Format(http.TimeFormat))
			w.Header().Set("Retry-After", date.Add(3*time.Second).Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
		}},
		{name: "429 without Retry-After", class: Class429, status: 429, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.WriteHeader(http.StatusTooManyRequests)
		}},
		{name: "404", class: Class4xx, status: 404, errHas: "404", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			http.NotFound(w, nil)
		}},
		{name: "401", class: Class4xx, status: 401, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.WriteHeader(http.StatusUnauthorized)
		}},
		{name: "500", class: Class5xx, status: 500, errHas: "500", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.WriteHeader(http.StatusInternalServerError)
		}},
		{name: "502 names the JSON-RPC error the proxy answered", class: Class5xx, status: 502, errHas: "502 Bad Gateway: worker w-2 failed: EOF", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"error":{"code":-32000,"message":"worker w-2 failed: EOF"}}`, req.ID)
		}},
		{name: "403 names the JSON-RPC error", class: Class4xx, status: 403, errHas: "403 Forbidden: role viewer may not", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"error":{"code":-32001,"message":"role viewer may not call tools"}}`, req.ID)
		}},
		{name: "503 with a body that is not JSON-RPC: the status line only", class: Class5xx, status: 503, errHas: "503 Service Unavailable", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "upstream connect error")
		}},
		{name: "503", class: Class5xx, status: 503, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}},
		{name: "503 with Retry-After (edge: no ready worker)", class: Class5xx, status: 503, retryAfter: time.Second, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}},
		{name: "302 redirect not followed", class: ClassBadResponse, status: 302, errHas: "/elsewhere", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound)
		}},
		{name: "non-JSON", class: ClassBadResponse, status: 200, errHas: "not a JSON-RPC response", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html>hello</html>")
		}},
		{name: "truncated JSON", class: ClassBadResponse, status: 200, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, okBody(req.ID)[:30])
		}},
		{name: "truncated body (short of Content-Length)", class: ClassBadResponse, status: 200, errHas: "truncated", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			body := okBody(req.ID)
			w.Header().Set("Content-Length", fmt.Sprint(len(body)+50))
			writeJSON(w, body)
		}},
		{name: "truncated event stream", class: ClassBadResponse, status: 200, errHas: "truncated", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s", okBody(req.ID)[:40])
		}},
		{name: "event stream without response", class: ClassBadResponse, status: 200, errHas: "without a response", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, ": keep-alive\n\n")
		}},
		{name: "body over limit", class: ClassBadResponse, status: 200, errHas: "over", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, strings.Repeat(" ", MaxResponseBytes)+okBody(req.ID))
		}},
		{name: "wrong id", class: ClassBadResponse, status: 200, errHas: "id", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, okBody(req.ID+1))
		}},
		{name: "missing result", class: ClassBadResponse, status: 200, errHas: "no result", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d}`, req.ID))
		}},
		{name: "null result", class: ClassBadResponse, status: 200, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":null}`, req.ID))
		}},
		{name: "result not an object", class: ClassBadResponse, status: 200, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":[1]}`, req.ID))
		}},
		{name: "not JSON-RPC 2.0", class: ClassBadResponse, status: 200, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"id":%d,"result":{}}`, req.ID))
		}},
		{name: "result and error", class: ClassBadResponse, status: 200, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{},"error":{"code":1,"message":"x"}}`, req.ID))
		}},
		{name: "JSON-RPC error", class: ClassJSONRPCError, status: 200, errHas: "-32602", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32602,"message":"unknown tool"}}`, req.ID))
		}},
		{name: "JSON-RPC error with null id", class: ClassJSONRPCError, status: 200, handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)
		}},
		{name: "isError result", class: ClassJSONRPCError, status: 200, errHas: "isError", handler: func(t *testing.T, w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}`, req.ID))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var redirected atomic.Int32
			mux := http.NewServeMux()
			mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) { tt.handler(t, w, readRPC(t, r)) })
			mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { redirected.Add(1) })
			srv := httptest.NewServer(mux)
			defer srv.Close()

			for _, c := range mcpClients(t, srv.Client(), srv.URL+"/mcp", "echo", map[string]any{"x": 1}, nil) {
				res := c.exec(context.Background(), 1, 0)
				if res.Class != tt.class || res.Status != tt.status || res.RetryAfter != tt.retryAfter {
					t.Errorf("%s: got class %q status %d retryAfter %s (err %q), want %q %d %s",
						c.name, res.Class, res.Status, res.RetryAfter, res.Err, tt.class, tt.status, tt.retryAfter)
				}
				if (res.Class == ClassOK) != (res.Err == "") || !strings.Contains(res.Err, tt.errHas) {
					t.Errorf("%s: err %q, want non-empty for failures and containing %q", c.name, res.Err, tt.errHas)
				}
			}
			if redirected.Load() != 0 {
				t.Error("redirect was followed")
			}
		})
	}
}

func TestMCPToolCallRequestShape(t *testing.T) {
	got := make(chan rpcRequest, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" ||
			r.Header.Get("Accept") != "application/json, text/event-stream" ||
			r.Header.Get("Mcp-Session-Id") != "s-1" || r.Header.Get("Authorization") != "Bearer t" {
			t.Errorf("request %s with headers %v", r.Method, r.Header)
		}
		req := readRPC(t, r)
		got <- req
		writeJSON(w, okBody(req.ID))
	}))
	defer srv.Close()
	h := http.Header{"Mcp-Session-Id": {"s-1"}, "Authorization": {"Bearer t"}, "Accept": {"text/html"}}
	for _, c := range mcpClients(t, srv.Client(), srv.URL, "search", map[string]any{"q": "go", "n": 3}, h) {
		h.Set("Mcp-Session-Id", "changed after construction")
		for i := range 2 {
			if res := c.exec(context.Background(), 1, int64(i)); res.Class != ClassOK {
				t.Fatalf("%s call %d: %+v", c.name, i, res)
			}
			req := <-got
			if req.JSONRPC != "2.0" || req.ID != int64(i+1) || req.Method != "tools/call" || req.Params.Name != "search" ||
				req.Params.Arguments["q"] != "go" || req.Params.Arguments["n"] != float64(3) {
				t.Errorf("%s call %d: request %+v", c.name, i, req)
			}
		}
		h.Set("Mcp-Session-Id", "s-1")
	}
}

func TestMCPToolCallTransportAndInterrupted(t *testing.T) {
	t.Run("transport", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		res := MCPToolCall(nil, url, "x", nil, nil)(context.Background(), 1, 0)
		if res.Class != ClassTransport || res.Status != 0 || res.Err == "" {
			t.Errorf("closed server: %+v, want transport", res)
		}
	})
	t.Run("unencodable arguments", func(t *testing.T) {
		res := MCPToolCall(nil, "http://127.0.0.1:1", "x", map[string]any{"f": func() {}}, nil)(context.Background(), 1, 0)
		if res.Class != ClassTransport || !strings.Contains(res.Err, "encode") {
			t.Errorf("got %+v", res)
		}
	})
	for _, tc := range []struct {
		stage string
		fast  bool
	}{{"before headers", false}, {"mid-body", false}, {"before headers", true}, {"mid-body", true}} {
		stage, fast := tc.stage, tc.fast
		t.Run(fmt.Sprintf("interrupted %s fast=%v", stage, fast), func(t *testing.T) {
			entered, done := make(chan struct{}), make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client going away
				if stage == "mid-body" {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = io.WriteString(w, ": open\n\n")
					w.(http.Flusher).Flush()
				}
				close(entered)
				select {
				case <-r.Context().Done():
				case <-done:
				}
			}))
			defer srv.Close()
			defer close(done)
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() { <-entered; cancel(ErrGracefulStop) }()
			exec := MCPToolCall(srv.Client(), srv.URL, "slow", nil, nil)
			if fast {
				exec = mustFast(t, srv.URL, "slow", nil, nil)
			}
			res := exec(ctx, 1, 0)
			if res.Class != ClassInterrupted || res.Err != ErrGracefulStop.Error() {
				t.Errorf("got %+v, want interrupted with the cancel cause", res)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		v, date string
		want    time.Duration
	}{
		{"", "", 0},
		{"0", "", 0},
		{"5", "", 5 * time.Second},
		{" 7 ", "", 7 * time.Second},
		{"-3", "", 0},
		{"1.5", "", 0},
		{"soon", "", 0},
		{at(10 * time.Second), "", 10 * time.Second},
		{at(10 * time.Second), at(4 * time.Second), 6 * time.Second},
		{at(-time.Minute), "", 0},
		{"999999999999", "", MaxDuration},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.v, tt.date, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q, %q) = %s, want %s", tt.v, tt.date, got, tt.want)
		}
	}
}

type namedExec struct {
	name string
	exec Exec
}

func mustFast(t testing.TB, url, tool string, args map[string]any, h http.Header) Exec {
	t.Helper()
	e, err := MCPToolCallFast(url, tool, args, h, FastOptions{VUs: 4, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// mcpClients are the two MCP clients built alike; both must classify every
// answer the same way.
func mcpClients(t testing.TB, hc *http.Client, url, tool string, args map[string]any, h http.Header) []namedExec {
	return []namedExec{{"net/http", MCPToolCall(hc, url, tool, args, h)}, {"fast", mustFast(t, url, tool, args, h)}}
}
