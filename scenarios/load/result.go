package load

import (
	"context"
	"time"
)

// Class is the outcome of one call. Every Result has exactly one.
type Class string

// The classes of a call.
const (
	ClassOK           Class = "ok"            // a valid answer
	Class429          Class = "429"           // HTTP 429 Too Many Requests
	Class4xx          Class = "4xx"           // any other HTTP 4xx
	Class5xx          Class = "5xx"           // HTTP 5xx
	ClassJSONRPCError Class = "jsonrpc_error" // a JSON-RPC error object, or an MCP result with isError true
	ClassBadResponse  Class = "bad_response"  // an answer that is not a valid JSON-RPC result: non-JSON, truncated, wrong id, redirect...
	ClassTransport    Class = "transport"     // no HTTP status: dial, TLS, reset, client timeout...
	ClassInterrupted  Class = "interrupted"   // cut by the engine at ramp-down or stop, or by the end of the run's context
)

// AllClasses lists every class in report order.
func AllClasses() []Class {
	return []Class{ClassOK, Class429, Class4xx, Class5xx, ClassJSONRPCError, ClassBadResponse, ClassTransport, ClassInterrupted}
}

// Valid reports whether c is one of AllClasses.
func (c Class) Valid() bool {
	switch c {
	case ClassOK, Class429, Class4xx, Class5xx, ClassJSONRPCError, ClassBadResponse, ClassTransport, ClassInterrupted:
		return true
	}
	return false
}

// Result is the outcome of one iteration of one VU.
type Result struct {
	VU         int           // 1-based VU number (k6 __VU)
	Iteration  int64         // 0-based, unique within a run
	Start      time.Time     // intended start of the iteration (engine clock)
	Latency    time.Duration // from Start to the end of the call
	Class      Class
	Status     int           // HTTP status, 0 when none
	RetryAfter time.Duration // parsed Retry-After of a 429, 0 when absent
	Err        string        // short reason for any class but ok
}

// Exec performs one call for VU vu in iteration iter. It must return
// promptly once ctx is done. The engine always sets VU and Iteration, sets
// Start to the intended start and Latency to the time since Start when they
// are zero, and reclassifies as interrupted a Result whose ctx was canceled
// while the call ran unless the call got a complete answer (ok, 429, 4xx, 5xx,
// jsonrpc_error). An empty Class is recorded as transport when Err is set and
// as ok otherwise. Exec must not panic. ctx may be the same for many
// iterations of a VU (it is replaced once canceled), so whatever an
// iteration registers on it (context.AfterFunc) it must release itself.
type Exec func(ctx context.Context, vu int, iter int64) Result
