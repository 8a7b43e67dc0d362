package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/worker"
)

func TestDutyCycle(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name       string
		milli      int
		slice      time.Duration
		left       time.Duration
		spin, rest time.Duration
	}{
		{"50m of a 10 ms slice", 50, 10 * ms, time.Second, 500 * time.Microsecond, 9500 * time.Microsecond},
		{"500m", 500, 10 * ms, time.Second, 5 * ms, 5 * ms},
		{"a whole core", 1000, 10 * ms, time.Second, 10 * ms, 0},
		{"over a core is one core", 4000, 10 * ms, time.Second, 10 * ms, 0},
		{"0 only sleeps", 0, 10 * ms, time.Second, 0, 10 * ms},
		{"negative only sleeps", -5, 10 * ms, time.Second, 0, 10 * ms},
		{"last slice cut to what is left", 500, 10 * ms, 4 * ms, 2 * ms, 2 * ms},
		{"nothing left", 500, 10 * ms, 0, 0, 0},
		{"overdue", 500, 10 * ms, -ms, 0, 0},
		{"12m", 12, 10 * ms, time.Second, 120 * time.Microsecond, 9880 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spin, rest := worker.DutyCycle(tc.milli, tc.slice, tc.left)
			if spin != tc.spin || rest != tc.rest {
				t.Errorf("DutyCycle(%d, %s, %s) = %s, %s; want %s, %s", tc.milli, tc.slice, tc.left, spin, rest, tc.spin, tc.rest)
			}
		})
	}
}

// fakeBurn is a Burner's clock, spin and sleep: both advance the clock by
// their duration and add it up.
type fakeBurn struct {
	now         time.Time
	spun, slept time.Duration
	spins       int
	sleepErr    error // returned by the n-th sleep (sleepErrAt)
	sleepErrAt  int
	sleeps      int
	frozen      bool // the clock does not move
}

func (f *fakeBurn) burner(milli int) worker.Burner {
	return worker.Burner{
		Millicores: milli,
		Now:        func() time.Time { return f.now },
		Spin: func(d time.Duration) {
			f.spins++
			f.spun += d
			if !f.frozen {
				f.now = f.now.Add(d)
			}
		},
		Sleep: func(ctx context.Context, d time.Duration) error {
			f.sleeps++
			if f.sleepErr != nil && f.sleeps == f.sleepErrAt {
				return f.sleepErr
			}
			f.slept += d
			if !f.frozen {
				f.now = f.now.Add(d)
			}
			return ctx.Err()
		},
	}
}

func TestBurnerHold(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name        string
		milli       int
		d           time.Duration
		spun, slept time.Duration
		spins       int
	}{
		// 200 ms at 50 m: 20 slices of 0.5 ms spin + 9.5 ms sleep: 10 ms of CPU, 5 % of a core.
		{"200 ms at 50 m", 50, 200 * ms, 10 * ms, 190 * ms, 20},
		{"200 ms at 500 m", 500, 200 * ms, 100 * ms, 100 * ms, 20},
		{"25 ms at 1000 m: spins all the time", 1000, 25 * ms, 25 * ms, 0, 3},
		// 25 ms = 2 whole slices + 5 ms: the last is cut to 5 ms, 2.5 of it spun.
		{"25 ms at 500 m", 500, 25 * ms, 12500 * time.Microsecond, 12500 * time.Microsecond, 3},
		{"0 ms", 500, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeBurn{now: time.Unix(1000, 0)}
			start := f.now
			if err := f.burner(tc.milli).Hold(context.Background(), tc.d); err != nil {
				t.Fatalf("Hold = %v", err)
			}
			if f.spun != tc.spun || f.slept != tc.slept || f.spins != tc.spins {
				t.Errorf("spun %s in %d spins, slept %s; want %s in %d, %s", f.spun, f.spins, f.slept, tc.spun, tc.spins, tc.slept)
			}
			if got := f.now.Sub(start); got != tc.d {
				t.Errorf("held %s, want the call's %s", got, tc.d)
			}
			if tc.d > 0 {
				// The duty cycle: CPU time / held time = millicores / 1000.
				if got, want := float64(f.spun)/float64(tc.d), float64(min(tc.milli, 1000))/1000; got != want {
					t.Errorf("duty cycle %.4f, want %.4f", got, want)
				}
			}
		})
	}
}

func TestBurnerHoldEnds(t *testing.T) {
	t.Run("ctx already done", func(t *testing.T) {
		f := &fakeBurn{now: time.Unix(0, 0)}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := f.burner(50).Hold(ctx, time.Second); !errors.Is(err, context.Canceled) {
			t.Errorf("Hold = %v, want context.Canceled", err)
		}
		if f.spins+f.sleeps != 0 {
			t.Errorf("%d spins and %d sleeps after the end", f.spins, f.sleeps)
		}
	})
	t.Run("ctx ends during a sleep", func(t *testing.T) {
		f := &fakeBurn{now: time.Unix(0, 0), sleepErr: context.DeadlineExceeded, sleepErrAt: 3}
		if err := f.burner(50).Hold(context.Background(), time.Second); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Hold = %v, want the sleep's error", err)
		}
		if f.spins != 3 || f.sleeps != 3 {
			t.Errorf("%d spins, %d sleeps; want 3 and 3 (stops at the failed sleep)", f.spins, f.sleeps)
		}
	})
	t.Run("a clock that never moves still ends", func(t *testing.T) {
		f := &fakeBurn{now: time.Unix(0, 0), frozen: true}
		if err := f.burner(500).Hold(context.Background(), 100*time.Millisecond); err != nil {
			t.Errorf("Hold = %v", err)
		}
		// 100 ms is 10 slices; the bound is 2*10+2.
		if f.spins != 22 {
			t.Errorf("%d slices, want the bound 22", f.spins)
		}
	})
}

// TestWorkerCPUPerCall: a worker with a CPU cost holds a call through the
// duty cycle: its Wait only sleeps the rest of each slice.
func TestWorkerCPUPerCall(t *testing.T) {
	var mu sync.Mutex
	var sleeps []time.Duration
	w, ts := start(t, worker.Config{CPUPerCall: 500, Wait: func(_ context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		sleeps = append(sleeps, d)
		return nil
	}})
	if w.CPUPerCall() != 500 {
		t.Fatalf("CPUPerCall = %d", w.CPUPerCall())
	}
	r := post(t, ts.Client(), ts.URL+"/mcp", callBody("1", `{"ms":20}`))
	if r.status != 200 || !strings.Contains(string(r.body), "worked 20 ms") {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sleeps) == 0 || len(sleeps) > 6 {
		t.Fatalf("%d sleeps, want 1..6 (2 slices of 10 ms, each spun half, then what is left)", len(sleeps))
	}
	for _, d := range sleeps {
		if d <= 0 || d > 5*time.Millisecond {
			t.Errorf("a sleep of %s: want (0, 5 ms], the half of a 10 ms slice not spun", d)
		}
	}
	for _, tc := range []struct{ in, want int }{{-3, 0}, {0, 0}, {50, 50}, {2000, worker.MaxCPUPerCall}} {
		if got := worker.New(worker.Config{ID: "c", CPUPerCall: tc.in}).CPUPerCall(); got != tc.want {
			t.Errorf("CPUPerCall %d -> %d, want %d", tc.in, got, tc.want)
		}
	}
}
