package reports

// KindLoad is the "load" record of a results file written by
// `scaleproof load`: the end-of-test summary of one load run.
const KindLoad = "load"

// Load models, as RunMeta.Settings["load_model"] and LoadSummary.Model.
const (
	// ModelClosed: closed-loop VUs (constant-vus, ramping-vus, and every
	// scenario of `run`). A VU waits for each answer before its next call,
	// so a stalled target delays calls instead of showing in the latency
	// percentiles: they are not corrected for coordinated omission.
	ModelClosed = "closed-loop"
	// ModelOpen: arrival-rate executors. Iterations start on a schedule
	// and latency counts from each scheduled start, so a stall shows.
	ModelOpen = "open-model"
)

// LoadSummary is the "load" record: totals of a load run. Latencies are in
// milliseconds over every call that was not interrupted. Histogram is the
// run's latency HdrHistogram (microseconds, 1 µs to 10 min, 3 significant
// figures) in HdrHistogram's V2 compressed, base64 encoding, so results of
// several load generators can be merged exactly.
type LoadSummary struct {
	Scenario      string  `json:"scenario"`
	Executor      string  `json:"executor"`
	Model         string  `json:"model"`
	Target        string  `json:"target"` // "tools/call work at URL" or "GET URL"
	Iterations    int64   `json:"iterations"`
	Dropped       int64   `json:"dropped_iterations"`
	Calls         Calls   `json:"calls"`
	DurationS     float64 `json:"duration_s"`
	PeakVUs       int     `json:"peak_vus"`
	MinMs         float64 `json:"min_ms"`
	MeanMs        float64 `json:"mean_ms"`
	P50ms         float64 `json:"p50_ms"`
	P90ms         float64 `json:"p90_ms"`
	P95ms         float64 `json:"p95_ms"`
	P99ms         float64 `json:"p99_ms"`
	MaxMs         float64 `json:"max_ms"`
	DataSent      int64   `json:"data_sent_bytes"`
	DataReceived  int64   `json:"data_received_bytes"`
	Histogram     string  `json:"histogram,omitempty"`
	AbortedReason string  `json:"aborted_reason,omitempty"` // a threshold with abortOnFail stopped the run
	// Errors are the distinct reasons of the calls that did not end ok
	// (vegeta's error set, counted): at most 16 a class, the most
	// frequent first.
	Errors []ErrorReason `json:"errors,omitempty"`
}

// ErrorReason is one distinct reason calls failed with: their class (one
// of Calls' JSON names: 429, 4xx, 5xx, jsonrpc_error, bad_response,
// transport, interrupted), the reason as the load generator saw it (an
// HTTP status line and the JSON-RPC error's message, or the transport
// error), and how many calls gave it.
type ErrorReason struct {
	Class string `json:"class"`
	Error string `json:"error"`
	Count int64  `json:"count"`
}

// LoadModel is the load model of the run: RunMeta.Settings["load_model"],
// or closed-loop for files that do not say (every `run` scenario is
// closed-loop).
func (res *Results) LoadModel() string {
	if m := res.Meta.Settings["load_model"]; m != "" {
		return m
	}
	return ModelClosed
}
