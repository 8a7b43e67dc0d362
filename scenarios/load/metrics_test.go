package load

import (
	"sync"
	"testing"
	"time"
)

func at(d time.Duration) time.Time { return fakeEpoch.Add(d) }

func recorded(start time.Time, rs ...Result) *Metrics {
	m := NewMetrics()
	_ = m.begin(start, newFakeClock())
	for _, r := range rs {
		m.Record(r)
	}
	m.finish(start.Add(4 * time.Second))
	return m
}

func within(got, want time.Duration) bool { // HdrHistogram, 3 significant figures
	d := got - want
	return d >= -want/500 && d <= want/500
}

func TestMetricsRecordAndSeconds(t *testing.T) {
	ms := time.Millisecond
	m := recorded(fakeEpoch,
		Result{Start: at(100 * ms), Latency: 10 * ms, Class: ClassOK},
		Result{Start: at(900 * ms), Latency: 200 * ms, Class: ClassOK},              // completes in second 1
		Result{Start: at(1500 * ms), Latency: 100 * ms, Class: Class5xx},            //
		Result{Start: at(2200 * ms), Latency: time.Second, Class: ClassInterrupted}, // not in histograms
	)
	checkConsistent(t, m)
	sec := m.Seconds()
	if len(sec) != 4 {
		t.Fatalf("%d seconds, want 4 (run of 4s)", len(sec))
	}
	want := []struct {
		started, completed int64
		classes            map[Class]int64
		latencies          int64
	}{
		{2, 1, map[Class]int64{ClassOK: 1}, 1},
		{1, 2, map[Class]int64{ClassOK: 1, Class5xx: 1}, 2},
		{1, 0, map[Class]int64{}, 0},
		{0, 1, map[Class]int64{ClassInterrupted: 1}, 0},
	}
	for i, w := range want {
		s := sec[i]
		if s.Offset != i || s.Started != w.started || s.Completed != w.completed || s.Latencies.Count != w.latencies || len(s.Classes) != len(w.classes) {
			t.Errorf("second %d: %+v, want %+v", i, s, w)
		}
		for c, n := range w.classes {
			if s.Classes[c] != n {
				t.Errorf("second %d class %s: %d, want %d", i, c, s.Classes[c], n)
			}
		}
	}
	l := m.Latencies()
	if l.Count != 3 || !within(l.Max, 200*ms) || !within(l.Min, 10*ms) || !within(l.P50, 100*ms) {
		t.Errorf("latencies %+v", l)
	}
	if h := m.Histogram(); h.TotalCount() != 3 || h.SignificantFigures() != 3 || h.HighestTrackableValue() < int64(10*time.Minute/time.Microsecond) {
		t.Errorf("histogram count %d sig %d highest %d", h.TotalCount(), h.SignificantFigures(), h.HighestTrackableValue())
	}
	if d := m.Duration(); d != 4*time.Second {
		t.Errorf("duration %s", d)
	}
}

func TestMetricsClampsLatency(t *testing.T) {
	m := NewMetrics()
	m.Record(Result{Start: fakeEpoch, Latency: time.Hour, Class: ClassOK})
	m.Record(Result{Start: fakeEpoch, Latency: -time.Second, Class: ClassOK})
	if l := m.Latencies(); l.Count != 2 || !within(l.Max, 10*time.Minute) || l.Min != time.Microsecond {
		t.Errorf("latencies %+v", l)
	}
	if !m.Start().Equal(fakeEpoch) {
		t.Errorf("start %v, want the first result's", m.Start())
	}
}

func TestMetricsMerge(t *testing.T) {
	ms := time.Millisecond
	a := recorded(fakeEpoch,
		Result{Start: at(100 * ms), Latency: 10 * ms, Class: ClassOK},
		Result{Start: at(1500 * ms), Latency: 100 * ms, Class: Class5xx},
		Result{Start: at(2200 * ms), Latency: time.Second, Class: ClassInterrupted},
	)
	bStart := fakeEpoch.Add(time.Hour) // buckets align by offset, not by wall time
	b := recorded(bStart,
		Result{Start: bStart.Add(200 * ms), Latency: 20 * ms, Class: ClassOK},
		Result{Start: bStart.Add(3100 * ms), Latency: 30 * ms, Class: Class429},
	)
	a.vuDelta(at(0), 3)
	b.vuDelta(bStart, 2)

	empty := NewMetrics()
	empty.Merge(a)
	empty.Merge(nil)
	if !empty.Start().Equal(a.Start()) || empty.Completed() != 3 || empty.Latencies() != a.Latencies() || empty.Duration() != a.Duration() {
		t.Errorf("merge into empty: start %v completed %d latencies %+v", empty.Start(), empty.Completed(), empty.Latencies())
	}

	a.Merge(b)
	checkConsistent(t, a)
	want := map[Class]int64{ClassOK: 2, Class5xx: 1, ClassInterrupted: 1, Class429: 1}
	for c, n := range want {
		if a.Count(c) != n {
			t.Errorf("class %s: %d, want %d", c, a.Count(c), n)
		}
	}
	if a.Completed() != 5 || a.Latencies().Count != 4 || !within(a.Latencies().Max, 100*ms) {
		t.Errorf("completed %d latencies %+v", a.Completed(), a.Latencies())
	}
	sec := a.Seconds()
	if len(sec) != 4 || sec[0].Completed != 2 || sec[0].Latencies.Count != 2 || sec[3].Classes[Class429] != 1 || sec[3].Classes[ClassInterrupted] != 1 {
		t.Errorf("merged seconds %+v", sec)
	}
	if sec[0].VUs != 5 || a.PeakVUs() != 5 {
		t.Errorf("merged VUs %d peak %d, want 5", sec[0].VUs, a.PeakVUs())
	}
	if !a.Start().Equal(fakeEpoch) {
		t.Errorf("merged start %v", a.Start())
	}
}

// a.Merge(b) and b.Merge(a) at once must not deadlock.
func TestMetricsMergeBothWays(t *testing.T) {
	a := recorded(fakeEpoch, Result{Start: at(0), Latency: time.Millisecond, Class: ClassOK})
	b := recorded(fakeEpoch, Result{Start: at(0), Latency: time.Millisecond, Class: Class4xx})
	var wg sync.WaitGroup
	for range 10 { // each merge can double the counts: keep it far from overflow
		wg.Add(2)
		go func() { defer wg.Done(); a.Merge(b) }()
		go func() { defer wg.Done(); b.Merge(a); _ = b.Snapshot() }()
	}
	wg.Wait()
	if a.Completed() < 2 || b.Completed() < 2 {
		t.Errorf("completed %d %d", a.Completed(), b.Completed())
	}
}

func TestMetricsSnapshot(t *testing.T) {
	clk := newFakeClock()
	m := NewMetrics()
	if s := m.Snapshot(); s.Elapsed != 0 || s.Done {
		t.Errorf("empty snapshot %+v", s)
	}
	_ = m.begin(clk.Now(), clk)
	m.setTarget(4)
	m.vuDelta(clk.Now(), 4)
	m.iterationStarted(clk.Now())
	m.iterationStarted(clk.Now())
	clk.Advance(1500 * time.Millisecond)
	m.record(Result{Start: fakeEpoch, Latency: time.Second, Class: ClassOK})
	s := m.Snapshot()
	if s.Elapsed != 1500*time.Millisecond || s.VUs != 4 || s.TargetVUs != 4 || s.Started != 2 || s.Completed != 1 || s.InFlight != 1 || s.Totals[ClassOK] != 1 || s.Done {
		t.Errorf("snapshot %+v", s)
	}
	s.Totals[ClassOK] = 99
	if m.Count(ClassOK) != 1 {
		t.Error("snapshot shares its totals map")
	}
}
