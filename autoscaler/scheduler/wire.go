package scheduler

import (
	"encoding/json"
	"net/http"

	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

// Paths of the querier protocol (see the package doc).
const (
	PathConnect = "/querier/connect"
	PathNext    = "/querier/next"
	PathAnswer  = "/querier/answer"
	PathLeave   = "/querier/leave"
)

// Hello is the first line of a session (GET /querier/connect?querier=NAME):
// the session's id, which the querier's polls and answers carry as
// ?session=ID, and the heartbeat period in milliseconds (a querier that
// reads nothing for a few of them takes the session as lost).
type Hello struct {
	Session     string `json:"session"`
	HeartbeatMS int64  `json:"heartbeat_ms"`
}

// Assignment is a call handed to a querier's worker (POST /querier/next):
// the call's id for the answer, the caller's MCP headers (forwardRequestHeaders)
// and body, and which attempt this is (1, or 2 after a re-queue).
type Assignment struct {
	Call    string          `json:"call"`
	Attempt int             `json:"attempt"`
	Header  http.Header     `json:"header,omitempty"`
	Body    json.RawMessage `json:"body"`
}

// Answer is what a querier's worker sends back for one call (POST
// /querier/answer?session=S&call=C): the HTTP status, the headers
// AnswerHeaders keeps and the body the caller gets.
type Answer struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body"`
}

// forwardRequestHeaders are the caller's headers a querier gets with a call.
var forwardRequestHeaders = []string{"Content-Type", "Accept", "Mcp-Protocol-Version", "Mcp-Session-Id"}

// forwardAnswerHeaders are the querier's answer headers the caller gets.
var forwardAnswerHeaders = []string{"Content-Type", "Retry-After", "Mcp-Session-Id"}

// AnswerHeaders returns a copy of the headers of h (a worker's answer) that
// are handed back to the caller (forwardAnswerHeaders).
func AnswerHeaders(h http.Header) http.Header { return pick(h, forwardAnswerHeaders) }

// pick returns a copy of the headers of h named in names.
func pick(h http.Header, names []string) http.Header {
	out := http.Header{}
	for _, n := range names {
		if v := h.Values(n); len(v) > 0 {
			out[http.CanonicalHeaderKey(n)] = append([]string(nil), v...)
		}
	}
	return out
}

// JSON-RPC error codes the scheduler answers with.
const (
	// CodeServerError (-32000): queue full, draining, call failed or timed out.
	CodeServerError = -32000
	// CodeParseError (-32700): a body that is not JSON.
	CodeParseError = -32700
)

// errorAnswer is an Answer carrying a JSON-RPC error.
func errorAnswer(status int, id json.RawMessage, code int, msg string, retryAfter bool) Answer {
	h := http.Header{"Content-Type": {"application/json"}}
	if retryAfter {
		h.Set("Retry-After", "1")
	}
	return Answer{Status: status, Header: h, Body: serve.RPCErrorJSON(id, code, msg)}
}

func writeAnswer(w http.ResponseWriter, a Answer) {
	for k, v := range AnswerHeaders(a.Header) {
		w.Header()[k] = v
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body)
}
