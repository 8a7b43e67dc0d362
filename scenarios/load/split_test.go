package load

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestShareInt(t *testing.T) {
	for _, tc := range []struct {
		total int64
		n     int
		want  []int64
	}{
		{64, 3, []int64{22, 21, 21}},
		{65, 3, []int64{22, 22, 21}},
		{66, 3, []int64{22, 22, 22}},
		{2, 3, []int64{1, 1, 0}},
		{0, 3, []int64{0, 0, 0}},
		{7, 1, []int64{7}},
		{10_000_000, 3, []int64{3_333_334, 3_333_333, 3_333_333}},
	} {
		var got []int64
		var sum int64
		for i := range tc.n {
			s := ShareInt(tc.total, i, tc.n)
			got = append(got, s)
			sum += s
		}
		if !slices.Equal(got, tc.want) || sum != tc.total {
			t.Errorf("ShareInt(%d over %d) = %v (sum %d), want %v", tc.total, tc.n, got, sum, tc.want)
		}
	}
	if ShareInt(5, 3, 3) != 0 || ShareInt(5, -1, 3) != 0 || ShareInt(5, 0, 0) != 0 {
		t.Error("out-of-range shard should get 0")
	}
}

func TestShareRate(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		n    int
		want []float64
	}{
		{500, 3, []float64{167, 167, 166}},
		{500.5, 3, []float64{167, 167, 166.5}},
		{10, 4, []float64{3, 3, 2, 2}},
		{0.5, 3, []float64{0.5, 0, 0}},
		{2.25, 3, []float64{1, 1, 0.25}},
		{3.75, 3, []float64{1.75, 1, 1}},
	} {
		var got []float64
		sum := 0.0
		for i := range tc.n {
			s := ShareRate(tc.rate, i, tc.n)
			got = append(got, s)
			sum += s
		}
		if !slices.Equal(got, tc.want) || sum != tc.rate {
			t.Errorf("ShareRate(%v over %d) = %v (sum %v), want %v", tc.rate, tc.n, got, sum, tc.want)
		}
	}
}

func TestProfileSplit(t *testing.T) {
	const n = 3
	for _, tc := range []struct {
		name string
		p    Profile
	}{
		{"constant-vus 64", ConstantVUs(64, time.Minute)},
		{"ramping-vus", RampingVUs(5, Stage{2 * time.Minute, 50}, Stage{time.Minute, 50}, Stage{30 * time.Second, 100}, Stage{30 * time.Second, 0})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parts []Profile
			for i := range n {
				q, err := tc.p.Split(i, n)
				if err != nil {
					t.Fatalf("shard %d: %v", i, err)
				}
				if err := q.Validate(); err != nil {
					t.Fatalf("shard %d: %v", i, err)
				}
				if q.TotalDuration() != tc.p.TotalDuration() || q.GracefulStop != tc.p.GracefulStop {
					t.Errorf("shard %d: timeline changed", i)
				}
				parts = append(parts, q)
			}
			var maxIt int64
			for _, q := range parts {
				maxIt += q.MaxIterations
			}
			if maxIt != tc.p.MaxIterations {
				t.Errorf("MaxIterations add up to %d, want %d", maxIt, tc.p.MaxIterations)
			}
			// At every stage end (and the start) the shards' VUs add up exactly;
			// in between at most n-1 below.
			checkAt := []time.Duration{0}
			var end time.Duration
			for _, s := range tc.p.Stages {
				end += s.Duration
				checkAt = append(checkAt, end-1)
			}
			for _, at := range checkAt {
				sum := 0
				for _, q := range parts {
					sum += q.VUsAt(at)
				}
				if want := tc.p.VUsAt(at); sum > want || sum < want-(n-1) {
					t.Errorf("at %s: shards have %d VUs, total %d", at, sum, want)
				}
			}
			if tc.p.Executor == ExecutorConstantVUs {
				if got := []int{parts[0].VUs, parts[1].VUs, parts[2].VUs}; !slices.Equal(got, []int{22, 21, 21}) {
					t.Errorf("VUs %v, want 22/21/21", got)
				}
			} else {
				for k := range tc.p.Stages {
					sum := 0
					for _, q := range parts {
						sum += q.Stages[k].Target
					}
					if sum != tc.p.Stages[k].Target {
						t.Errorf("stage %d targets add up to %d, want %d", k, sum, tc.p.Stages[k].Target)
					}
				}
			}
		})
	}
	t.Run("fewer VUs than shards", func(t *testing.T) {
		p := ConstantVUs(2, time.Second)
		if _, err := p.Split(2, 3); !errors.Is(err, ErrIdleShard) {
			t.Errorf("shard 2 of 3 with 2 VUs: %v, want ErrIdleShard", err)
		}
		if q, err := p.Split(1, 3); err != nil || q.VUs != 1 {
			t.Errorf("shard 1 of 3 with 2 VUs: %d VUs, %v", q.VUs, err)
		}
	})
	t.Run("bad shard", func(t *testing.T) {
		if _, err := ConstantVUs(2, time.Second).Split(3, 3); err == nil || errors.Is(err, ErrIdleShard) {
			t.Errorf("shard 3 of 3: %v, want an error", err)
		}
	})
}

func TestArrivalSplit(t *testing.T) {
	const n = 3
	for _, tc := range []struct {
		name string
		p    ArrivalProfile
	}{
		{"constant 500/s", ConstantArrivalRate(500, time.Second, time.Minute, 50, 500)},
		{"ramping", RampingArrivalRate(10, time.Second, 20, 64, RateStage{30 * time.Second, 100.5}, RateStage{time.Minute, 0})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rate, start float64
			var pre, maxv int
			targets := make([]float64, len(tc.p.Stages))
			for i := range n {
				q, err := tc.p.Split(i, n)
				if err != nil {
					t.Fatalf("shard %d: %v", i, err)
				}
				if err := q.Validate(); err != nil {
					t.Fatalf("shard %d: %v", i, err)
				}
				rate += q.Rate
				start += q.StartRate
				pre += q.PreAllocatedVUs
				maxv += q.MaxVUs
				for k, s := range q.Stages {
					targets[k] += s.Target
				}
			}
			if rate != tc.p.Rate || start != tc.p.StartRate || pre != tc.p.PreAllocatedVUs || maxv != tc.p.maxVUs() {
				t.Errorf("shares add up to rate %v start %v pre %d max %d; want %v %v %d %d",
					rate, start, pre, maxv, tc.p.Rate, tc.p.StartRate, tc.p.PreAllocatedVUs, tc.p.maxVUs())
			}
			for k, s := range tc.p.Stages {
				if targets[k] != s.Target {
					t.Errorf("stage %d: targets add up to %v, want %v", k, targets[k], s.Target)
				}
			}
		})
	}
	t.Run("iterations scheduled add up", func(t *testing.T) {
		// Over the whole profile the shards schedule as many iterations as the
		// total would, give or take one per shard (each starts its own at 0).
		p := ConstantArrivalRate(500, time.Second, 10*time.Second, 50, 500)
		count := func(q ArrivalProfile) int64 {
			s := newSchedule(q)
			var k int64
			for ; k < 1e6; k++ {
				if _, ok := s.at(k); !ok {
					break
				}
			}
			return k
		}
		var sum int64
		for i := range n {
			q, _ := p.Split(i, n)
			sum += count(q)
		}
		if total := count(p); sum < total || sum > total+n {
			t.Errorf("shards schedule %d iterations, total %d", sum, total)
		}
	})
}

func TestShardSpec(t *testing.T) {
	p := ConstantVUs(64, time.Minute)
	good := ShardSpec{Start: t0, Shards: 3, Closed: &p, Target: ShardTarget{URL: "http://10.0.0.1/mcp", Tool: "work"}}
	js, err := good.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeShardSpec(js)
	if err != nil || !back.Start.Equal(t0) || back.Closed.VUs != 64 || back.Closed.GracefulStop != p.GracefulStop {
		t.Errorf("round trip: %+v %v", back, err)
	}
	if good.PeakVUs() != 64 || good.TotalDuration() != time.Minute+DefaultGracefulStop {
		t.Errorf("peak %d, total %s", good.PeakVUs(), good.TotalDuration())
	}
	_, err = DecodeShardSpec(`{"shards":3}`)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "load: shard spec: no start time; ") ||
		!strings.Contains(err.Error(), "exactly one of") {
		t.Errorf("a bad spec: %q, want every problem on one line", err)
	}
}
