// Package reports is the results format: it writes and reads scaleproof
// results files and derives what every renderer shares from them (the
// table row, the timeline, the load and scale summaries). The renderers
// (text, Markdown, HTML with charts, JUnit XML, baseline comparison) are in
// reports/render.
//
// A results file is JSON Lines, written as the run goes (one record a line,
// flushed and fsynced per record), so a run killed at any moment leaves a
// valid file holding what it measured; a file without an "end" record is
// read as incomplete.
//
// Schema "scaleproof.results/v1", one record a line, {"kind": K, "data": D}:
//
//	run          RunMeta: schema, run id, version, commit, platform, profile, settings, start
//	scenario     ScenarioStart: a scenario started (name, title, zone, start time)
//	zone_sample  ZoneSample: one sample of the scenario's zone (count, max, ready, last decision), every 1 s
//	second       Second: one per-second bucket of a scenario's load (calls by class, latency, in flight)
//	scale        ScaleEvent: a change of count with its decision, ready and served times
//	readyz       ReadyzFailure: one console /readyz poll that was not 200
//	verdict      Verdict: a scenario's outcome and its checked facts (with a canary, its share of calls)
//	timeline     TimelinePoint: one sample of a target scenario (in-flight, count, ready, desired, metric), every sample
//	summary      Row: the Ramen 0.7.5 table row of the run
//	end          End: the run ended (absent when it was killed)
//
// Readers skip kinds they do not know, so adding a kind or a field keeps v1;
// only a change of meaning or a removal bumps the version.
//
// Imports nothing of the module (the format stands alone; writers and
// renderers depend on it, never the reverse).
package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Schema names the results file format and its version.
const Schema = "scaleproof.results/v1"

// Record kinds, one per line.
const (
	KindRun       = "run"         // first line: RunMeta
	KindScenario  = "scenario"    // a scenario started
	KindSecond    = "second"      // one per-second bucket of a scenario: Second
	KindEvent     = "scale"       // a scale event: ScaleEvent
	KindReadyz    = "readyz"      // a /readyz failure
	KindVerdict   = "verdict"     // a scenario's verdict: Verdict
	KindSummary   = "summary"     // the table row: Row
	KindEnd       = "end"         // last line: End
	KindSampleRaw = "zone_sample" // a raw zone sample
	KindTimeline  = "timeline"    // one sample of a target scenario: TimelinePoint
)

// RunMeta describes a run.
type RunMeta struct {
	Schema   string            `json:"schema"`
	RunID    string            `json:"run_id"`
	Version  string            `json:"version"`
	Commit   string            `json:"commit,omitempty"`
	Platform string            `json:"platform"`
	Profile  string            `json:"profile"`
	Policy   string            `json:"policy,omitempty"`
	Settings map[string]string `json:"settings,omitempty"`
	Started  time.Time         `json:"started"`
}

// Calls counts calls by class (load engine classes).
type Calls struct {
	OK           int64 `json:"ok"`
	TooMany      int64 `json:"429"`
	Other4xx     int64 `json:"4xx"`
	Server5xx    int64 `json:"5xx"`
	JSONRPCError int64 `json:"jsonrpc_error"`
	BadResponse  int64 `json:"bad_response"`
	Transport    int64 `json:"transport"`
	Interrupted  int64 `json:"interrupted"`
}

// Add adds o to c.
func (c *Calls) Add(o Calls) {
	c.OK += o.OK
	c.TooMany += o.TooMany
	c.Other4xx += o.Other4xx
	c.Server5xx += o.Server5xx
	c.JSONRPCError += o.JSONRPCError
	c.BadResponse += o.BadResponse
	c.Transport += o.Transport
	c.Interrupted += o.Interrupted
}

// Total is every call counted.
func (c Calls) Total() int64 {
	return c.OK + c.TooMany + c.Other4xx + c.Server5xx + c.JSONRPCError + c.BadResponse + c.Transport + c.Interrupted
}

// Second is one per-second bucket of a scenario's load: the calls that ended
// in [T, T+1) seconds from the scenario's start, by class (so Calls is also
// calls/s), their latency percentiles in milliseconds (measured from each
// call's intended start), the VUs alive, the calls in flight at the end of
// the second, and the zone's last sample at or before T.
type Second struct {
	Scenario string  `json:"scenario"`
	T        int     `json:"t"`
	VUs      int     `json:"vus"`
	Count    int     `json:"count"`
	Max      int     `json:"max_count"`
	Ready    int     `json:"ready"`
	Calls    Calls   `json:"calls"`
	P50ms    float64 `json:"p50_ms"`
	P95ms    float64 `json:"p95_ms"`
	P99ms    float64 `json:"p99_ms"`
	// InFlight is the number of calls started and not yet answered at the
	// end of the second, as the load generator sees them (files written
	// before this field existed read 0).
	InFlight int64 `json:"in_flight"`
	// Dropped is the iterations an arrival-rate executor scheduled in this
	// second but could not start (every VU busy); 0 for closed-loop load.
	Dropped int64 `json:"dropped,omitempty"`
	// Histogram is the second's latency HdrHistogram (microseconds, V2
	// compressed, base64) when the writer ships it (scaleproof load), so
	// that seconds of several load generators merge exactly.
	Histogram string `json:"histogram,omitempty"`
}

// ScenarioStart is the "scenario" record: a scenario started on its own zone.
type ScenarioStart struct {
	Scenario string    `json:"scenario"`
	Title    string    `json:"title,omitempty"` // the scenario's one-line description
	Zone     string    `json:"zone,omitempty"`
	Started  time.Time `json:"started"`
}

// Sample is one observation of a zone, as written by the harness's sampler.
type Sample struct {
	At       time.Time `json:"at"`
	Count    int       `json:"count"`
	Max      int       `json:"max_count"`
	Ready    int       `json:"ready"`
	Decision string    `json:"decision,omitempty"` // the autoscaler's last decision, "up 1->3: reason"
	Err      string    `json:"err,omitempty"`      // the sample failed; the numbers are then the last known
}

// ZoneSample is the "zone_sample" record: a sample of a scenario's zone,
// T seconds (0.1 s resolution) from the scenario's start.
type ZoneSample struct {
	Scenario string  `json:"scenario"`
	T        float64 `json:"t"`
	Sample   Sample  `json:"sample"`
}

// ReadyzFailure is the "readyz" record: one console /readyz poll that did not
// answer 200 within its timeout. Status is 0 when nothing answered.
type ReadyzFailure struct {
	At       time.Time `json:"at"`
	Status   int       `json:"status,omitempty"`
	Err      string    `json:"err,omitempty"`
	TimedOut bool      `json:"timed_out,omitempty"` // no answer within the poll's timeout (apart from non-200 answers)
}

// ScaleEvent is one change of a zone's count with its times, in seconds from
// the scenario's start: decision (the count changed), ready (ready reached
// the new count) and served (first ok call through the edge after ready).
// A time is -1 when it never happened.
type ScaleEvent struct {
	Scenario  string  `json:"scenario"`
	From      int     `json:"from"`
	To        int     `json:"to"`
	DecisionS float64 `json:"decision_s"`
	ReadyS    float64 `json:"ready_s"`
	ServedS   float64 `json:"served_s"`
	Reason    string  `json:"reason,omitempty"`
}

// Fact is one checked fact of a scenario.
type Fact struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
	// Contract is the promise the fact was judged on, in the target's own
	// terms ("a lowered max applies within one HPA sync period (15 s)"),
	// shown beside the fact; "" for the console scenarios, whose rules are
	// Ramen 0.7.5's.
	Contract string `json:"contract,omitempty"`
	// NotApplicable, when set, is why the target does not promise the
	// fact: the fact was not judged, neither passes nor fails (Passed is
	// false, Failed is false) and never makes a verdict fail; reports show
	// it as "n/a" with this reason.
	NotApplicable string `json:"not_applicable,omitempty"`
}

// Failed reports a fact that was judged and did not hold (a fact that is
// not applicable never failed).
func (f Fact) Failed() bool { return !f.Passed && f.NotApplicable == "" }

// PassFail is "PASS" when ok and "FAIL" otherwise: a pass/fail outcome as
// the reports and the terminal write it.
func PassFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// Result is the fact's outcome as the reports show it: "PASS", "FAIL" or
// "n/a".
func (f Fact) Result() string {
	if f.NotApplicable != "" {
		return "n/a"
	}
	return PassFail(f.Passed)
}

// FactsPass is a verdict's outcome from its facts: true when at least one
// fact was judged and passed and none failed. Facts that are not applicable
// count neither way, so a verdict of only those does not pass (the caller
// reports it skipped: nothing was judged).
func FactsPass(facts []Fact) bool {
	passed := 0
	for _, f := range facts {
		if f.Failed() {
			return false
		}
		if f.Passed && f.NotApplicable == "" {
			passed++
		}
	}
	return passed > 0
}

// CountFacts counts facts by outcome: judged and passed, failed, and not
// applicable.
func CountFacts(facts []Fact) (passed, failed, na int) {
	for _, f := range facts {
		switch {
		case f.NotApplicable != "":
			na++
		case f.Passed:
			passed++
		default:
			failed++
		}
	}
	return passed, failed, na
}

// Verdict is a scenario's outcome.
type Verdict struct {
	Scenario  string  `json:"scenario"`
	Passed    bool    `json:"passed"`
	Facts     []Fact  `json:"facts"`
	Calls     Calls   `json:"calls"`
	DurationS float64 `json:"duration_s"`
	UpToMaxS  float64 `json:"up_to_max_s,omitempty"` // decision reaching max, from scenario start; -1 never
	ReadyMaxS float64 `json:"ready_max_s,omitempty"` // all max workers ready; -1 never
	BackTo1S  float64 `json:"back_to_1_s,omitempty"` // count back at 1, from scenario start; -1 never
	PeakCount int     `json:"peak_count,omitempty"`  // highest count sampled
	P95ms     float64 `json:"p95_ms,omitempty"`      // latency p95 of the scenario's calls
	Error     string  `json:"error,omitempty"`       // why the scenario could not finish
	// Interrupted is true when the run was stopped (Ctrl-C, SIGTERM) while
	// the scenario ran: its facts so far are kept, but it has no verdict.
	Interrupted bool `json:"interrupted,omitempty"`
	// Skipped, when set, says why the scenario was not judged: the
	// platform cannot perform a fault action it needs ("platform external
	// cannot freeze a worker: ..."). A skipped verdict never passes, and
	// does not fail a run either.
	Skipped string `json:"skipped,omitempty"`
	// Imbalance is how the zone's in-flight calls spread over its ready
	// workers while the load ran, read once a second from each worker's
	// /metrics; nil when the platform cannot reach workers. A flagged
	// imbalance (Imbalance.Flagged) is a warning, not a failed fact.
	Imbalance *Imbalance `json:"imbalance,omitempty"`
	// Canary is the zone's canary worker and its share of the calls the
	// scenario's load sent; nil when the platform runs no canary (the
	// default) or the scenario sent no load.
	Canary *Canary `json:"canary,omitempty"`
}

// Status is the verdict's mark as the terminal's verdict lines write it:
// "STOP" when the run was stopped (Ctrl-C, SIGTERM) while the scenario ran
// (stopped, not judged), "SKIP" when it was not judged (Skipped says why),
// else "PASS" or "FAIL".
func (v Verdict) Status() string {
	switch {
	case v.Interrupted:
		return "STOP"
	case v.Skipped != "":
		return "SKIP"
	}
	return PassFail(v.Passed)
}

// Canary is what the zone's canary worker did in one scenario: a worker of
// another version beside the stable ones, taking calls like any worker and
// counting as capacity, not part of the count (Ramen 0.7.5's autoscaling
// notes: "The canary counts as capacity").
type Canary struct {
	// Workers names the canary worker (more than one when it was replaced
	// during the scenario), as the console lists it with "canary": true.
	Workers []string `json:"workers"`
	// Calls is the calls the canary answered with 2xx; Total the calls
	// every worker of the zone answered with 2xx (the edge's
	// scaleproof_edge_worker_answers_total{track}); Share is Calls ÷
	// Total, 0..1 (0 when Total is 0).
	Calls int64   `json:"calls"`
	Total int64   `json:"total"`
	Share float64 `json:"share"`
	// Refused is the calls the canary answered 429 (at its in-flight
	// limit), apart from Calls.
	Refused int64 `json:"refused,omitempty"`
	// Err says why the share could not be read (the edge's /metrics); the
	// numbers are then 0.
	Err string `json:"err,omitempty"`
}

// Row is one line of the Ramen 0.7.5 table.
type Row struct {
	Platform string  `json:"platform"`
	UpTo3S   float64 `json:"up_to_3_s"`   // -1 when max was never reached
	BackTo1S float64 `json:"back_to_1_s"` // -1 when it never came back
	Calls    Calls   `json:"calls"`
	P95ms    float64 `json:"p95_ms,omitempty"`
	Passed   bool    `json:"passed"`
	Source   string  `json:"source,omitempty"` // results file or published source
	Flaps    int     `json:"flaps,omitempty"`  // see Flaps; computed from the scale events when read
}

// End closes a run.
type End struct {
	Ended    time.Time `json:"ended"`
	ExitCode int       `json:"exit_code"`
	Reason   string    `json:"reason,omitempty"`
}

// record is the line envelope.
type record struct {
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// Writer appends records to a results file. Safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	f   *os.File
	err error
}

// Create creates (truncates) a results file and writes the run record.
func Create(path string, meta RunMeta) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	meta.Schema = Schema
	w := &Writer{f: f}
	if err := w.Write(KindRun, meta); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Write appends one record (one line) and syncs it to disk.
func (w *Writer) Write(kind string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("results: encode %s: %w", kind, err)
	}
	line, _ := json.Marshal(record{Kind: kind, Data: b})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return errors.New("results: writer closed")
	}
	if _, err := w.f.Write(append(line, '\n')); err != nil {
		w.err = err
		return fmt.Errorf("results: write: %w", err)
	}
	if kind != KindSecond && kind != KindSampleRaw {
		_ = w.f.Sync()
	}
	return nil
}

// Close writes the end record and closes the file.
func (w *Writer) Close(end End) error {
	werr := w.Write(KindEnd, end)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	_ = w.f.Sync()
	err := w.f.Close()
	w.f = nil
	return errors.Join(werr, err)
}

// Path is the file's path.
func (w *Writer) Path() string { return w.f.Name() }

// Results is a results file read back. Slices keep the file's order.
type Results struct {
	Path      string
	Meta      RunMeta
	Scenarios []ScenarioStart
	Samples   []ZoneSample
	Seconds   []Second
	Events    []ScaleEvent
	Readyz    []json.RawMessage // the raw "readyz" records; ReadyzFailures holds them decoded
	// ReadyzFailures are the /readyz failures of the whole run (see
	// ScenarioView for them per scenario).
	ReadyzFailures []ReadyzFailure
	Verdicts       []Verdict
	Loads          []LoadSummary // "load" records (scaleproof load)
	// Timeline is the "timeline" records: the target scenarios' samples.
	Timeline []TimelinePoint
	Summary  *Row
	End      *End
	// Incomplete is true when the file has no end record (the run was
	// killed) or its last line was cut; IncompleteReason says which.
	Incomplete       bool
	IncompleteReason string
}

// Incomplete reasons.
const (
	ReasonCut   = "the run was killed mid-write: its last line is cut and it has no end record"
	ReasonNoEnd = "no end record: the run was stopped before it finished"
)

// Read parses a results file. A cut last line is skipped and marks the file
// incomplete; any other bad line, a file with no run record, or another
// schema version is an error (wrapped with the file's name and line).
func Read(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return Parse(path, bytes.NewReader(b))
}

// Parse reads results from r (name is used in errors).
func Parse(name string, r io.Reader) (*Results, error) {
	res := &Results{Path: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("results %s: %w", name, err)
	}
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			if i == len(lines)-1 {
				res.Incomplete, res.IncompleteReason = true, ReasonCut
				break
			}
			return nil, fmt.Errorf("results %s line %d: %w", name, i+1, err)
		}
		if err := res.add(rec); err != nil {
			return nil, fmt.Errorf("results %s line %d: %w", name, i+1, err)
		}
	}
	if res.Meta.Schema == "" {
		return nil, fmt.Errorf("results %s: no run record: not a scaleproof results file", name)
	}
	if res.Meta.Schema != Schema {
		return nil, fmt.Errorf("results %s: schema %q, this build reads %q", name, res.Meta.Schema, Schema)
	}
	if res.End == nil {
		if !res.Incomplete {
			res.IncompleteReason = ReasonNoEnd
		}
		res.Incomplete = true
	}
	return res, nil
}

// appendRecord decodes one record's data and appends it to list (also when
// decoding fails: Parse then reports the error with the line and drops res).
func appendRecord[T any](data json.RawMessage, list *[]T) error {
	var v T
	err := json.Unmarshal(data, &v)
	*list = append(*list, v)
	return err
}

// add decodes rec into res; on an error res is partly filled, and Parse
// drops it.
func (res *Results) add(rec record) error {
	switch rec.Kind {
	case KindRun:
		return json.Unmarshal(rec.Data, &res.Meta)
	case KindScenario:
		return appendRecord(rec.Data, &res.Scenarios)
	case KindSampleRaw:
		return appendRecord(rec.Data, &res.Samples)
	case KindSecond:
		return appendRecord(rec.Data, &res.Seconds)
	case KindEvent:
		return appendRecord(rec.Data, &res.Events)
	case KindReadyz:
		res.Readyz = append(res.Readyz, rec.Data)
		return appendRecord(rec.Data, &res.ReadyzFailures)
	case KindVerdict:
		return appendRecord(rec.Data, &res.Verdicts)
	case KindLoad:
		return appendRecord(rec.Data, &res.Loads)
	case KindTimeline:
		return appendRecord(rec.Data, &res.Timeline)
	case KindSummary:
		res.Summary = new(Row)
		return json.Unmarshal(rec.Data, res.Summary)
	case KindEnd:
		res.End = new(End)
		return json.Unmarshal(rec.Data, res.End)
	}
	return nil // unknown kinds are skipped (newer minor writers)
}
