package scenarios

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

func TestProfiles(t *testing.T) {
	pub, quick := Published(), Quick()
	tests := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"published scheduler: seed 002 load test every 20 s", pub.SchedulerInterval, 20 * time.Second},
		{"published up cooldown: RAMEN_AUTOSCALE_UP_COOLDOWN_SECS 30", pub.UpCooldown, 30 * time.Second},
		{"published down cooldown: RAMEN_AUTOSCALE_COOLDOWN_SECS 120", pub.DownCooldown, 120 * time.Second},
		{"published burst: 45 s", pub.Burst, 45 * time.Second},
		{"quick scheduler is a tenth", quick.SchedulerInterval, 2 * time.Second},
		{"quick burst is a tenth", quick.Burst, 4500 * time.Millisecond},
		{"quick keeps 1 s sampling", quick.SampleInterval, time.Second},
		{"quick keeps the 5 s readyz timeout", quick.ReadyzTimeout, 5 * time.Second},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, tc.got, tc.want)
		}
	}
	if pub.VUs != 64 || pub.Max != 3 || pub.MaxInflight != 32 || quick.VUs != 64 || quick.Max != 3 {
		t.Errorf("64 VUs, max 3, in-flight 32 in both: %+v %+v", pub, quick)
	}
	for _, p := range []Profile{pub, quick} {
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
}

func TestProfileValidate(t *testing.T) {
	tests := []struct {
		name  string
		mut   func(*Profile)
		wants string
	}{
		{"no VUs", func(p *Profile) { p.VUs = 0 }, "vus"},
		{"more VUs than the engine runs", func(p *Profile) { p.VUs = 10_000_000 }, "vus must be <= 100000"},
		{"max 1 cannot scale", func(p *Profile) { p.Max = 1 }, "max"},
		{"zero scheduler", func(p *Profile) { p.SchedulerInterval = 0 }, "intervals"},
		{"zero timeouts", func(p *Profile) { p.UpTimeout = 0 }, "timeouts"},
	}
	for _, tc := range tests {
		p := Quick()
		tc.mut(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.wants) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.wants)
		}
	}
	if _, err := ProfileByName("nope"); err == nil || !strings.Contains(err.Error(), "published, quick") {
		t.Errorf("unknown profile error %v must list the names", err)
	}
}

func TestSelect(t *testing.T) {
	all, err := Select(nil)
	if err != nil || len(all) != 5 {
		t.Fatalf("all: %d %v", len(all), err)
	}
	want := []string{"viewer-refused", "max-1", "sustained", "burst", "max-lowered"}
	for i, s := range all {
		if s.Name != want[i] {
			t.Errorf("scenario %d is %s, want %s (the seed's order)", i, s.Name, want[i])
		}
	}
	two, err := Select([]string{"burst", "sustained"})
	if err != nil || len(two) != 2 || two[0].Name != "burst" {
		t.Errorf("select two: %v %v", two, err)
	}
	if _, err := Select([]string{"nope"}); err == nil || !strings.Contains(err.Error(), "sustained") {
		t.Errorf("unknown scenario error %v must list the names", err)
	} else if strings.ContainsAny(err.Error(), "[]") {
		t.Errorf("unknown scenario error %v lists a set as a Go slice", err)
	}
}

// Scale events come from consecutive samples: decision at the first sample
// with the new count, ready at the first with ready == count.
func TestScaleEvents(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	s := &Scope{Name: "sustained", Start: t0}
	samples := []observe.Sample{
		{At: at(0), Count: 1, Ready: 1},
		{At: at(1), Count: 1, Ready: 1},
		{At: at(2), Count: 3, Ready: 1, Decision: "up 1->3: mean"},
		{At: at(3), Count: 3, Ready: 1, Err: "HTTP 502"},
		{At: at(4), Count: 3, Ready: 3},
		{At: at(9), Count: 2, Ready: 2},
		{At: at(12), Count: 1, Ready: 2, Decision: "hold 1->1: at max 1 under load", Change: "set 2->1: max lowered to 1 by ops"},
	}
	evs := scaleEvents(s, samples, nil)
	if evs[0].Reason != "up 1->3: mean" || evs[2].Reason != "set 2->1: max lowered to 1 by ops" {
		t.Errorf("reasons %q, %q: a forced change keeps its own cause and actor", evs[0].Reason, evs[2].Reason)
	}
	if len(evs) != 3 {
		t.Fatalf("events %+v, want 3", evs)
	}
	want := []struct {
		from, to        int
		decision, ready float64
	}{{1, 3, 2, 4}, {3, 2, 9, 9}, {2, 1, 12, -1}}
	for i, w := range want {
		e := evs[i]
		if e.From != w.from || e.To != w.to || e.DecisionS != w.decision || e.ReadyS != w.ready || e.ServedS != -1 {
			t.Errorf("event %d: %+v, want %+v", i, e, w)
		}
	}
}

// The burst's title gives the profile's burst length (4.5 s in quick), not
// the published 45 s.
func TestBurstTitle(t *testing.T) {
	b := Burst()
	if got := b.TitleUnder(Quick()); got != "a 4.5 s burst" {
		t.Errorf("quick: %q", got)
	}
	if got := b.TitleUnder(Published()); got != "a 45 s burst" {
		t.Errorf("published: %q", got)
	}
	if got := Sustained().TitleUnder(Quick()); got != Sustained().Title {
		t.Errorf("a scenario without TitleFor keeps its Title: %q", got)
	}
}

// TestDecide is the one verdict rule every engine uses (console, target,
// simulator): a skip skips, an error fails, all-not-applicable skips with
// the reasons, otherwise it passes when one fact passed and none failed.
func TestDecide(t *testing.T) {
	pass := reports.Fact{Name: "up", Passed: true}
	fail := reports.Fact{Name: "down"}
	na := reports.Fact{Name: "trail", NotApplicable: "no trail kept"}
	for _, tc := range []struct {
		name        string
		facts       []reports.Fact
		err         error
		passed      bool
		skipped     string
		errContains string
	}{
		{name: "one fact passed", facts: []reports.Fact{pass}, passed: true},
		{name: "passed beside not applicable", facts: []reports.Fact{pass, na}, passed: true},
		{name: "one failed", facts: []reports.Fact{pass, fail, na}},
		{name: "no facts", facts: nil},
		{name: "all not applicable", facts: []reports.Fact{na}, skipped: "none of this scenario's facts applies (trail: no trail kept)"},
		{name: "error with passed facts", facts: []reports.Fact{pass}, err: errors.New("boom"), errContains: "boom"},
		{name: "skip", facts: []reports.Fact{pass}, err: skip(fmt.Errorf("freeze: %w", platform.ErrNotOffered)), skipped: "freeze: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(reports.Verdict{Scenario: "x", Passed: true, Facts: tc.facts}, tc.err)
			if v.Passed != tc.passed {
				t.Errorf("passed = %v, want %v (%+v)", v.Passed, tc.passed, v)
			}
			if !strings.HasPrefix(v.Skipped, tc.skipped) || (tc.skipped == "") != (v.Skipped == "") {
				t.Errorf("skipped = %q, want %q", v.Skipped, tc.skipped)
			}
			if !strings.Contains(v.Error, tc.errContains) || (tc.errContains == "") != (v.Error == "") {
				t.Errorf("error = %q, want it to contain %q", v.Error, tc.errContains)
			}
		})
	}
}
