package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/observe"
)

// selftestSettings are the selftest profile's: up 4 s, down 6 s, every 1 s.
var selftestSettings = ContractSettings{UpCooldown: 4 * time.Second, DownCooldown: 6 * time.Second, Interval: time.Second,
	LowRounds: 3, MeanUpFraction: 0.5, TargetRPS: 50, MaxInflight: 32, Slack: time.Second, Source: "the test"}

// TestFactStreakReset: a step down must come LowRounds intervals (less half
// an interval) after the latest busy round, on the console's times; the
// round-by-round shapes of a clean console and of one that keeps the low
// rounds from before the busy round.
func TestFactStreakReset(t *testing.T) {
	set := ev{0, "workers.count", "", "1", "2", "manual count"}
	down := func(s float64) ev { return ev{s, "workers.autoscale", "down", "2", "1", "2 workers low for 3 rounds"} }
	for _, tc := range []struct {
		name   string
		cs     ContractSettings
		busy   []float64
		evs    []ev
		pass   bool
		detail string // in the detail
	}{
		// Busy rounds at 10 s (the first load's last) and 13 s (after idle
		// rounds at 11 s and 12 s); the clean step down is at 16 s.
		{"clean: the third round after the busy one", selftestSettings, []float64{10, 13}, []ev{set, down(16)}, true, "the earliest 3 s after it"},
		{"clean with a round half an interval early", selftestSettings, []float64{10, 13}, []ev{set, down(15.55)}, true, ""},
		{"the low rounds kept: the first round after the busy one", selftestSettings, []float64{10, 13}, []ev{set, down(14)}, false, "down 2->1 1 s after busy round 2"},
		{"one low round kept: the second round after it", selftestSettings, []float64{10, 13}, []ev{set, down(15)}, false, "down 2->1 2 s after busy round 2"},
		{"a step down before the second busy round, 2 rounds after the first", selftestSettings, []float64{10}, []ev{set, down(12)}, false, "after busy round 1"},
		{"quick: every 2 s", quickSettings, []float64{20, 26}, []ev{set, down(32)}, true, "allowed from 5 s (3 intervals of 2 s"},
		{"quick: kept, one interval after", quickSettings, []float64{20, 26}, []ev{set, down(28)}, false, "2 s after busy round 2"},
		{"no step down yet", selftestSettings, []float64{10, 13}, []ev{set}, true, "0 steps down"},
		{"a step down before every busy round is not judged", selftestSettings, []float64{10, 13}, []ev{set, down(5)}, true, "0 steps down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var busy []time.Time
			for _, b := range tc.busy {
				busy = append(busy, at(b))
			}
			f := FactStreakReset(tc.cs, busy, Changes(entries(tc.evs)), "rounds here")
			if f == nil {
				t.Fatal("no fact")
			}
			if f.Passed != tc.pass || !strings.Contains(f.Detail, tc.detail) || !strings.Contains(f.Detail, "rounds here") {
				t.Errorf("passed %v, want %v: %s: %s", f.Passed, tc.pass, f.Name, f.Detail)
			}
			if !strings.HasPrefix(f.Name, "no step down until 3 new low rounds after a round that is not low") {
				t.Errorf("name %q", f.Name)
			}
		})
	}
	if f := FactStreakReset(selftestSettings, nil, nil, ""); f != nil {
		t.Errorf("a fact without a busy round: %+v", f)
	}
}

// TestFactUnevenPlanned: the uneven load is judged as planned only with the
// busy worker between the mean-up and high thresholds (median), never high,
// the others under the low one and the mean under the mean-up one.
func TestFactUnevenPlanned(t *testing.T) {
	good := unevenRead{Busy: 22.0 / 32, Other: 0, Mean: 22.0 / 64}
	for _, tc := range []struct {
		name  string
		reads []unevenRead
		pass  bool
	}{
		{"as planned", []unevenRead{good, good, good}, true},
		{"reads of a loaded client under the mean-up threshold", []unevenRead{good, {Busy: 14.0 / 32, Mean: 14.0 / 64}, {Busy: 15.0 / 32, Mean: 15.0 / 64}}, true},
		{"the busy worker never over the mean-up threshold", []unevenRead{{Busy: 0.4, Mean: 0.2}, {Busy: 0.45, Mean: 0.225}, {Busy: 0.49, Mean: 0.245}}, false},
		{"the busy worker high once", []unevenRead{good, {Busy: 26.0 / 32, Mean: 26.0 / 64}, good}, false},
		{"another worker not idle", []unevenRead{good, {Busy: good.Busy, Other: 0.3, Mean: 0.47}, good}, false},
		{"the mean at the mean-up threshold", []unevenRead{good, {Busy: 0.7, Other: 0.29, Mean: 0.5}, good}, false},
		{"no read", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FactUnevenPlanned(selftestSettings, tc.reads)
			if f == nil || f.Passed != tc.pass {
				t.Errorf("%+v, want passed %v", f, tc.pass)
			}
		})
	}
}

// TestFactNoUpUneven: a step up in the window (± the clock slack) or a
// sample over the count fails; one outside it does not.
func TestFactNoUpUneven(t *testing.T) {
	set := ev{0, "workers.count", "", "1", "2", "manual count"}
	up := func(s float64) ev { return ev{s, "workers.autoscale", "up", "2", "3", "mean in-flight 65.6% >= 50%"} }
	samples := func(counts ...int) []observe.Sample {
		var out []observe.Sample
		for i, c := range counts {
			out = append(out, observe.Sample{At: at(float64(i)), Count: c})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		evs     []ev
		samples []observe.Sample
		want    bool
	}{
		{"no step up", []ev{set}, samples(2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2), true},
		{"a step up in the window", []ev{set, up(6)}, samples(2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3), false},
		{"a step up just before the window, within the clock slack", []ev{set, up(1.95)}, samples(2, 2, 2), false},
		{"a step up after the window", []ev{set, up(12)}, samples(2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2), true},
		{"a sample over the count without an audit entry", []ev{set}, samples(2, 2, 2, 2, 3, 2), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FactNoUpUneven(Changes(entries(tc.evs)), tc.samples, at(2), at(10), 2); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestStepRuleLoads: the loads are sized so that only the rule under test
// decides, for the selftest and published limits, with and without the
// canary; settings where that cannot hold are an error.
func TestStepRuleLoads(t *testing.T) {
	for _, tc := range []struct {
		name         string
		limit, n     int
		target       float64
		streak, boot int // 0: an error
		uneven       int
	}{
		{"limit 32, 2 workers", 32, 2, 50, 30, 24, 22},
		{"limit 32, 2 workers and the canary", 32, 3, 50, 46, 46, 22},
		{"limit 4, 2 workers", 4, 2, 50, 0, 0, 3},
		{"a target rate the streak load would reach", 32, 2, 30, 0, 0, 22},
		{"a target rate the uneven load would reach", 32, 2, 15, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := selftestSettings
			cs.MaxInflight, cs.TargetRPS = tc.limit, tc.target
			v, boot, err := streakVUs(cs, tc.n)
			if v != tc.streak || boot != tc.boot || (err != nil) != (tc.streak == 0) {
				t.Errorf("streakVUs = %d, %d, %v; want %d, %d", v, boot, err, tc.streak, tc.boot)
			}
			if err == nil {
				limit := float64(tc.limit)
				per := float64(v) / float64(tc.n)
				if per < lowFraction*limit+1 || float64(v) >= 0.5*limit*float64(tc.n) || float64(boot)/float64(tc.n-1) > highFraction*limit {
					t.Errorf("streak load %d (%d while a worker boots) over %d workers of limit %d: %.1f each", v, boot, tc.n, tc.limit, per)
				}
			}
			u, err := unevenVUs(cs, tc.n)
			if u != tc.uneven || (err != nil) != (tc.uneven == 0) {
				t.Errorf("unevenVUs = %d, %v; want %d", u, err, tc.uneven)
			}
		})
	}
}
