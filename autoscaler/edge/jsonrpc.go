package edge

import (
	"encoding/json"
	"net/http"

	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

// writeRPCError writes status with a JSON-RPC error body (code -32000).
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, msg string) {
	serve.WriteRPCError(w, status, id, CodeServerError, msg)
}
