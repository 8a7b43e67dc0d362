package load

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// ShardResultVersion is the version of the ShardResult encoding.
const ShardResultVersion = 1

// ShardResult is what one shard of a distributed load sends back: its
// counts, its run histogram and its per-second buckets with their
// histograms, exactly what merging needs (MergeShards) and no per-call
// data. Histograms are HdrHistogram V2 compressed encodings (base64, as
// hdrhistogram-go's Encode writes them), microseconds: the run's with 3
// significant figures, each second's with 2.
type ShardResult struct {
	Version int `json:"v"`
	Shard   int `json:"shard"`  // 0-based (Kubernetes' JOB_COMPLETION_INDEX)
	Shards  int `json:"shards"` // how many shards the load has
	// Start is the shard's run start (wall clock of its node); bucket n
	// covers [Start+n s, Start+n+1 s).
	Start time.Time `json:"start"`
	// DurationNS is the shard's run length, graceful stop included.
	DurationNS        time.Duration   `json:"duration_ns"`
	Started           int64           `json:"started"`
	Completed         int64           `json:"completed"`
	Totals            map[Class]int64 `json:"totals"`
	DroppedIterations int64           `json:"dropped_iterations"`
	DroppedResults    int64           `json:"dropped_results,omitempty"`
	PeakVUs           int             `json:"peak_vus"`
	Histogram         string          `json:"histogram"`
	Seconds           []ShardSecond   `json:"seconds"`
	DataSent          int64           `json:"data_sent"`
	DataReceived      int64           `json:"data_received"`
	// Error is the shard's run error ("" when it ran its course or was
	// stopped); a shard with an error still sends what it measured.
	Error string `json:"error,omitempty"`
	// Idle is true when the shard's share of the load was empty (fewer VUs
	// than shards): it ran nothing, on purpose.
	Idle bool `json:"idle,omitempty"`
	// Errors are the distinct reasons of the shard's failed calls
	// (Metrics.Errors).
	Errors []ErrorCount `json:"errors,omitempty"`
}

// ShardSecond is one per-second bucket of a ShardResult (see Second).
type ShardSecond struct {
	Offset    int             `json:"t"`
	Started   int64           `json:"started,omitempty"`
	Completed int64           `json:"completed,omitempty"`
	Classes   map[Class]int64 `json:"classes,omitempty"`
	VUs       int             `json:"vus,omitempty"`
	Dropped   int64           `json:"dropped,omitempty"`
	Histogram string          `json:"histogram,omitempty"`
}

// NewShardResult is m's result as shard shard of shards; sent and received
// are the bytes on the wire (Wire), runErr the run's error.
func NewShardResult(m *Metrics, shard, shards int, sent, received int64, runErr error) (ShardResult, error) {
	r := ShardResult{Version: ShardResultVersion, Shard: shard, Shards: shards, Start: m.Start(),
		DurationNS: m.Duration(), Started: m.Started(), Completed: m.Completed(), Totals: m.Totals(),
		DroppedIterations: m.DroppedIterations(), DroppedResults: m.DroppedResults(), PeakVUs: m.PeakVUs(),
		DataSent: sent, DataReceived: received, Errors: m.Errors("")}
	if runErr != nil {
		r.Error = runErr.Error()
	}
	b, err := m.Histogram().Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return ShardResult{}, fmt.Errorf("load: shard result: encode histogram: %w", err)
	}
	r.Histogram = string(b)
	for i, s := range m.Seconds() {
		ss := ShardSecond{Offset: s.Offset, Started: s.Started, Completed: s.Completed, VUs: s.VUs, Dropped: s.Dropped}
		if len(s.Classes) > 0 {
			ss.Classes = s.Classes
		}
		if h := m.SecondHistogram(i); h != nil {
			b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
			if err != nil {
				return ShardResult{}, fmt.Errorf("load: shard result: encode second %d: %w", i, err)
			}
			ss.Histogram = string(b)
		}
		r.Seconds = append(r.Seconds, ss)
	}
	return r, nil
}

// IdleShardResult is the result of a shard whose share was empty: nothing
// measured, started at start.
func IdleShardResult(shard, shards int, start time.Time) ShardResult {
	h, _ := NewMetrics().hist.Encode(hdr.V2CompressedEncodingCookieBase)
	return ShardResult{Version: ShardResultVersion, Shard: shard, Shards: shards, Start: start,
		Totals: map[Class]int64{}, Histogram: string(h), Idle: true}
}

// decodeHist decodes an encoded histogram and checks its geometry.
func decodeHist(s string, sigFigs int64) (*hdr.Histogram, error) {
	h, err := hdr.Decode([]byte(s))
	if err != nil {
		return nil, err
	}
	if h.LowestTrackableValue() != histLowest || h.HighestTrackableValue() != histHighest || h.SignificantFigures() != sigFigs {
		return nil, fmt.Errorf("histogram geometry %d..%d µs with %d significant figures, want %d..%d with %d",
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), histLowest, histHighest, sigFigs)
	}
	return h, nil
}

// Check reports why r cannot be merged, or nil: a version, shard or
// class it does not know, a negative count, a histogram that does not
// decode, seconds out of order, or counts that do not add up (the seconds'
// completions must add up to Completed and their classes to Totals, the
// run histogram must hold no more values than Completed).
func (r ShardResult) Check(wantShard, wantShards int) error {
	bad := func(format string, a ...any) error { return fmt.Errorf(format, a...) }
	switch {
	case r.Version != ShardResultVersion:
		return bad("result version %d, want %d", r.Version, ShardResultVersion)
	case r.Shard != wantShard || r.Shards != wantShards:
		return bad("result is shard %d of %d, want shard %d of %d", r.Shard, r.Shards, wantShard, wantShards)
	case r.Start.IsZero():
		return bad("no start time")
	case r.Started < 0 || r.Completed < 0 || r.DroppedIterations < 0 || r.DurationNS < 0 || r.PeakVUs < 0:
		return bad("negative count")
	case r.Completed > r.Started:
		return bad("completed %d > started %d", r.Completed, r.Started)
	}
	var sum int64
	for c, n := range r.Totals {
		if !c.Valid() || n < 0 {
			return bad("class %q count %d", c, n)
		}
		sum += n
	}
	if sum != r.Completed {
		return bad("classes add up to %d, completed is %d", sum, r.Completed)
	}
	reasons := map[Class]int64{}
	for _, e := range r.Errors {
		if !e.Class.Valid() || e.Class == ClassOK || e.N <= 0 || e.Err == "" {
			return bad("error reason %q of class %q count %d", e.Err, e.Class, e.N)
		}
		if reasons[e.Class] += e.N; reasons[e.Class] > r.Totals[e.Class] {
			return bad("the reasons of class %s count %d calls, the class %d", e.Class, reasons[e.Class], r.Totals[e.Class])
		}
	}
	h, err := decodeHist(r.Histogram, histSigFigs)
	if err != nil {
		return bad("run histogram: %v", err)
	}
	if h.TotalCount() > r.Completed {
		return bad("run histogram holds %d values, completed is %d", h.TotalCount(), r.Completed)
	}
	var started, completed, dropped int64
	classes := map[Class]int64{}
	prev := -1
	for _, s := range r.Seconds {
		if s.Offset <= prev || s.Offset > maxSecondIndex {
			return bad("second %d out of order (after %d)", s.Offset, prev)
		}
		prev = s.Offset
		if s.Started < 0 || s.Completed < 0 || s.Dropped < 0 || s.VUs < 0 {
			return bad("second %d: negative count", s.Offset)
		}
		var cs int64
		for c, n := range s.Classes {
			if !c.Valid() || n < 0 {
				return bad("second %d: class %q count %d", s.Offset, c, n)
			}
			classes[c] += n
			cs += n
		}
		if cs != s.Completed {
			return bad("second %d: classes add up to %d, completed is %d", s.Offset, cs, s.Completed)
		}
		if s.Histogram != "" {
			if _, err := decodeHist(s.Histogram, secondSigFigs); err != nil {
				return bad("second %d histogram: %v", s.Offset, err)
			}
		}
		started += s.Started
		completed += s.Completed
		dropped += s.Dropped
	}
	if started != r.Started || completed != r.Completed || dropped != r.DroppedIterations {
		return bad("seconds add up to %d started, %d completed, %d dropped; totals say %d, %d, %d",
			started, completed, dropped, r.Started, r.Completed, r.DroppedIterations)
	}
	for c, n := range r.Totals {
		if classes[c] != n {
			return bad("class %s: seconds add up to %d, totals say %d", c, classes[c], n)
		}
	}
	return nil
}

// MergeShards merges shard results into one Metrics, as if one generator
// had run them all, so that verdicts and thresholds read it exactly as a
// local run's:
//
//   - counts (started, completed, per class, dropped iterations) add up
//     exactly;
//   - the run histogram is the hdr Merge of the shards' (percentiles of the
//     merged histogram, never an average of percentiles);
//   - per-second buckets are aligned by wall-clock second: a shard that
//     started k seconds (rounded to the nearest) after start has its bucket
//     n added to bucket n+k; their counts, VUs and histograms add up;
//   - the merged run starts at start (or earlier, by whole seconds, when a
//     shard's clock started before it) and ends when the last shard ended;
//     peak VUs is the most VUs of any merged second (at least each shard's
//     own peak).
//
// Each result must pass Check first (MergeShards does not check again; a
// histogram that does not decode is skipped). Missing shards are simply
// not in rs: the caller reports them.
func MergeShards(start time.Time, rs []ShardResult) *Metrics {
	m := NewMetrics()
	m.begun, m.done, m.start, m.end = true, true, start, start
	if len(rs) == 0 {
		return m
	}
	shift := func(r ShardResult) int { return int(math.Round(r.Start.Sub(start).Seconds())) }
	minShift := 0
	for _, r := range rs {
		minShift = min(minShift, shift(r))
	}
	if minShift < 0 { // a shard's clock is ahead of start: start earlier, by whole seconds
		m.start = start.Add(time.Duration(minShift) * time.Second)
		m.end = m.start
	}
	peak := 0
	for _, r := range rs {
		k := shift(r) - minShift
		if k > maxSecondIndex {
			k = maxSecondIndex
		}
		m.started += r.Started
		m.completed += r.Completed
		m.droppedIt += r.DroppedIterations
		m.dropped += r.DroppedResults
		for c, n := range r.Totals {
			m.totals[c] += n
		}
		for _, e := range r.Errors {
			m.errs.add(e.Class, e.Err, e.N)
		}
		if h, err := decodeHist(r.Histogram, histSigFigs); err == nil {
			m.hist.Merge(h)
		}
		if end := r.Start.Add(r.DurationNS); end.After(m.end) {
			m.end = end
		}
		peak = max(peak, r.PeakVUs)
		for _, s := range r.Seconds {
			i := min(s.Offset+k, maxSecondIndex)
			for len(m.buckets) <= i {
				m.buckets = append(m.buckets, bucket{})
			}
			b := &m.buckets[i]
			b.add(bucket{started: s.Started, completed: s.Completed, classes: s.Classes, vus: s.VUs, dropped: s.Dropped})
			if s.Histogram != "" {
				if h, err := decodeHist(s.Histogram, secondSigFigs); err == nil {
					if b.hist == nil {
						b.hist = hdr.New(histLowest, histHighest, secondSigFigs)
					}
					b.hist.Merge(h)
				}
			}
		}
	}
	for _, b := range m.buckets {
		peak = max(peak, b.vus)
	}
	m.peakVUs = peak
	return m
}

// The framing of a shard result in a pod's log: the result as JSON,
// gzipped, base64, cut into lines of at most shardChunk characters, each
//
//	scaleproof-shard-result v1 K/N SUM CHUNK
//
// (K from 1, SUM the first 16 hex digits of the SHA-256 of the whole
// base64 text), so that no line is long enough for a container runtime to
// split it, and other log lines (the shard's own, on stderr) may come in
// between.
const (
	shardMarker = "scaleproof-shard-result"
	shardChunk  = 3000
)

// WriteShardResult writes r to w in the log framing above.
func WriteShardResult(w io.Writer, r ShardResult) error {
	js, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("load: shard result: %w", err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(js)
	if err := zw.Close(); err != nil {
		return fmt.Errorf("load: shard result: %w", err)
	}
	text := base64.StdEncoding.EncodeToString(gz.Bytes())
	sum := sha256.Sum256([]byte(text))
	id := hex.EncodeToString(sum[:8])
	n := max((len(text)+shardChunk-1)/shardChunk, 1)
	var out strings.Builder
	for k := range n {
		chunk := text[k*shardChunk : min((k+1)*shardChunk, len(text))]
		fmt.Fprintf(&out, "%s v%d %d/%d %s %s\n", shardMarker, ShardResultVersion, k+1, n, id, chunk)
	}
	_, err = io.WriteString(w, out.String())
	return err
}

// ErrNoShardResult is returned by ReadShardResult when a log holds no
// shard result at all (the shard died before it wrote one).
var ErrNoShardResult = errors.New("no result in the shard's log")

// ReadShardResult finds the shard result in a pod's log (the framing of
// WriteShardResult) and decodes it. It does not Check it. Errors:
// ErrNoShardResult when there is none; otherwise what is wrong (a chunk
// missing, a checksum that does not match, JSON that does not decode). When
// the log holds more than one result, the last complete one counts.
func ReadShardResult(log []byte) (ShardResult, error) {
	type frame struct {
		n      int
		chunks map[int]string
	}
	frames := map[string]*frame{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() { // bounded by the log's length
		line := sc.Text()
		i := strings.Index(line, shardMarker+" ")
		if i < 0 {
			continue
		}
		f := strings.Fields(line[i:])
		if len(f) != 5 || f[1] != "v"+strconv.Itoa(ShardResultVersion) {
			return ShardResult{}, fmt.Errorf("shard result line %.60q: not %s v%d K/N SUM CHUNK", line, shardMarker, ShardResultVersion)
		}
		ks, ns, ok := strings.Cut(f[2], "/")
		k, kerr := strconv.Atoi(ks)
		n, nerr := strconv.Atoi(ns)
		if !ok || kerr != nil || nerr != nil || k < 1 || k > n || n > 100_000 {
			return ShardResult{}, fmt.Errorf("shard result line %.60q: bad part %q", line, f[2])
		}
		fr := frames[f[3]]
		if fr == nil {
			fr = &frame{n: n, chunks: map[int]string{}}
			frames[f[3]] = fr
			order = append(order, f[3])
		}
		if fr.n != n {
			return ShardResult{}, fmt.Errorf("shard result %s: parts say %d and %d in all", f[3], fr.n, n)
		}
		fr.chunks[k] = f[4]
	}
	if err := sc.Err(); err != nil {
		return ShardResult{}, fmt.Errorf("read shard log: %w", err)
	}
	if len(order) == 0 {
		return ShardResult{}, ErrNoShardResult
	}
	var lastErr error
	for _, id := range slices.Backward(order) {
		fr := frames[id]
		if len(fr.chunks) != fr.n {
			var missing []int
			for k := 1; k <= fr.n; k++ {
				if _, ok := fr.chunks[k]; !ok {
					missing = append(missing, k)
				}
			}
			lastErr = fmt.Errorf("shard result %s: parts %v of %d missing (log cut short?)", id, missing, fr.n)
			continue
		}
		keys := slices.Sorted(maps.Keys(fr.chunks))
		var text strings.Builder
		for _, k := range keys {
			text.WriteString(fr.chunks[k])
		}
		sum := sha256.Sum256([]byte(text.String()))
		if hex.EncodeToString(sum[:8]) != id {
			lastErr = fmt.Errorf("shard result %s: checksum does not match", id)
			continue
		}
		gz, err := base64.StdEncoding.DecodeString(text.String())
		if err != nil {
			lastErr = fmt.Errorf("shard result %s: %w", id, err)
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			lastErr = fmt.Errorf("shard result %s: %w", id, err)
			continue
		}
		js, err := io.ReadAll(io.LimitReader(zr, 256<<20))
		if err != nil {
			lastErr = fmt.Errorf("shard result %s: %w", id, err)
			continue
		}
		var r ShardResult
		if err := json.Unmarshal(js, &r); err != nil {
			lastErr = fmt.Errorf("shard result %s: %w", id, err)
			continue
		}
		return r, nil
	}
	return ShardResult{}, lastErr
}
