package load

import (
	"strings"
	"testing"
	"time"
)

// seed000 is the staged profile of seed 000: 5->50 over 2m, 50 for 1m,
// 50->100 in 30s, back to 50 in 30s, the spike again, 50->0 over 2m.
func seed000() Profile {
	return RampingVUs(5,
		Stage{2 * time.Minute, 50},
		Stage{time.Minute, 50},
		Stage{30 * time.Second, 100},
		Stage{30 * time.Second, 50},
		Stage{30 * time.Second, 100},
		Stage{30 * time.Second, 50},
		Stage{2 * time.Minute, 0},
	)
}

func TestVUsAt(t *testing.T) {
	const ns = time.Nanosecond
	s, m := time.Second, time.Minute
	tests := []struct {
		name string
		p    Profile
		at   time.Duration
		want int
	}{
		{"constant before start", ConstantVUs(8, 300*time.Millisecond), -ns, 0},
		{"constant at start", ConstantVUs(8, 300*time.Millisecond), 0, 8},
		{"constant last instant", ConstantVUs(8, 300*time.Millisecond), 300*time.Millisecond - ns, 8},
		{"constant at end", ConstantVUs(8, 300*time.Millisecond), 300 * time.Millisecond, 0},

		{"seed000 before start", seed000(), -s, 0},
		{"seed000 start", seed000(), 0, 5},
		{"seed000 ramp up 1ns", seed000(), ns, 5},
		{"seed000 ramp up 1m (27.5 rounds down)", seed000(), m, 27},
		{"seed000 ramp up last instant", seed000(), 2*m - ns, 49},
		{"seed000 plateau start", seed000(), 2 * m, 50},
		{"seed000 plateau end", seed000(), 3*m - ns, 50},
		{"seed000 spike 1 start", seed000(), 3 * m, 50},
		{"seed000 spike 1 mid", seed000(), 3*m + 15*s, 75},
		{"seed000 spike 1 last instant", seed000(), 3*m + 30*s - ns, 99},
		{"seed000 spike 1 peak", seed000(), 3*m + 30*s, 100},
		{"seed000 spike 1 down 1ns (floor)", seed000(), 3*m + 30*s + ns, 99},
		{"seed000 spike 1 down mid", seed000(), 3*m + 45*s, 75},
		{"seed000 spike 2 start", seed000(), 4 * m, 50},
		{"seed000 spike 2 mid", seed000(), 4*m + 15*s, 75},
		{"seed000 spike 2 peak", seed000(), 4*m + 30*s, 100},
		{"seed000 spike 2 down mid", seed000(), 4*m + 45*s, 75},
		{"seed000 ramp down start", seed000(), 5 * m, 50},
		{"seed000 ramp down 1m", seed000(), 6 * m, 25},
		{"seed000 ramp down 1m59s (0.42)", seed000(), 7*m - s, 0},
		{"seed000 end", seed000(), 7 * m, 0},
		{"seed000 after end", seed000(), time.Hour, 0},

		{"zero-duration stage jumps", RampingVUs(2, Stage{s, 2}, Stage{0, 7}, Stage{s, 7}), s, 7},
		{"before the jump", RampingVUs(2, Stage{s, 2}, Stage{0, 7}, Stage{s, 7}), s - ns, 2},
		{"ramp from zero", RampingVUs(0, Stage{10 * s, 10}), 5 * s, 5},
		{"ramp from zero, just before 1", RampingVUs(0, Stage{10 * s, 10}), s - ns, 0},
		{"unknown executor", Profile{Executor: "shared-iterations"}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.VUsAt(tt.at); got != tt.want {
				t.Errorf("VUsAt(%s) = %d, want %d", tt.at, got, tt.want)
			}
		})
	}
}

func TestTotalAndPeak(t *testing.T) {
	if got, want := seed000().TotalDuration(), 7*time.Minute; got != want {
		t.Errorf("seed000 TotalDuration = %s, want %s", got, want)
	}
	if got := seed000().PeakVUs(); got != 100 {
		t.Errorf("seed000 PeakVUs = %d, want 100", got)
	}
	if got := ConstantVUs(8, time.Second).TotalDuration(); got != time.Second {
		t.Errorf("constant TotalDuration = %s", got)
	}
}

// nextChange must return exactly the next instant VUsAt changes.
func TestNextChangeMatchesVUsAt(t *testing.T) {
	for _, p := range []Profile{seed000(), seed000().Scale(0.001), ConstantVUs(3, time.Second),
		RampingVUs(2, Stage{time.Second, 2}, Stage{0, 7}, Stage{0, 1}, Stage{time.Second, 9})} {
		total := p.TotalDuration()
		changes := 0
		for off := time.Duration(0); off < total; changes++ {
			if changes > 10_000 {
				t.Fatalf("%+v: too many changes", p)
			}
			next := p.NextChange(off)
			if next <= off || next > total {
				t.Fatalf("NextChange(%s) = %s, outside (%s, %s]", off, next, off, total)
			}
			v := p.VUsAt(off)
			if got := p.VUsAt(next - 1); got != v {
				t.Fatalf("VUsAt changes before NextChange(%s) = %s: %d at %s, %d at %s", off, next, v, off, got, next-1)
			}
			if next < total && p.VUsAt(next) == v {
				t.Fatalf("VUsAt does not change at NextChange(%s) = %s (%d)", off, next, v)
			}
			off = next
		}
	}
}

func TestScale(t *testing.T) {
	p := seed000()
	p.ThinkTime = time.Second
	q := p.Scale(0.001)
	if got, want := q.TotalDuration(), 420*time.Millisecond; got != want {
		t.Errorf("scaled total = %s, want %s", got, want)
	}
	if q.GracefulStop != 30*time.Millisecond || q.GracefulRampDown != 30*time.Millisecond || q.ThinkTime != time.Millisecond {
		t.Errorf("scaled graceful/think = %s %s %s", q.GracefulStop, q.GracefulRampDown, q.ThinkTime)
	}
	for _, at := range []time.Duration{0, time.Minute, 3*time.Minute + 15*time.Second, 6 * time.Minute} {
		if got, want := q.VUsAt(at/1000), p.VUsAt(at); got != want {
			t.Errorf("scaled VUsAt(%s) = %d, want %d", at/1000, got, want)
		}
	}
	q.Stages[0].Target = 1
	if p.Stages[0].Target != 50 {
		t.Error("Scale shares the stages slice with the original")
	}
	if err := p.Scale(0).Validate(); err == nil {
		t.Error("Scale(0) validates")
	}
}

func TestValidate(t *testing.T) {
	ok := func(p Profile) Profile { return p }
	with := func(p Profile, f func(*Profile)) Profile { f(&p); return p }
	c := ConstantVUs(8, time.Second)
	r := seed000()
	tests := []struct {
		name string
		p    Profile
		want []string // substrings; none means valid
	}{
		{"constant ok", ok(c), nil},
		{"ramping ok", ok(r), nil},
		{"zero graces ok", with(c, func(p *Profile) { p.GracefulStop, p.GracefulRampDown = 0, 0 }), nil},
		{"no executor", Profile{MaxIterations: 1}, []string{`executor ""`}},
		{"unknown executor", with(c, func(p *Profile) { p.Executor = "per-vu-iterations" }), []string{"per-vu-iterations"}},
		{"constant zero VUs", with(c, func(p *Profile) { p.VUs = 0 }), []string{"VUs > 0"}},
		{"constant negative VUs", with(c, func(p *Profile) { p.VUs = -1 }), []string{"VUs -1 out of"}},
		{"constant too many VUs", with(c, func(p *Profile) { p.VUs = VULimit + 1 }), []string{"out of [0, 100000]"}},
		{"constant zero duration", with(c, func(p *Profile) { p.Duration = 0 }), []string{"Duration > 0"}},
		{"constant with stages", with(c, func(p *Profile) { p.Stages = r.Stages }), []string{"not StartVUs or Stages"}},
		{"ramping no stages", with(r, func(p *Profile) { p.Stages = nil }), []string{"at least one stage"}},
		{"ramping negative target", with(r, func(p *Profile) { p.Stages = []Stage{{time.Second, -2}} }), []string{"stage 0 target -2"}},
		{"ramping negative duration", with(r, func(p *Profile) { p.Stages = []Stage{{-time.Second, 2}} }), []string{"stage 0 duration"}},
		{"ramping zero total", with(r, func(p *Profile) { p.Stages = []Stage{{0, 2}} }), []string{"total stage duration > 0"}},
		{"ramping never any VU", with(r, func(p *Profile) { p.StartVUs, p.Stages = 0, []Stage{{time.Second, 0}} }), []string{"target > 0"}},
		{"ramping too long", with(r, func(p *Profile) { p.Stages = []Stage{{MaxDuration, 1}, {time.Second, 1}} }), []string{"total stage duration"}},
		{"ramping with VUs", with(r, func(p *Profile) { p.VUs = 3 }), []string{"not VUs or Duration"}},
		{"negative graceful stop", with(c, func(p *Profile) { p.GracefulStop = -1 }), []string{"GracefulStop"}},
		{"negative ramp down", with(r, func(p *Profile) { p.GracefulRampDown = -1 }), []string{"GracefulRampDown"}},
		{"negative think time", with(c, func(p *Profile) { p.ThinkTime = -1 }), []string{"ThinkTime"}},
		{"no max iterations", with(c, func(p *Profile) { p.MaxIterations = 0 }), []string{"MaxIterations 0 must be > 0"}},
		{"several problems joined", with(c, func(p *Profile) { p.VUs, p.MaxIterations = 0, -1 }), []string{"VUs > 0", "MaxIterations -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}
