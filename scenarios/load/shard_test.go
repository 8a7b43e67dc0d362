package load

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// sample makes n results starting at off from t0 over span, with latencies
// drawn from a seeded source (a shard's own calls).
func sample(seed uint64, n int, off, span time.Duration) []Result {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]Result, n)
	for i := range out {
		c, reason := ClassOK, ""
		switch rng.IntN(20) {
		case 0:
			c, reason = Class429, "429 Too Many Requests"
		case 1:
			c, reason = ClassInterrupted, "graceful stop"
		case 2:
			c, reason = Class5xx, []string{"502 Bad Gateway: worker w-1 failed: EOF", "503 Service Unavailable"}[rng.IntN(2)]
		}
		out[i] = Result{Start: t0.Add(off + time.Duration(rng.Int64N(int64(span)))),
			Latency: time.Duration(1+rng.ExpFloat64()*50) * time.Millisecond, Class: c, Err: reason}
	}
	return out
}

// metricsOf is one generator's Metrics for rs, its run started at start.
func shardMetrics(t *testing.T, start time.Time, dur time.Duration, rs ...[]Result) *Metrics {
	t.Helper()
	m := NewMetrics()
	if err := m.begin(start, SystemClock()); err != nil {
		t.Fatal(err)
	}
	for _, part := range rs {
		for _, r := range part {
			m.Record(r)
		}
	}
	m.finish(start.Add(dur))
	return m
}

func resultOf(t *testing.T, m *Metrics, shard, shards int) ShardResult {
	t.Helper()
	r, err := NewShardResult(m, shard, shards, 100, 200, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(shard, shards); err != nil {
		t.Fatalf("shard %d: %v", shard, err)
	}
	return r
}

func TestMergeShards(t *testing.T) {
	type shard struct {
		start time.Duration // after t0
		n     int
	}
	for _, tc := range []struct {
		name   string
		shards []shard
	}{
		{"three at the common start", []shard{{0, 3000}, {0, 2500}, {0, 2000}}},
		{"started at different offsets", []shard{{0, 3000}, {2 * time.Second, 1500}, {5 * time.Second, 800}}},
		{"one shard", []shard{{0, 1000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const span = 10 * time.Second
			var all [][]Result
			var rs []ShardResult
			var wantSent int64
			for i, s := range tc.shards {
				calls := sample(uint64(i+1), s.n, s.start, span)
				all = append(all, calls)
				rs = append(rs, resultOf(t, shardMetrics(t, t0.Add(s.start), span+time.Second, calls), i, len(tc.shards)))
				wantSent += 100
			}
			merged := MergeShards(t0, rs)
			single := shardMetrics(t, t0, span, all...) // one histogram of every sample

			// counts add up exactly
			var sumCompleted int64
			for _, r := range rs {
				sumCompleted += r.Completed
			}
			if merged.Completed() != sumCompleted || merged.Completed() != single.Completed() || merged.Started() != single.Started() {
				t.Errorf("completed %d, shards sum %d, single %d; started %d vs %d",
					merged.Completed(), sumCompleted, single.Completed(), merged.Started(), single.Started())
			}
			for _, c := range AllClasses() {
				if merged.Count(c) != single.Count(c) {
					t.Errorf("class %s: merged %d, single %d", c, merged.Count(c), single.Count(c))
				}
			}
			// so do the failed calls' reasons
			if me, se := merged.Errors(""), single.Errors(""); !reflect.DeepEqual(me, se) || len(se) != 4 {
				t.Errorf("reasons merged %+v, single %+v (want 4)", me, se)
			}
			// percentiles from the merged histogram equal one histogram of all samples
			if ml, sl := merged.Latencies(), single.Latencies(); ml != sl {
				t.Errorf("latencies merged %+v, single %+v", ml, sl)
			}
			for _, q := range []float64{90, 99.9} {
				if merged.Quantile(q) != single.Quantile(q) {
					t.Errorf("p%v: merged %s, single %s", q, merged.Quantile(q), single.Quantile(q))
				}
			}
			// per-second series aligned by wall-clock second
			ms, ss := merged.Seconds(), single.Seconds()
			if len(ms) < len(ss) {
				t.Fatalf("merged has %d seconds, single %d", len(ms), len(ss))
			}
			for i := range ss {
				a, b := ms[i], ss[i]
				if a.Started != b.Started || a.Completed != b.Completed || a.Latencies != b.Latencies {
					t.Errorf("second %d: merged started %d completed %d p95 %s; single %d %d %s",
						i, a.Started, a.Completed, a.Latencies.P95, b.Started, b.Completed, b.Latencies.P95)
				}
			}
			if !merged.Start().Equal(t0) {
				t.Errorf("merged start %s, want %s", merged.Start(), t0)
			}
			if last := t0.Add(tc.shards[len(tc.shards)-1].start + span + time.Second); merged.Duration() < last.Sub(t0) {
				t.Errorf("merged duration %s, want at least %s", merged.Duration(), last.Sub(t0))
			}
		})
	}

	t.Run("a missing shard", func(t *testing.T) {
		a := resultOf(t, shardMetrics(t, t0, 5*time.Second, sample(1, 500, 0, 4*time.Second)), 0, 3)
		c := resultOf(t, shardMetrics(t, t0, 5*time.Second, sample(3, 700, 0, 4*time.Second)), 2, 3)
		m := MergeShards(t0, []ShardResult{a, c}) // shard 1 died: the caller reports it
		if m.Completed() != a.Completed+c.Completed || m.Started() != a.Started+c.Started {
			t.Errorf("completed %d, want %d + %d", m.Completed(), a.Completed, c.Completed)
		}
	})

	t.Run("a shard whose clock runs ahead", func(t *testing.T) {
		early := resultOf(t, shardMetrics(t, t0.Add(-2*time.Second), 3*time.Second, sample(1, 100, -2*time.Second, time.Second)), 0, 2)
		onTime := resultOf(t, shardMetrics(t, t0, 3*time.Second, sample(2, 100, 0, time.Second)), 1, 2)
		m := MergeShards(t0, []ShardResult{early, onTime})
		secs := m.Seconds()
		if !m.Start().Equal(t0.Add(-2*time.Second)) || len(secs) < 3 || secs[0].Started != 100 || secs[2].Started != 100 {
			t.Errorf("start %s, seconds %+v", m.Start(), secs)
		}
	})

	t.Run("nothing to merge", func(t *testing.T) {
		if m := MergeShards(t0, nil); m.Completed() != 0 || !m.Start().Equal(t0) {
			t.Errorf("empty merge: %d completed, start %s", m.Completed(), m.Start())
		}
	})
}

func TestShardResultFraming(t *testing.T) {
	m := shardMetrics(t, t0, 60*time.Second, sample(9, 20_000, 0, 59*time.Second))
	r := resultOf(t, m, 1, 3)
	var buf bytes.Buffer
	buf.WriteString("time=... level=INFO msg=\"shard 1 of 3 waiting for the start\"\n")
	if err := WriteShardResult(&buf, r); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("time=... level=INFO msg=done\n")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for _, l := range lines {
		if len(l) > 4096 {
			t.Fatalf("a log line of %d bytes", len(l))
		}
	}
	t.Logf("a 60 s shard result of %d calls: %d log lines, %d bytes", r.Completed, len(lines)-2, buf.Len())

	got, err := ReadShardResult(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Check(1, 3); err != nil {
		t.Fatal(err)
	}
	back := MergeShards(t0, []ShardResult{got})
	if back.Completed() != m.Completed() || back.Latencies() != m.Latencies() {
		t.Errorf("round trip: %d completed %+v, want %d %+v", back.Completed(), back.Latencies(), m.Completed(), m.Latencies())
	}

	t.Run("no result", func(t *testing.T) {
		if _, err := ReadShardResult([]byte("panic: boom\n")); !errors.Is(err, ErrNoShardResult) {
			t.Errorf("got %v, want ErrNoShardResult", err)
		}
	})
	t.Run("a part missing", func(t *testing.T) {
		var cut []string
		for _, l := range lines {
			if !strings.Contains(l, " 2/") {
				cut = append(cut, l)
			}
		}
		if _, err := ReadShardResult([]byte(strings.Join(cut, "\n"))); err == nil || !strings.Contains(err.Error(), "missing") {
			t.Errorf("got %v, want parts missing", err)
		}
	})
	t.Run("a part changed", func(t *testing.T) {
		bad := strings.Replace(buf.String(), " 1/", " 1/", 1)
		i := strings.Index(bad, " 1/")
		j := i + strings.Index(bad[i:], "\n") - 5
		bad = bad[:j] + "AAAA" + bad[j+4:]
		if _, err := ReadShardResult([]byte(bad)); err == nil || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("got %v, want a checksum error", err)
		}
	})
}

func TestShardResultCheck(t *testing.T) {
	good := resultOf(t, shardMetrics(t, t0, 3*time.Second, sample(4, 300, 0, 2*time.Second)), 0, 2)
	for _, tc := range []struct {
		name   string
		change func(r *ShardResult)
		want   string
	}{
		{"wrong shard", func(r *ShardResult) { r.Shard = 1 }, "want shard 0 of 2"},
		{"wrong version", func(r *ShardResult) { r.Version = 99 }, "version"},
		{"no start", func(r *ShardResult) { r.Start = time.Time{} }, "start"},
		{"totals do not add up", func(r *ShardResult) { r.Totals[ClassOK]++ }, "classes add up"},
		{"unknown class", func(r *ShardResult) { r.Totals["teapot"] = 0 }, "teapot"},
		{"seconds do not add up", func(r *ShardResult) { r.Seconds[0].Started++ }, "seconds add up"},
		{"seconds out of order", func(r *ShardResult) { r.Seconds[1].Offset = 0 }, "out of order"},
		{"bad histogram", func(r *ShardResult) { r.Histogram = "not-hdr" }, "histogram"},
		{"completed above started", func(r *ShardResult) { r.Completed = r.Started + 1 }, "completed"},
		{"more reasons than calls of the class", func(r *ShardResult) {
			r.Errors = []ErrorCount{{Class5xx, "502 Bad Gateway", r.Totals[Class5xx] + 1}}
		}, "the reasons of class 5xx"},
		{"a reason for ok calls", func(r *ShardResult) { r.Errors = []ErrorCount{{ClassOK, "fine", 1}} }, "error reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			r.Totals = map[Class]int64{}
			for c, n := range good.Totals {
				r.Totals[c] = n
			}
			r.Seconds = append([]ShardSecond(nil), good.Seconds...)
			tc.change(&r)
			if err := r.Check(0, 2); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check: %v, want %q", err, tc.want)
			}
		})
	}
	idle := IdleShardResult(2, 3, t0)
	if err := idle.Check(2, 3); err != nil {
		t.Errorf("idle result: %v", err)
	}
}
