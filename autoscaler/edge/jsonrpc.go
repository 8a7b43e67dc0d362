package edge

import (
	"bytes"
	"encoding/json"
	"net/http"
)

type rpcErrorBody struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// requestID returns the "id" of a single JSON-RPC request in body as raw
// JSON (a string or a number), or null.
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

// writeRPCError writes status with a JSON-RPC error body (code -32000).
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(rpcErrorBody{JSONRPC: "2.0", ID: id, Error: rpcError{Code: CodeServerError, Message: msg}})
	if err != nil { // cannot happen: id is valid JSON
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
