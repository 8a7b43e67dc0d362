package scheduler

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// TestQueue: FIFO order, the bound (ErrQueueFull past it), PushFront past
// the bound, Remove from the middle.
func TestQueue(t *testing.T) {
	type op struct {
		kind string // push, front, pop, remove
		v    int
		err  error // push: want
		ok   bool  // pop/remove: want
		want int   // pop: the value
	}
	for _, tc := range []struct {
		name  string
		limit int
		ops   []op
		left  []int
	}{
		{"fifo", 3, []op{{kind: "push", v: 1}, {kind: "push", v: 2}, {kind: "push", v: 3},
			{kind: "pop", ok: true, want: 1}, {kind: "pop", ok: true, want: 2}, {kind: "pop", ok: true, want: 3}, {kind: "pop"}}, nil},
		{"full", 2, []op{{kind: "push", v: 1}, {kind: "push", v: 2}, {kind: "push", v: 3, err: ErrQueueFull},
			{kind: "pop", ok: true, want: 1}, {kind: "push", v: 4}}, []int{2, 4}},
		{"front past the bound", 2, []op{{kind: "push", v: 1}, {kind: "push", v: 2}, {kind: "front", v: 9},
			{kind: "push", v: 3, err: ErrQueueFull}, {kind: "pop", ok: true, want: 9}}, []int{1, 2}},
		{"remove", 4, []op{{kind: "push", v: 1}, {kind: "push", v: 2}, {kind: "push", v: 3},
			{kind: "remove", v: 2, ok: true}, {kind: "remove", v: 7}}, []int{1, 3}},
		{"limit below 1 is 1", 0, []op{{kind: "push", v: 1}, {kind: "push", v: 2, err: ErrQueueFull}}, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewQueue[int](tc.limit)
			for i, o := range tc.ops {
				switch o.kind {
				case "push":
					if err := q.Push(o.v); !errors.Is(err, o.err) {
						t.Fatalf("op %d push %d: err %v, want %v", i, o.v, err, o.err)
					}
				case "front":
					q.PushFront(o.v)
				case "pop":
					v, ok := q.Pop()
					if ok != o.ok || v != o.want {
						t.Fatalf("op %d pop: %d, %v; want %d, %v", i, v, ok, o.want, o.ok)
					}
				case "remove":
					if ok := q.Remove(o.v); ok != o.ok {
						t.Fatalf("op %d remove %d: %v, want %v", i, o.v, ok, o.ok)
					}
				}
			}
			var left []int
			for {
				v, ok := q.Pop()
				if !ok {
					break
				}
				left = append(left, v)
			}
			if !slices.Equal(left, tc.left) {
				t.Fatalf("left %v, want %v", left, tc.left)
			}
		})
	}
}

// TestWindowQuantiles: nearest-rank quantiles of the samples within the
// span only, on known in-flight histories sampled every 250 ms.
func TestWindowQuantiles(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		span    time.Duration
		history []float64 // one sample every 250 ms from t0
		at      time.Duration
		want    map[float64]float64
	}{
		{"steady", time.Minute, []float64{4, 4, 4, 4}, time.Second, map[float64]float64{0.5: 4, 0.75: 4, 0.99: 4}},
		{"1 to 4", time.Minute, []float64{1, 2, 3, 4}, time.Second, map[float64]float64{0.5: 2, 0.75: 3, 0.99: 4}},
		// A short spike (one sample in 8) moves only the high quantile: why the post reads a quantile.
		{"short spike", time.Minute, []float64{2, 2, 2, 2, 2, 2, 2, 40}, 2 * time.Second, map[float64]float64{0.5: 2, 0.75: 2, 0.99: 40}},
		// Span 1 s at 2 s: only the samples at 1.25, 1.5, 1.75 s are in (1 s is at the edge: out).
		{"old samples drop", time.Second, []float64{9, 9, 9, 9, 9, 1, 2, 3}, 2 * time.Second, map[float64]float64{0.5: 2, 0.75: 3, 0.99: 3}},
		{"all too old", time.Second, []float64{5, 5}, 10 * time.Second, map[float64]float64{0.5: math.NaN(), 0.75: math.NaN(), 0.99: math.NaN()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Window{Span: tc.span}
			sum := 0.0
			for i, v := range tc.history {
				w.Observe(t0.Add(time.Duration(i)*250*time.Millisecond), v)
				sum += v
			}
			got := w.Quantiles(t0.Add(tc.at), 0.5, 0.75, 0.99)
			for q, want := range tc.want {
				if g := got[q]; g != want && !(math.IsNaN(g) && math.IsNaN(want)) {
					t.Errorf("quantile %v = %v, want %v (all: %v)", q, g, want, got)
				}
			}
			if w.Count() != uint64(len(tc.history)) || w.Sum() != sum {
				t.Errorf("count %d sum %v, want %d %v (every sample ever)", w.Count(), w.Sum(), len(tc.history), sum)
			}
		})
	}
}

// TestPostSettings: the threshold is the post's floor of 75 % of 6, the
// query is the post's on our summary, and desiredReplicas follows the
// post's example.
func TestPostSettings(t *testing.T) {
	if got := int(math.Floor(PostTargetUtilization * PostWorkersPerQuerier)); got != PostThreshold {
		t.Fatalf("floor(%v * %d) = %d, PostThreshold = %d", PostTargetUtilization, PostWorkersPerQuerier, got, PostThreshold)
	}
	want := `sum(max_over_time(loki_query_scheduler_inflight_requests{namespace="sp-test",quantile="0.75"}[2m]))`
	if got := PostQuery("sp-test"); got != want {
		t.Fatalf("PostQuery = %s\nwant       %s", got, want)
	}
	for _, tc := range []struct {
		inflight float64
		want     int
	}{{20, 10}, {0, 10}, {41, 11}, {199, 50}, {400, 50}} {
		if got := DesiredReplicas(tc.inflight, PostThreshold, PostMinReplicas, PostMaxReplicas); got != tc.want {
			t.Errorf("DesiredReplicas(%v) = %d, want %d", tc.inflight, got, tc.want)
		}
	}
	if got := DesiredReplicas(20, 4, 1, 50); got != 5 { // the post: ceil[1 * (20 / 4)] = 5
		t.Errorf("the post's example: %d, want 5", got)
	}
	for d, want := range map[time.Duration]string{2 * time.Minute: "2m", 90 * time.Second: "1m30s", 500 * time.Millisecond: "500ms", time.Hour: "1h"} {
		if got := promDuration(d); got != want {
			t.Errorf("promDuration(%s) = %s, want %s", d, got, want)
		}
	}
}
