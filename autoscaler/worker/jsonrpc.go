package worker

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// JSON-RPC error codes the worker answers with outside the MCP handler.
const (
	// CodeServerError (-32000) is used for a refusal at the in-flight limit
	// and for a body over MaxBodyBytes.
	CodeServerError = -32000
	// CodeParseError (-32700) is used for a body that is not JSON.
	CodeParseError = -32700
)

// rpcErrorBody is a JSON-RPC 2.0 error response.
type rpcErrorBody struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// requestID returns the "id" of a single JSON-RPC request in body, as raw JSON
// (a string or a number), or null when the body is not one JSON object with a
// string or number id (a batch, a notification, malformed JSON).
func requestID(body []byte) json.RawMessage {
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

// writeRPCError writes status with a JSON-RPC error body for request id.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(rpcErrorBody{JSONRPC: "2.0", ID: id, Error: rpcError{Code: code, Message: msg}})
	if err != nil { // cannot happen: id is valid JSON
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
