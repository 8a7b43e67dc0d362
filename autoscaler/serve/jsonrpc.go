package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// JSON-RPC 2.0 error answers, as the reference worker and edge give them
// outside the MCP handler (a refusal at the in-flight limit, a body over the
// limit, no ready worker). JSON-RPC 2.0 specification, section 5.1 (the
// error object) and its reserved codes.

// RPCErrorBody is a JSON-RPC 2.0 error response.
type RPCErrorBody struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   RPCError        `json:"error"`
}

// RPCError is a JSON-RPC 2.0 error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// RequestID returns the "id" of a single JSON-RPC request in body, as raw
// JSON (a string or a number), or null when the body is not one JSON object
// with a string or number id (a batch, a notification, malformed JSON).
func RequestID(body []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return json.RawMessage("null")
	}
	id := bytes.TrimSpace(m.ID)
	if len(id) == 0 || !(id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		return json.RawMessage("null")
	}
	return id
}

// RPCErrorJSON is the JSON-RPC error body for request id (nil: null) with
// code and msg, ending in a newline: what WriteRPCError writes, for a
// server (the scheduler) that hands the body on instead of writing it.
func RPCErrorJSON(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(RPCErrorBody{JSONRPC: "2.0", ID: id, Error: RPCError{Code: code, Message: msg}})
	if err != nil { // cannot happen: id is valid JSON
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return append(b, '\n')
}

// WriteRPCError writes HTTP status with a JSON-RPC error body for request id
// (nil: null) with code and msg.
func WriteRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(RPCErrorJSON(id, code, msg))
}

// ReadRPCBody reads r's body, at most limit bytes. When that fails, status
// and msg are the JSON-RPC error to answer: 413 "request body over <limit>
// bytes", else 400 "read request body: <err>"; status is 0 on success.
func ReadRPCBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, status int, msg string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", limit)
	case err != nil:
		return nil, http.StatusBadRequest, "read request body: " + err.Error()
	}
	return body, 0, ""
}
