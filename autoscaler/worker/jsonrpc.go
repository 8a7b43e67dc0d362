package worker

// JSON-RPC error codes the worker answers with outside the MCP handler.
const (
	// CodeServerError (-32000) is used for a refusal at the in-flight limit
	// and for a body over MaxBodyBytes.
	CodeServerError = -32000
	// CodeParseError (-32700) is used for a body that is not JSON.
	CodeParseError = -32700
)
