package load

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// garbage is a target answering something that is not a valid answer to a
// tools/call, and the class the harness must count it in (never ok).
type garbage struct {
	name    string
	class   Class
	status  int
	handler func(w http.ResponseWriter, req rpcRequest)
	raw     func(c net.Conn) // answers on the raw connection instead (hijacked)
}

func garbageTargets() []garbage {
	redirect := func(code int) garbage {
		return garbage{name: fmt.Sprintf("%d redirect to a target that answers ok", code), class: ClassBadResponse, status: code,
			handler: func(w http.ResponseWriter, req rpcRequest) {
				w.Header().Set("Location", "/ok")
				w.WriteHeader(code)
			}}
	}
	return []garbage{
		redirect(301), redirect(303), redirect(307), redirect(308),
		{name: "204 no content", class: ClassBadResponse, status: 204, handler: func(w http.ResponseWriter, req rpcRequest) {
			w.WriteHeader(http.StatusNoContent)
		}},
		{name: "200 empty body", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "application/json")
		}},
		{name: "200 HTML error page", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html><body>502 Bad Gateway</body></html>")
		}},
		{name: "200 plain text ok", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "ok")
		}},
		{name: "200 JSON null", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, "null")
		}},
		{name: "200 batch answer to a single call", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, "["+okBody(req.ID)+"]")
		}},
		{name: "200 id as a string", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":"%d","result":{"content":[]}}`, req.ID))
		}},
		{name: "200 result a string", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":"ok"}`, req.ID))
		}},
		{name: "200 isError not a bool", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"isError":"no"}}`, req.ID))
		}},
		{name: "200 a request instead of a response", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"sampling/createMessage","params":{}}`, req.ID))
		}},
		{name: "200 error object without a code", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"message":"boom"}}`, req.ID))
		}},
		{name: "200 error object a string", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":"boom"}`, req.ID))
		}},
		{name: "200 trailing garbage after the response", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, okBody(req.ID)+"}}")
		}},
		{name: "200 JSON-RPC error", class: ClassJSONRPCError, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32000,"message":"worker at its in-flight limit"}}`, req.ID))
		}},
		{name: "200 JSON-RPC error in an event stream", class: ClassJSONRPCError, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%d,\"error\":{\"code\":-32603,\"message\":\"x\"}}\n\n", req.ID)
		}},
		{name: "200 event stream of another event type only", class: ClassBadResponse, status: 200, handler: func(w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: ping\ndata: %s\n\n", okBody(req.ID))
		}},
		{name: "500 with a valid JSON-RPC result", class: Class5xx, status: 500, handler: func(w http.ResponseWriter, req rpcRequest) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			_, _ = io.WriteString(w, okBody(req.ID))
		}},
		{name: "418", class: Class4xx, status: 418, handler: func(w http.ResponseWriter, req rpcRequest) { w.WriteHeader(418) }},
		{name: "status 999", class: ClassBadResponse, status: 999, handler: func(w http.ResponseWriter, req rpcRequest) { w.WriteHeader(999) }},
		{name: "chunked body cut mid-way", class: ClassBadResponse, status: 200, raw: func(c net.Conn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"jsonrpc\":\"2.0\"")
		}},
		{name: "connection closed before any answer", class: ClassTransport, raw: func(c net.Conn) {}},
		{name: "not HTTP at all", class: ClassTransport, raw: func(c net.Conn) {
			_, _ = io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n\r\n")
		}},
	}
}

// serveGarbage starts a server for g: the call path answers as g says, /ok
// (a redirect's target) answers ok and counts its hits.
func serveGarbage(t *testing.T, g garbage) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		followed.Add(1)
		writeJSON(w, okBody(readRPC(t, r).ID))
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if g.raw == nil {
			g.handler(w, readRPC(t, r))
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer c.Close()
		_ = buf.Flush()
		g.raw(c)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &followed
}

// TestGarbageTargetsAreNeverOK: a target that answers garbage (non-JSON, a
// truncated body, a JSON-RPC error, a redirect, something not HTTP...) is
// counted in its class, never as ok, and a redirect is never followed.
func TestGarbageTargetsAreNeverOK(t *testing.T) {
	for _, g := range garbageTargets() {
		t.Run(g.name, func(t *testing.T) {
			srv, followed := serveGarbage(t, g)
			res := MCPToolCall(srv.Client(), srv.URL+"/mcp", "work", map[string]any{"ms": 1}, nil)(context.Background(), 1, 0)
			if res.Class != g.class || res.Status != g.status {
				t.Errorf("class %q status %d (%s), want %q %d", res.Class, res.Status, res.Err, g.class, g.status)
			}
			if res.Err == "" {
				t.Error("a failed call without a reason")
			}
			if followed.Load() != 0 {
				t.Error("the redirect was followed")
			}
		})
	}
}

// TestGarbageThroughTheEngine: the same targets under VUs: every call of
// the run lands in the target's class, the per-second buckets agree, and ok
// stays 0.
func TestGarbageThroughTheEngine(t *testing.T) {
	for _, g := range garbageTargets() {
		t.Run(g.name, func(t *testing.T) {
			srv, followed := serveGarbage(t, g)
			p := ConstantVUs(3, time.Hour)
			p.MaxIterations = 30
			p.ThinkTime = time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			m, err := Run(ctx, p, MCPToolCall(srv.Client(), srv.URL+"/mcp", "work", nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			tot := m.Totals()
			if tot[g.class] != 30 || tot[ClassOK] != 0 || len(tot) != 1 {
				t.Errorf("totals %v, want 30 %s and nothing else", tot, g.class)
			}
			var inSeconds int64
			for _, s := range m.Seconds() {
				inSeconds += s.Classes[g.class]
				if s.Classes[ClassOK] != 0 {
					t.Errorf("second %d counts %d ok", s.Offset, s.Classes[ClassOK])
				}
			}
			if inSeconds != 30 {
				t.Errorf("per-second buckets hold %d %s calls, want 30", inSeconds, g.class)
			}
			if followed.Load() != 0 {
				t.Error("a redirect was followed")
			}
		})
	}
}

// TestSlowTargetIsBounded: a target that sends its headers and then never
// the body does not hang a VU past the client's timeout or the run's stop.
func TestSlowTargetIsBounded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0",`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	// The client's timeout must cut the body, so the headers must arrive
	// within it: 2 s, not less, so a loaded machine cannot cut the request
	// before them.
	hc := &http.Client{Timeout: 2 * time.Second}
	res := MCPToolCall(hc, srv.URL, "work", nil, nil)(context.Background(), 1, 0)
	if res.Class != ClassBadResponse || !strings.Contains(res.Err, "truncated") {
		t.Errorf("client timeout mid-body: %+v, want bad_response (truncated)", res)
	}
	// Without a client timeout, the run's graceful stop bounds it.
	p := ConstantVUs(2, 100*time.Millisecond)
	p.GracefulStop = 200 * time.Millisecond
	start := time.Now()
	m, err := Run(context.Background(), p, MCPToolCall(srv.Client(), srv.URL, "work", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("run took %s with a stuck target, want about 300 ms", took)
	}
	if tot := m.Totals(); tot[ClassInterrupted] != 2 || tot[ClassOK] != 0 {
		t.Errorf("totals %v, want 2 interrupted", tot)
	}
}
