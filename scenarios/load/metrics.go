package load

import (
	"errors"
	"maps"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: microseconds from 1 µs to 10 min.
const (
	histLowest     = 1
	histHighest    = int64(10 * time.Minute / time.Microsecond)
	histSigFigs    = 3 // run histogram
	secondSigFigs  = 2 // per-second histograms (±1%, ~25 KB each)
	maxSecondIndex = int(MaxDuration/time.Second) + 3600
)

// Latencies summarises a latency histogram. Count is the number of values
// recorded; the others are zero when Count is zero.
type Latencies struct {
	Count                         int64
	Min, Mean, P50, P95, P99, Max time.Duration
}

func latenciesOf(h *hdr.Histogram) Latencies {
	if h == nil || h.TotalCount() == 0 {
		return Latencies{}
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return Latencies{
		Count: h.TotalCount(),
		Min:   us(h.Min()),
		Mean:  time.Duration(h.Mean() * float64(time.Microsecond)),
		P50:   us(h.ValueAtQuantile(50)),
		P95:   us(h.ValueAtQuantile(95)),
		P99:   us(h.ValueAtQuantile(99)),
		Max:   us(h.Max()),
	}
}

// Second is one per-second bucket of a run: [start+Offset s, start+Offset+1 s).
type Second struct {
	Offset    int             // whole seconds since the run start
	Started   int64           // iterations whose intended start fell in this second
	Completed int64           // results whose end (Start+Latency) fell in this second
	Classes   map[Class]int64 // those results by class
	VUs       int             // most VUs alive during this second (draining ones included)
	Latencies Latencies       // of those results, interrupted ones excluded
	// Dropped is the number of iterations an arrival-rate executor scheduled
	// in this second but could not start because every VU (up to maxVUs)
	// was busy (k6's dropped_iterations). Always 0 for closed-loop runs.
	Dropped int64
}

type bucket struct {
	started, completed int64
	classes            map[Class]int64
	vus                int
	dropped            int64
	hist               *hdr.Histogram // allocated on first latency
}

// add adds o's counts to b, and o's latencies when it has any (o's
// histogram becomes b's when b has none).
func (b *bucket) add(o bucket) {
	b.started += o.started
	b.completed += o.completed
	b.vus += o.vus
	b.dropped += o.dropped
	if len(o.classes) > 0 && b.classes == nil {
		b.classes = map[Class]int64{}
	}
	for c, n := range o.classes {
		b.classes[c] += n
	}
	if o.hist != nil {
		if b.hist == nil {
			b.hist = o.hist
		} else {
			b.hist.Merge(o.hist)
		}
	}
}

// Snapshot is the live progress of a run.
type Snapshot struct {
	Elapsed   time.Duration // since the run start (to its end once done)
	VUs       int           // VUs alive now, draining ones included
	TargetVUs int           // Profile.VUsAt now
	Started   int64         // iterations started so far
	Completed int64         // results recorded so far
	InFlight  int64         // Started - Completed
	Totals    map[Class]int64
	Done      bool
}

// Metrics records the results of a run: totals per class, a latency
// HdrHistogram and per-second buckets relative to the run start. It is safe
// for concurrent use; the engine fills it while a run goes on, Snapshot reads
// progress meanwhile.
//
// Latency histograms hold every result except interrupted ones (whose
// latency was cut by the engine); interrupted results are counted in the
// totals and buckets.
type Metrics struct {
	mu        sync.Mutex
	clock     Clock
	start     time.Time
	end       time.Time
	begun     bool
	done      bool
	started   int64
	completed int64
	totals    map[Class]int64
	hist      *hdr.Histogram
	buckets   []bucket
	vus       int
	targetVUs int
	peakVUs   int
	dropped   int64
	droppedIt int64 // iterations an arrival-rate executor could not start
	errs      errorSet
}

// NewMetrics returns an empty recorder. Pass it to WithMetrics to watch a
// run live, or fill it with Record.
func NewMetrics() *Metrics {
	return &Metrics{clock: systemClock{}, totals: map[Class]int64{}, hist: hdr.New(histLowest, histHighest, histSigFigs)}
}

var errMetricsInUse = errors.New("load: metrics already hold a run")

// begin starts a run at start.
func (m *Metrics) begin(start time.Time, c Clock) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.begun {
		return errMetricsInUse
	}
	m.begun, m.start, m.clock = true, start, c
	return nil
}

func (m *Metrics) beginAtLocked(t time.Time) {
	if !m.begun {
		m.begun, m.start = true, t
	}
}

// secondLocked is the bucket index of t, created with the VUs in effect.
func (m *Metrics) bucketLocked(t time.Time) *bucket {
	i := 0
	if d := t.Sub(m.start); d > 0 {
		i = min(int(d/time.Second), maxSecondIndex)
	}
	for len(m.buckets) <= i {
		m.buckets = append(m.buckets, bucket{vus: m.vus})
	}
	return &m.buckets[i]
}

func (m *Metrics) iterationStarted(at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started++
	m.bucketLocked(at).started++
}

// Record adds r as a started and completed iteration, for building Metrics
// from stored results. If m has no run start yet, r.Start becomes it.
func (m *Metrics) Record(r Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.beginAtLocked(r.Start)
	m.started++
	m.bucketLocked(r.Start).started++
	m.recordLocked(r)
}

func (m *Metrics) record(r Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recordLocked(r)
}

func (m *Metrics) recordLocked(r Result) {
	lat := max(r.Latency, 0)
	m.completed++
	m.totals[r.Class]++
	b := m.bucketLocked(r.Start.Add(lat))
	b.completed++
	if b.classes == nil {
		b.classes = map[Class]int64{}
	}
	b.classes[r.Class]++
	m.errs.add(r.Class, r.Err, 1)
	if r.Class == ClassInterrupted {
		return
	}
	us := min(max(int64(lat/time.Microsecond), histLowest), histHighest)
	_ = m.hist.RecordValue(us) // in range by construction
	if b.hist == nil {
		b.hist = hdr.New(histLowest, histHighest, secondSigFigs)
	}
	_ = b.hist.RecordValue(us)
}

func (m *Metrics) vuDelta(at time.Time, d int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucketLocked(at) // a new bucket starts with the count before this change
	m.vus += d
	m.peakVUs = max(m.peakVUs, m.vus)
	b.vus = max(b.vus, m.vus)
	last := &m.buckets[len(m.buckets)-1] // events may arrive slightly out of order
	last.vus = max(last.vus, m.vus)
}

func (m *Metrics) setTarget(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.targetVUs = n
}

func (m *Metrics) dropResult() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropped++
}

// dropIteration counts an iteration scheduled at at that no VU could start.
func (m *Metrics) dropIteration(at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.droppedIt++
	m.bucketLocked(at).dropped++
}

// DroppedIterations is the number of iterations an arrival-rate executor
// scheduled but could not start because all of its VUs (maxVUs) were busy
// (k6's dropped_iterations). They have no Result and no latency.
func (m *Metrics) DroppedIterations() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.droppedIt
}

func (m *Metrics) finish(end time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done, m.end, m.targetVUs = true, end, 0
	if end.After(m.start) {
		m.bucketLocked(end.Add(-1))
	}
}

// Start is the run start (zero before any run or record).
func (m *Metrics) Start() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.start
}

// Duration is the length of the finished run, graceful stop included; while
// running, the time elapsed so far.
func (m *Metrics) Duration() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.elapsedLocked()
}

func (m *Metrics) elapsedLocked() time.Duration {
	switch {
	case !m.begun:
		return 0
	case m.done:
		return m.end.Sub(m.start)
	}
	return m.clock.Now().Sub(m.start)
}

// Started is the number of iterations started.
func (m *Metrics) Started() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started
}

// Completed is the number of results recorded, every class included.
func (m *Metrics) Completed() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.completed
}

// Count is the number of results of class c.
func (m *Metrics) Count(c Class) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.totals[c]
}

// Totals is a copy of the result counts per class.
func (m *Metrics) Totals() map[Class]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.totals)
}

// Latencies summarises the run histogram (interrupted results excluded).
func (m *Metrics) Latencies() Latencies {
	m.mu.Lock()
	defer m.mu.Unlock()
	return latenciesOf(m.hist)
}

// Histogram is a copy of the run latency histogram, in microseconds.
func (m *Metrics) Histogram() *hdr.Histogram {
	m.mu.Lock()
	defer m.mu.Unlock()
	return hdr.Import(m.hist.Export())
}

// PeakVUs is the most VUs alive at once.
func (m *Metrics) PeakVUs() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peakVUs
}

// DroppedResults is the number of results the result callback did not get
// because its queue stayed full (they are in the metrics all the same).
func (m *Metrics) DroppedResults() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dropped
}

// Seconds returns the per-second buckets, one per second from the start to
// the last event, gaps included.
func (m *Metrics) Seconds() []Second {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Second, len(m.buckets))
	for i, b := range m.buckets {
		out[i] = Second{Offset: i, Started: b.started, Completed: b.completed,
			Classes: maps.Clone(b.classes), VUs: b.vus, Latencies: latenciesOf(b.hist), Dropped: b.dropped}
		if out[i].Classes == nil {
			out[i].Classes = map[Class]int64{}
		}
	}
	return out
}

// SecondHistogram is a copy of the latency histogram of per-second bucket
// i (microseconds, 2 significant figures), nil when that second has no
// latency. With Histogram it is what a load generator ships so that several
// generators' results merge exactly (hdr Merge, then percentiles).
func (m *Metrics) SecondHistogram(i int) *hdr.Histogram {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < 0 || i >= len(m.buckets) || m.buckets[i].hist == nil {
		return nil
	}
	return hdr.Import(m.buckets[i].hist.Export())
}

// Snapshot returns the progress so far.
func (m *Metrics) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Snapshot{Elapsed: m.elapsedLocked(), VUs: m.vus, TargetVUs: m.targetVUs,
		Started: m.started, Completed: m.completed, InFlight: m.started - m.completed,
		Totals: maps.Clone(m.totals), Done: m.done}
}

// Merge adds o's counts, histograms and buckets to m, for combining runs
// (load generators of one test, or repeated runs). Buckets are aligned by
// their offset from each run's own start, so their counts and VUs add up;
// m keeps its start (o's if m has none) and the longer duration. o is read
// under its own lock before m is locked, so a.Merge(b) and b.Merge(a) may
// run concurrently.
func (m *Metrics) Merge(o *Metrics) {
	if o == nil {
		return
	}
	o.mu.Lock()
	oBegun, oStart, oDur := o.begun, o.start, o.elapsedLocked()
	oStarted, oCompleted, oDropped, oPeak, oDroppedIt := o.started, o.completed, o.dropped, o.peakVUs, o.droppedIt
	oTotals, oHist, oErrs := maps.Clone(o.totals), hdr.Import(o.hist.Export()), o.errs.list("")
	oBuckets := make([]bucket, len(o.buckets))
	for i, b := range o.buckets {
		oBuckets[i] = bucket{started: b.started, completed: b.completed, classes: maps.Clone(b.classes), vus: b.vus, dropped: b.dropped}
		if b.hist != nil {
			oBuckets[i].hist = hdr.Import(b.hist.Export())
		}
	}
	o.mu.Unlock()

	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.begun || m.done {
		cur := time.Duration(0)
		if m.done {
			cur = m.end.Sub(m.start)
		}
		if !m.begun {
			m.begun, m.start = oBegun, oStart
		}
		m.done, m.end = true, m.start.Add(max(cur, oDur))
	}
	m.started += oStarted
	m.completed += oCompleted
	m.dropped += oDropped
	m.droppedIt += oDroppedIt
	for c, n := range oTotals {
		m.totals[c] += n
	}
	for _, e := range oErrs {
		m.errs.add(e.Class, e.Err, e.N)
	}
	m.hist.Merge(oHist)
	for len(m.buckets) < len(oBuckets) {
		m.buckets = append(m.buckets, bucket{})
	}
	peak := max(m.peakVUs, oPeak)
	for i, ob := range oBuckets {
		m.buckets[i].add(ob)
		peak = max(peak, m.buckets[i].vus)
	}
	m.peakVUs = peak
}
