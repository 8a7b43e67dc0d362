package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
)

// rateLoad is a load window starting at t0 with ok calls per second okPerSec.
func rateLoad(t0 time.Time, okPerSec ...int64) LoadWindow {
	return LoadWindow{Start: t0, OK: okPerSec}
}

func flat(n int, v int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestShortIntervals: the rate path's premise is judged per scheduler
// interval, as the console's rounds read the rate, not on the hold's
// average: one interval under what count − 1 workers carry is named even
// when the average is far above.
func TestShortIntervals(t *testing.T) {
	t0 := time.Unix(1000, 0)
	dip := append(flat(10, 75), 40, 40)
	dip = append(dip, flat(8, 75)...)
	cases := []struct {
		name       string
		w          LoadWindow
		from, to   time.Duration
		interval   time.Duration
		wantShort  int
		wantLowest float64
	}{
		{"steady 75 over 50", rateLoad(t0, flat(20, 75)...), 0, 20 * time.Second, 2 * time.Second, 0, 75},
		{"a 2 s dip to 40, average 71.5", rateLoad(t0, dip...), 0, 20 * time.Second, 2 * time.Second, 1, 40},
		{"the dip split over two intervals: 57.5 each, as the rounds read it", rateLoad(t0, dip...), time.Second, 19 * time.Second, 2 * time.Second, 0, 57.5},
		{"1 s intervals see each second", rateLoad(t0, dip...), 0, 20 * time.Second, time.Second, 2, 40},
		{"a last window under half an interval is not judged", rateLoad(t0, append(flat(20, 75), 0)...), 0, 20*time.Second + 900*time.Millisecond, 2 * time.Second, 0, 75},
		{"a last window of at least half an interval is", rateLoad(t0, append(flat(20, 75), 0, 0)...), 0, 21500 * time.Millisecond, 2 * time.Second, 1, 0},
		{"no load measured", rateLoad(t0), 0, 20 * time.Second, 2 * time.Second, 0, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			short, lowest := shortIntervals(c.w, t0.Add(c.from), t0.Add(c.to), c.interval, 50)
			if len(short) != c.wantShort || lowest.Rate != c.wantLowest {
				t.Fatalf("short %d lowest %.2f, want %d and %.2f (%+v)", len(short), lowest.Rate, c.wantShort, c.wantLowest, short)
			}
			d := describeIntervals(short, lowest, t0, c.interval)
			if c.wantShort > 0 && !strings.Contains(d, "fell short") || c.wantShort == 0 && strings.Contains(d, "fell short") {
				t.Fatalf("description %q for %d short", d, c.wantShort)
			}
		})
	}
}

// TestJudgeDowns: a DOWN is judged against the load's rate in the rounds
// that decided it: one taken while count − 1 workers could not carry the
// rate is bad; one that followed a dip of the load under what they carry is
// the rules at work; one with no readable from count is bad.
func TestJudgeDowns(t *testing.T) {
	t0 := time.Unix(1000, 0)
	dip := append(flat(10, 75), 40, 40)
	dip = append(dip, flat(8, 75)...)
	w := rateLoad(t0, dip...)
	down := func(at time.Duration, from string) consoleclient.AuditEntry {
		return consoleclient.AuditEntry{At: t0.Add(at), Action: "workers.autoscale", Tags: map[string]string{"action": "down", "from": from, "to": "1"}}
	}
	carry := func(count int) float64 { return float64(count-1) * 50 }
	cases := []struct {
		name     string
		down     consoleclient.AuditEntry
		interval time.Duration
		wantBad  bool
	}{
		{"at a steady 75 calls/s: bad", down(8*time.Second, "2"), time.Second, true},
		{"right after the dip: the rules at work", down(11500*time.Millisecond, "2"), time.Second, false},
		{"audited one interval after the dip's round", down(13*time.Second, "2"), time.Second, false},
		{"two intervals after the dip: bad", down(14100*time.Millisecond, "2"), time.Second, true},
		{"from 3 at 75 calls/s, 2 workers carry 100: justified", down(5*time.Second, "3"), time.Second, false},
		{"a 20 s interval averaging over the dip: bad", down(20*time.Second, "2"), 20 * time.Second, true},
		{"no from count: bad", down(11500*time.Millisecond, "?"), time.Second, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad, excused := judgeDowns(w, []consoleclient.AuditEntry{c.down}, c.interval, carry)
			if (len(bad) == 1) != c.wantBad || len(bad)+len(excused) != 1 {
				t.Fatalf("bad %d excused %d, want bad %v", len(bad), len(excused), c.wantBad)
			}
		})
	}
}
