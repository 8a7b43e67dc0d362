package scenarios

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/api"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/observe"
)

func TestSpikeProfile(t *testing.T) {
	for _, tc := range []struct {
		p     Profile
		total time.Duration
	}{{Published(), 7 * time.Minute}, {Quick(), 42 * time.Second}} {
		lp := spikeProfile(tc.p)
		if err := lp.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.p.Name, err)
		}
		if lp.TotalDuration() != tc.total || lp.PeakVUs() != 100 || lp.StartVUs != 5 {
			t.Errorf("%s: total %s peak %d start %d, want %s, 100, 5", tc.p.Name, lp.TotalDuration(), lp.PeakVUs(), lp.StartVUs, tc.total)
		}
		// The seed's shape at its stage boundaries (fractions of the total).
		for _, c := range []struct {
			frac float64
			vus  int
		}{{0, 5}, {2.0 / 7, 50}, {3.0 / 7, 50}, {3.5 / 7, 100}, {4.0 / 7, 50}, {4.5 / 7, 100}, {5.0 / 7, 50}} {
			at := time.Duration(c.frac * float64(tc.total))
			if got := lp.VUsAt(at); got < c.vus-1 || got > c.vus {
				t.Errorf("%s: %d VUs at %s, want %d", tc.p.Name, got, at, c.vus)
			}
		}
	}
}

func TestHPAFor(t *testing.T) {
	pub, quick := HPAFor(Published()), HPAFor(Quick())
	want := `sum(max_over_time(scaleproof_edge_inflight_requests{group="$group",zone="$zone",quantile="0.75"}[120s]))`
	if pub.Query != want || pub.Threshold != 24 || pub.PollingInterval != 30*time.Second ||
		pub.StabilizationDown != 300*time.Second || pub.ScrapeInterval != 5*time.Second || pub.EvalInterval != 15*time.Second ||
		pub.InflightMaxAge != time.Minute || !pub.ReadEmptyAsZero {
		t.Errorf("published: %+v", pub)
	}
	if !strings.HasSuffix(quick.Query, "[12s]))") || quick.PollingInterval != 3*time.Second || quick.StabilizationDown != 30*time.Second ||
		quick.RatePeriod != 1500*time.Millisecond || quick.ScrapeInterval != time.Second || quick.InflightMaxAge != 6*time.Second {
		t.Errorf("quick: %+v", quick)
	}
	s := quick.Spec(4)
	if *s.MaxReplicas != 4 || *s.MinReplicas != 1 || *s.PollingIntervalSeconds != 3 || s.Target != "AverageValue" ||
		*s.Behavior.ScaleDown.StabilizationWindowSeconds != 30 || s.Behavior.ScaleUp.Policies[0].PeriodSeconds != 1.5 {
		t.Errorf("quick spec: %+v", s)
	}
	if got := ExpandQuery(`x{ns="%s",g="$group",z="$zone"}`, "g1", "a"); got != `x{ns="g1",g="g1",z="a"}` {
		t.Errorf("expand: %s", got)
	}
	if got := api.PromDuration(1500 * time.Millisecond); got != "1500ms" {
		t.Errorf("promDuration: %s", got)
	}
}

func TestSelectSpike(t *testing.T) {
	for _, s := range All() {
		if s.Name == "spike" {
			t.Fatal("spike is not one of the default five")
		}
	}
	got, err := Select([]string{"sustained", "spike"})
	if err != nil || len(got) != 2 || got[1].Name != "spike" {
		t.Fatalf("select: %v %v", got, err)
	}
}

// TestSpikeBand: the band's windows come from the zone's resolved policy:
// one polling interval rounded up to whole scheduler intervals plus each
// direction's stabilization window.
func TestSpikeBand(t *testing.T) {
	p := Quick()
	e := &Env{Profile: p}
	spec := HPAFor(p).Spec(4)
	spec.Behavior.ScaleUp.Tolerance = new(float64)
	*spec.Behavior.ScaleUp.Tolerance = 0.2
	s := &Scope{env: e, policy: consoleclient.PolicyView{Policy: PolicyHPA, HPA: &spec, MaxCount: 4, EffectiveMaxReplicas: 4}}
	b, q, emptyZero := spikeBand(e.Profile, s.policy)
	// poll 3 s with a 2 s scheduler: every 4 s; slack 2 samples of 1 s.
	if b.WindowUp != 6*time.Second || b.WindowDown != 36*time.Second || b.Threshold != 24 || b.Max != 4 || b.Min != 1 ||
		b.TolUp != 0.2 || b.TolDown != 0.1 || b.Lead != 0 || q != spec.Query || !emptyZero {
		t.Errorf("hpa band %+v %q %v", b, q, emptyZero)
	}
	s.policy = consoleclient.PolicyView{Policy: PolicyStep}
	b, _, _ = spikeBand(e.Profile, s.policy)
	if b.WindowUp != p.SchedulerInterval+p.UpCooldown+2*time.Second || b.TolDown < 0.59 || b.TolDown > 0.61 || b.Lead != 19*time.Second {
		t.Errorf("step band %+v", b)
	}
}

func TestJudgeFollow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	band := followBand{Threshold: 24, TolUp: 0.1, TolDown: 0.1, Min: 1, Max: 4,
		WindowUp: 4 * time.Second, WindowDown: 10 * time.Second, From: t0}
	// The signal: 0 until 5 s, 90 (ask 4) from 5 s to 20 s, then 0.
	var sig []SignalPoint
	for s := 0; s <= 40; s++ {
		v := 0.0
		if s >= 5 && s < 20 {
			v = 90
		}
		sig = append(sig, SignalPoint{At: at(float64(s)), Value: v, OK: true})
	}
	counts := func(f func(s float64) int) []observe.Sample {
		var out []observe.Sample
		for s := 0.5; s <= 40; s++ {
			out = append(out, observe.Sample{At: at(s), Count: f(s)})
		}
		return out
	}
	tests := []struct {
		name    string
		band    func(followBand) followBand
		signal  []SignalPoint
		counts  []observe.Sample
		wantBad int
		first   string
	}{
		{name: "follows within the windows", counts: counts(func(s float64) int {
			switch {
			case s < 8: // up within 4 s of the rise at 5 s
				return 1
			case s < 28: // down within 10 s of the fall at 20 s
				return 4
			}
			return 1
		})},
		{name: "too slow up", counts: counts(func(s float64) int {
			if s >= 12 && s < 28 {
				return 4
			}
			return 1
		}), wantBad: 4, first: "t=8.5s count 1 outside [4, 4]"},
		{name: "too slow down", counts: counts(func(s float64) int {
			if s >= 6 && s < 32 {
				return 4
			}
			return 1
		}), wantBad: 3, first: "t=29.5s count 4 outside [1, 1]"},
		{name: "never scales", counts: counts(func(float64) int { return 1 }), wantBad: 12},
		{name: "scales without a reason", counts: counts(func(s float64) int {
			switch {
			case s < 8:
				return 1
			case s < 28:
				return 4
			case s > 35:
				return 2
			}
			return 1
		}), wantBad: 5, first: "t=35.5s count 2 outside [1, 1]"},
		{name: "a step policy may lead the signal by Lead", band: func(b followBand) followBand { b.Lead = 3 * time.Second; return b },
			counts: counts(func(s float64) int {
				if s >= 3 && s < 18 {
					return 4
				}
				return 1
			})},
		{name: "failed readings are not judged", signal: []SignalPoint{{At: at(1), OK: false}},
			counts: counts(func(float64) int { return 3 })},
		{name: "within tolerance both ways", signal: []SignalPoint{{At: at(0), Value: 50, OK: true}, {At: at(20), Value: 50, OK: true}},
			// 50 / 24 = 2.08: a round may keep 2 (ratio 1.04) or ask 3; never 1 or 4.
			counts: counts(func(s float64) int {
				if s < 10 {
					return 2
				}
				return 3
			})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := band
			if tc.band != nil {
				b = tc.band(b)
			}
			s := sig
			if tc.signal != nil {
				s = tc.signal
			}
			checked, bad := judgeFollow(b, s, tc.counts)
			if len(bad) != tc.wantBad || (tc.first != "" && (len(bad) == 0 || bad[0][:len(tc.first)] != tc.first)) {
				t.Fatalf("%d checked, %d bad %v; want %d bad starting %q", checked, len(bad), bad, tc.wantBad, tc.first)
			}
			if tc.signal == nil && checked != 36 {
				t.Fatalf("%d checked, want the 36 samples after the first up window", checked)
			}
		})
	}
}

func TestAtMax(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	smp := func(s int, count, max int, err string) observe.Sample {
		return observe.Sample{At: t0.Add(time.Duration(s) * time.Second), Count: count, Max: max, Err: err}
	}
	tests := []struct {
		name                    string
		samples                 []observe.Sample
		total, longest, sampled time.Duration
		max                     int
	}{
		{"none", nil, 0, 0, 0, 0},
		{"never at max", []observe.Sample{smp(0, 1, 3, ""), smp(1, 2, 3, ""), smp(2, 1, 3, "")}, 0, 0, 2 * time.Second, 3},
		{"two stretches", []observe.Sample{smp(0, 1, 3, ""), smp(1, 3, 3, ""), smp(2, 3, 3, ""), smp(4, 3, 3, ""),
			smp(5, 2, 3, ""), smp(6, 3, 3, ""), smp(7, 1, 3, "")}, 5 * time.Second, 4 * time.Second, 7 * time.Second, 3},
		{"failed samples skipped", []observe.Sample{smp(0, 3, 3, ""), smp(1, 0, 0, "HTTP 503"), smp(2, 1, 3, "")},
			2 * time.Second, 2 * time.Second, 2 * time.Second, 3},
		{"max 1 at 1 all along", []observe.Sample{smp(0, 1, 1, ""), smp(10, 1, 1, "")}, 10 * time.Second, 10 * time.Second, 10 * time.Second, 1},
		{"max lowered under the count", []observe.Sample{smp(0, 3, 3, ""), smp(1, 3, 1, ""), smp(2, 1, 1, "")}, 2 * time.Second, 2 * time.Second, 2 * time.Second, 3},
	}
	for _, tc := range tests {
		total, longest, sampled, max := AtMax(tc.samples)
		if total != tc.total || longest != tc.longest || sampled != tc.sampled || max != tc.max {
			t.Errorf("%s: %s %s %s max %d, want %s %s %s %d", tc.name, total, longest, sampled, max, tc.total, tc.longest, tc.sampled, tc.max)
		}
	}
}

// TestSumSeries: a query's reading is its series' sum; no series and
// NaN/±Inf values read 0 (skipped) with emptyZero and fail without it.
func TestSumSeries(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		vals      []float64
		emptyZero bool
		want      float64
		wantErr   bool
	}{
		{[]float64{1.5, 2}, false, 3.5, false},
		{nil, true, 0, false},
		{nil, false, 0, true},
		{[]float64{nan, 4}, true, 4, false},
		{[]float64{nan, 4}, false, 0, true},
		{[]float64{inf}, false, 0, true},
	} {
		got, err := SumSeries(tc.vals, tc.emptyZero)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("SumSeries(%v, %v) = %v, %v; want %v, error %v", tc.vals, tc.emptyZero, got, err, tc.want, tc.wantErr)
		}
	}
}
