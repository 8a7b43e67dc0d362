package load

import (
	"context"
	"testing"
	"time"
)

func TestScheduleOffsets(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		p    ArrivalProfile
		want []time.Duration // every scheduled offset
	}{
		{"constant 10/s for 1s", ConstantArrivalRate(10, time.Second, time.Second, 1, 1),
			[]time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms, 600 * ms, 700 * ms, 800 * ms, 900 * ms}},
		{"constant 3 per 300ms for 600ms", ConstantArrivalRate(3, 300*ms, 600*ms, 1, 1),
			[]time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms}},
		// 0 -> 8/s over 1 s: n(t) = 4 t², so iteration k is due at sqrt(k/4) s.
		{"ramp 0 to 8/s over 1s", RampingArrivalRate(0, time.Second, 1, 1, RateStage{time.Second, 8}),
			[]time.Duration{0, 500 * ms, 707106781, 866025403}},
		// a flat stage at 2/s then a zero stage: nothing scheduled in the second stage.
		{"flat then zero", RampingArrivalRate(2, time.Second, 1, 1, RateStage{time.Second, 2}, RateStage{0, 0}, RateStage{time.Second, 0}),
			[]time.Duration{0, 500 * ms}},
		{"zero then up", RampingArrivalRate(0, time.Second, 1, 1, RateStage{time.Second, 0}, RateStage{0, 4}, RateStage{time.Second, 4}),
			[]time.Duration{time.Second, 1250 * ms, 1500 * ms, 1750 * ms}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.p.Validate(); err != nil {
				t.Fatal(err)
			}
			s := newSchedule(tc.p)
			var got []time.Duration
			for n := int64(0); n < 1000; n++ {
				off, ok := s.at(n)
				if !ok {
					break
				}
				got = append(got, off)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d offsets %v, want %v", len(got), got, tc.want)
			}
			for i := range got {
				if d := got[i] - tc.want[i]; d < -time.Microsecond || d > time.Microsecond {
					t.Errorf("iteration %d at %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestArrivalValidate(t *testing.T) {
	cases := []struct {
		name string
		p    ArrivalProfile
		ok   bool
	}{
		{"ok", ConstantArrivalRate(10, time.Second, time.Second, 1, 5), true},
		{"maxVUs defaults to preAllocated", ConstantArrivalRate(10, time.Second, time.Second, 3, 0), true},
		{"no VUs", ConstantArrivalRate(10, time.Second, time.Second, 0, 0), false},
		{"max below preAllocated", ConstantArrivalRate(10, time.Second, time.Second, 5, 2), false},
		{"zero rate", ConstantArrivalRate(0, time.Second, time.Second, 1, 1), false},
		{"no stages", RampingArrivalRate(1, time.Second, 1, 1), false},
		{"negative target", RampingArrivalRate(1, time.Second, 1, 1, RateStage{time.Second, -1}), false},
		{"unknown executor", ArrivalProfile{Executor: "per-vu-iterations", PreAllocatedVUs: 1, MaxIterations: 1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.p.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestArrivalDropsAndAllocates: 10 iterations at 100 ms spacing against a
// target that never answers; preAllocatedVUs 1, maxVUs 2: iteration 0 on
// VU 1, iteration 1 on a new VU 2, iterations 2..9 dropped; the two in
// flight are interrupted at the end of gracefulStop.
func TestArrivalDropsAndAllocates(t *testing.T) {
	cases := []struct {
		name            string
		pre, max        int
		wantDropped     int64
		wantInterrupted int64
	}{
		{"pre 1 max 2", 1, 2, 8, 2},
		{"pre 2 max 2", 2, 2, 8, 2},
		{"pre 1 max 10", 1, 10, 0, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			p := ConstantArrivalRate(10, time.Second, time.Second, tc.pre, tc.max)
			p.GracefulStop = 500 * time.Millisecond
			g := newGate()
			out := make(chan outcome, 1)
			go func() {
				m, err := RunArrival(context.Background(), p, g.exec, WithClock(clk))
				out <- outcome{m, err}
			}()
			// Each step: the controller parks on the next due time, we move there.
			for i := 1; i < 10; i++ {
				clk.waitTimerAt(t, fakeEpoch.Add(time.Duration(i)*100*time.Millisecond))
				clk.Advance(100 * time.Millisecond)
			}
			clk.waitTimerAt(t, fakeEpoch.Add(time.Second+p.GracefulStop))
			clk.Advance(time.Second)
			o := wait(t, out)
			if o.err != nil {
				t.Fatal(o.err)
			}
			if got := o.m.DroppedIterations(); got != tc.wantDropped {
				t.Errorf("dropped %d, want %d", got, tc.wantDropped)
			}
			if got := o.m.Count(ClassInterrupted); got != tc.wantInterrupted {
				t.Errorf("interrupted %d, want %d (totals %v)", got, tc.wantInterrupted, o.m.Totals())
			}
			if got := o.m.PeakVUs(); got != max(tc.max, tc.pre) {
				t.Errorf("peak VUs %d, want %d", got, tc.max)
			}
			var secDropped int64
			for _, s := range o.m.Seconds() {
				secDropped += s.Dropped
			}
			if secDropped != tc.wantDropped {
				t.Errorf("per-second dropped add to %d, want %d", secDropped, tc.wantDropped)
			}
			checkConsistent(t, o.m)
		})
	}
}

// TestArrivalLatencyFromScheduledStart: the target answers in 250 ms of
// the fake clock; the controller is late by 50 ms for iteration 1, which
// must count in its latency.
func TestArrivalLatencyFromScheduledStart(t *testing.T) {
	clk := newFakeClock()
	p := ConstantArrivalRate(2, time.Second, time.Second, 2, 2)
	p.GracefulStop = time.Second
	col := newCollector()
	exec := func(ctx context.Context, vu int, iter int64) Result {
		return Result{Class: ClassOK, Latency: 0} // engine measures
	}
	out := make(chan outcome, 1)
	go func() {
		m, err := RunArrival(context.Background(), p, exec, WithClock(clk), WithResults(col.add))
		out <- outcome{m, err}
	}()
	r0 := col.next(t)
	clk.waitTimerAt(t, fakeEpoch.Add(500*time.Millisecond))
	clk.Advance(550 * time.Millisecond) // the timer fires 50 ms late
	r1 := col.next(t)
	clk.Advance(time.Second)
	o := wait(t, out)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if r0.Latency != 0 || !r0.Start.Equal(fakeEpoch) {
		t.Errorf("iteration 0: start %v latency %v", r0.Start, r0.Latency)
	}
	if !r1.Start.Equal(fakeEpoch.Add(500*time.Millisecond)) || r1.Latency != 50*time.Millisecond {
		t.Errorf("iteration 1: start +%v latency %v, want +500ms and 50ms", r1.Start.Sub(fakeEpoch), r1.Latency)
	}
}
