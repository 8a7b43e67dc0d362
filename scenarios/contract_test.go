package scenarios

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/observe"
)

var ct0 = time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return ct0.Add(time.Duration(s * float64(time.Second))) }

// quickSettings are the quick profile's: up 3 s, down 12 s, every 2 s.
var quickSettings = ContractSettings{UpCooldown: 3 * time.Second, DownCooldown: 12 * time.Second, Interval: 2 * time.Second,
	LowRounds: 3, MeanUpFraction: 0.5, TargetRPS: 50, MaxInflight: 32, Slack: time.Second, Source: "the test"}

// ev is one audit entry of a synthetic trace.
type ev struct {
	t                      float64
	action, kind, from, to string
	reason                 string
}

func entries(evs []ev) []consoleclient.AuditEntry {
	var out []consoleclient.AuditEntry
	for i, e := range evs {
		tags := map[string]string{"from": e.from, "to": e.to}
		if e.kind != "" {
			tags["action"] = e.kind
		}
		if e.reason != "" {
			tags["reason"] = e.reason
		}
		out = append(out, consoleclient.AuditEntry{ID: uint64(i + 1), At: at(e.t), Actor: "scheduler", Action: e.action, Tags: tags})
	}
	slices.Reverse(out) // the console lists newest first
	return out
}

// goodSustained is a clean "sustained" trace: created at 0, load from 1 s to
// 20 s (64 VUs, 160 ok calls/s), up 1->3 at 4 s, down at 26 s and 40 s.
func goodSustained() ([]ev, Trace) {
	evs := []ev{
		{0, "workers.max_count", "", "0", "3", ""},
		{0, "workers.count", "", "0", "1", "zone created"},
		{4, "workers.autoscale", "up", "1", "3", "mean in-flight 100%"},
		{26, "workers.autoscale", "down", "3", "2", "3 workers low"},
		{40, "workers.autoscale", "down", "2", "1", "2 workers low"},
	}
	ok := make([]int64, 19)
	for i := range ok {
		ok[i] = 160
	}
	tr := Trace{Max: 3, Loads: []LoadWindow{{Start: at(1), End: at(20), VUs: 64, OK: ok}}, End: at(45)}
	return evs, tr
}

// samplesFor samples the count of evs every second from 0.5 s to end,
// everything ready.
func samplesFor(evs []ev, end float64) []observe.Sample {
	var out []observe.Sample
	for t := 0.5; t <= end; t++ {
		c := 0
		for _, e := range evs {
			if e.t <= t && (e.action == "workers.count" || e.kind == "up" || e.kind == "down") {
				c, _ = strconv.Atoi(e.to)
			}
		}
		out = append(out, observe.Sample{At: at(t), Count: c, Max: 3, Ready: c})
	}
	return out
}

func judge(cs ContractSettings, evs []ev, tr Trace, samples []observe.Sample) []reports.Fact {
	tr.Audit = entries(evs)
	if samples == nil {
		samples = samplesFor(evs, tr.End.Sub(ct0).Seconds())
	}
	tr.Samples = samples
	return JudgeContract(cs, tr)
}

func failed(fs []reports.Fact) []string {
	var out []string
	for _, f := range fs {
		if !f.Passed {
			out = append(out, f.Name)
		}
	}
	return out
}

func TestContractCleanTracePasses(t *testing.T) {
	evs, tr := goodSustained()
	fs := judge(quickSettings, evs, tr, nil)
	if bad := failed(fs); len(bad) > 0 {
		for _, f := range fs {
			t.Logf("%v %s: %s", f.Passed, f.Name, f.Detail)
		}
		t.Fatalf("clean trace failed %v", bad)
	}
	for _, want := range []string{"has its audit tags", "exactly one audit entry", "holds are not audited",
		"no step up within the up cooldown (3 s)", "proportional target", "count reaches 3 within",
		"every step down is exactly one worker", "no step down within the down cooldown (12 s)",
		"no step down before 3 low rounds", "no lingering"} {
		found := false
		for _, f := range fs {
			if strings.Contains(f.Name, want) {
				found = true
				if f.Detail == "" {
					t.Errorf("fact %q has no detail", f.Name)
				}
			}
		}
		if !found {
			t.Errorf("no fact %q among %d", want, len(fs))
		}
	}
}

// Each bad trace breaks one rule; exactly the facts named must fail.
func TestContractEachRuleBrokenOnce(t *testing.T) {
	type tc struct {
		name    string
		mutate  func(evs []ev, tr *Trace) ([]ev, []observe.Sample)
		wantBad []string // substrings of the failing facts' names, all of them
		mayFail []string // facts that follow from the broken one and may fail with it
	}
	set := func(i int, e ev) func([]ev, *Trace) ([]ev, []observe.Sample) {
		return func(evs []ev, _ *Trace) ([]ev, []observe.Sample) { evs[i] = e; return evs, nil }
	}
	cases := []tc{
		{"step up within the up cooldown of the zone's creation",
			set(2, ev{2, "workers.autoscale", "up", "1", "3", "r"}),
			[]string{"no step up within the up cooldown"}, nil},
		{"step up +1 at a time",
			func(evs []ev, _ *Trace) ([]ev, []observe.Sample) {
				evs[2] = ev{4, "workers.autoscale", "up", "1", "2", "r"}
				return slices.Insert(evs, 3, ev{8, "workers.autoscale", "up", "2", "3", "r"}), nil
			},
			[]string{"proportional target", "count reaches 3 within"}, nil},
		{"step down straight to 1",
			func(evs []ev, _ *Trace) ([]ev, []observe.Sample) {
				evs[3] = ev{26, "workers.autoscale", "down", "3", "1", "r"}
				return evs[:4], nil
			},
			[]string{"exactly one worker"}, nil},
		{"step down within the down cooldown",
			set(4, ev{32, "workers.autoscale", "down", "2", "1", "r"}),
			[]string{"no step down within the down cooldown"}, nil},
		{"step down after one low round",
			func(evs []ev, _ *Trace) ([]ev, []observe.Sample) {
				evs[3] = ev{21, "workers.autoscale", "down", "3", "2", "r"}
				evs[4] = ev{34, "workers.autoscale", "down", "2", "1", "r"}
				return evs, nil
			},
			[]string{"no step down before 3 low rounds"}, nil},
		{"step down two rounds late",
			set(4, ev{44, "workers.autoscale", "down", "2", "1", "r"}),
			[]string{"no lingering"}, nil},
		{"never back to 1",
			func(evs []ev, tr *Trace) ([]ev, []observe.Sample) { tr.End = at(60); return evs[:4], nil },
			[]string{"no lingering"}, nil},
		{"a hold audited",
			func(evs []ev, _ *Trace) ([]ev, []observe.Sample) {
				return slices.Insert(evs, 3, ev{10, "workers.autoscale", "hold", "3", "3", "at max 3 under load"}), nil
			},
			[]string{"holds are not audited"}, nil},
		{"a change without an audit entry",
			func(evs []ev, tr *Trace) ([]ev, []observe.Sample) {
				samples := samplesFor(evs, tr.End.Sub(ct0).Seconds())
				return slices.Delete(evs, 3, 4), samples
			},
			[]string{"exactly one audit entry"}, []string{"no lingering"}},
		{"a change audited twice",
			func(evs []ev, _ *Trace) ([]ev, []observe.Sample) {
				return slices.Insert(evs, 4, ev{26, "workers.autoscale", "down", "3", "2", "r"}), nil
			},
			[]string{"exactly one audit entry"}, []string{"within the down cooldown", "before 3 low rounds"}},
		{"an entry without its reason",
			set(3, ev{26, "workers.autoscale", "down", "3", "2", ""}),
			[]string{"has its audit tags"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, tr := goodSustained()
			evs, samples := c.mutate(evs, &tr)
			fs := judge(quickSettings, evs, tr, samples)
			bad := failed(fs)
			for _, w := range c.wantBad {
				if !slices.ContainsFunc(bad, func(n string) bool { return strings.Contains(n, w) }) {
					t.Errorf("fact %q did not fail", w)
				}
			}
			for _, b := range bad {
				if !slices.ContainsFunc(append(c.wantBad, c.mayFail...), func(w string) bool { return strings.Contains(b, w) }) {
					t.Errorf("fact %q failed too", b)
				}
			}
			if t.Failed() {
				for _, f := range fs {
					t.Logf("%v %s: %s", f.Passed, f.Name, f.Detail)
				}
			}
		})
	}
}

func TestContractLoweredMax(t *testing.T) {
	for _, c := range []struct {
		name     string
		put, get int
		ok       bool
	}{
		{"in the request", 1, 1, true},
		{"applied by a later round", 3, 3, false},
		{"answer right, GET stale", 1, 3, false},
		{"unreadable answer", -1, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := FactLoweredMaxInRequest(MaxLowering{At: at(5), To: 1, PutCount: c.put, GetCount: c.get})
			if f.Passed != c.ok {
				t.Errorf("passed = %v, want %v: %s", f.Passed, c.ok, f.Detail)
			}
		})
	}
}

func TestFirstUpProportionalFollowsTheLoad(t *testing.T) {
	// 40 ok calls/s on one worker: rate/target 0.8 and mean 100 %: the target is 2,
	// so +1 is right here.
	tr := Trace{Max: 3, Loads: []LoadWindow{{Start: at(0), End: at(10), VUs: 64, OK: []int64{40, 40, 40, 40, 40}}},
		Samples: []observe.Sample{{At: at(0.5), Count: 1, Ready: 1}}}
	ch := []Change{{At: at(0), From: 0, To: 1, Kind: "set"}, {At: at(4), From: 1, To: 2, Kind: "up"}}
	if f := FactFirstUpProportional(quickSettings, tr, ch); f == nil || !f.Passed {
		t.Fatalf("low rate: %+v", f)
	}
	// No step up under load: nothing to judge.
	if f := FactFirstUpProportional(quickSettings, Trace{Max: 3}, ch); f != nil {
		t.Fatalf("without load: %+v", f)
	}
	// A load under the mean threshold: nothing to judge.
	tr.Loads[0].VUs = 8
	if f := FactFirstUpProportional(quickSettings, tr, ch); f != nil {
		t.Fatalf("light load: %+v", f)
	}
}

func TestCountsBetween(t *testing.T) {
	ch := []Change{{At: at(0), To: 1}, {At: at(4), To: 3}, {At: at(4.5), To: 2}}
	for _, c := range []struct {
		from, to float64
		want     []int
		known    bool
	}{
		{-2, -1, nil, false},
		{1, 2, []int{1}, true},
		{3, 5, []int{1, 3, 2}, true},
		{4.2, 6, []int{3, 2}, true},
		{5, 6, []int{2}, true},
	} {
		got, known := countsBetween(ch, at(c.from), at(c.to))
		if known != c.known || !slices.Equal(got, c.want) {
			t.Errorf("counts in [%g, %g] = %v %v, want %v %v", c.from, c.to, got, known, c.want, c.known)
		}
	}
}

func TestRateBefore(t *testing.T) {
	l := LoadWindow{Start: at(10), OK: []int64{100, 200, 300}}
	for _, c := range []struct {
		t, interval float64
		want        float64
		ok          bool
	}{
		{12, 2, 150, true},   // seconds 0 and 1 whole
		{11.5, 2, 100, true}, // 1.5 s of load in a 2 s window: 100 + 100 calls over 2 s
		{13, 1, 300, true},
		{10, 2, 0, true}, // the window ends at the load's start
		{12, 0, 0, false},
	} {
		got, ok := rateBefore(l, at(c.t), time.Duration(c.interval*float64(time.Second)))
		if ok != c.ok || got < c.want-1e-6 || got > c.want+1e-6 {
			t.Errorf("rate before %g over %g s = %g %v, want %g %v", c.t, c.interval, got, ok, c.want, c.ok)
		}
	}
}

// A worker not ready after the load (down, frozen) holds scale-in and
// restarts the low rounds: a later step down is not lingering.
func TestNoLingerWaitsForEveryWorkerReady(t *testing.T) {
	evs, tr := goodSustained()
	evs[4] = ev{50, "workers.autoscale", "down", "2", "1", "r"} // due at 41 if all were ready
	samples := samplesFor(evs, tr.End.Sub(ct0).Seconds()+10)
	for i := range samples {
		if at(30).Before(samples[i].At) && samples[i].At.Before(at(43)) {
			samples[i].Ready = samples[i].Count - 1 // one of two not ready from 30 s to 43 s
		}
	}
	tr.End = at(55)
	tr.Audit, tr.Samples = entries(evs), samples
	ch := Changes(tr.Audit)
	if f := FactNoLinger(quickSettings, tr, ch); f == nil || !f.Passed {
		t.Fatalf("a step down 7 s after every worker was ready again: %+v", f)
	}
	// Ready again at 43.5 s: due by 43.5 + 3 intervals + 1 = 50.5 s; at 52 s it lingered.
	evs[4].t = 52
	tr.Audit = entries(evs)
	if f := FactNoLinger(quickSettings, tr, Changes(tr.Audit)); f == nil || f.Passed {
		t.Fatalf("a step down 8.5 s after every worker was ready again passed: %+v", f)
	}
}

func TestTimeToMaxOnlyUnderLoadThatAsksForIt(t *testing.T) {
	evs, tr := goodSustained()
	tr.Audit = entries(evs)
	ch := Changes(tr.Audit)
	if f := FactTimeToMax(quickSettings, tr, ch); f == nil || !f.Passed {
		t.Fatalf("64 VUs: %+v", f)
	}
	tr.Loads[0].VUs = 20 // < 3 × 32 × 50 %: the target is not the max
	if f := FactTimeToMax(quickSettings, tr, ch[:2]); f != nil {
		t.Fatalf("20 VUs judged: %+v", f)
	}
}

// A first step up that was all the load it saw asked for (1.5 s into the
// load, the rate over the interval before it is 120 calls/s: target 2) may
// be followed by one more step to the max, due one up cooldown + one
// interval later; a first step short of its target (3) gets no such grace.
func TestTimeToMaxAllowsOneStepWithoutRate(t *testing.T) {
	cases := []struct {
		name          string
		first, second float64 // times of the steps 1->2 and 2->3
		want          bool
	}{
		{"first step on target, second in time", 2.5, 6.5, true}, // bound 1.5 + 3 + 2 + 1 = 7.5 s into the load
		{"first step on target, second late", 2.5, 9.5, false},   // 8.5 s > 7.5 s
		{"first step short of its target", 3.5, 8, false},        // 2.5 s into the load (a full interval): bound 2 + 2 + 1 = 5 s
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, tr := goodSustained()
			evs := []ev{
				{0, "workers.max_count", "", "0", "3", ""},
				{0, "workers.count", "", "0", "1", "zone created"},
				{c.first, "workers.autoscale", "up", "1", "2", "mean in-flight 100%"},
				{c.second, "workers.autoscale", "up", "2", "3", "mean in-flight 100%"},
			}
			tr.Audit = entries(evs)
			f := FactTimeToMax(quickSettings, tr, Changes(tr.Audit))
			if f == nil || f.Passed != c.want {
				t.Fatalf("passed want %v, got %+v", c.want, f)
			}
		})
	}
}

func TestBackPressureAtLimit(t *testing.T) {
	for _, c := range []struct {
		name   string
		ws     []WorkerPressure
		passed bool
		says   string
	}{
		{"held its limit and refused the rest", []WorkerPressure{{ID: "w1", Limit: 32, HighWater: 32, Refused: 40}, {ID: "canary", Limit: 32, HighWater: 12}}, true, "w1 held at most 32 of 32, refused 40"},
		{"never reached it, refused nothing", []WorkerPressure{{ID: "w1", Limit: 32, HighWater: 5}}, true, "1 workers"},
		{"one call over its limit", []WorkerPressure{{ID: "w1", Limit: 32, HighWater: 33, Refused: 40}}, false, "w1 held 33 calls at once, over its limit 32"},
		{"refused before its limit", []WorkerPressure{{ID: "w1", Limit: 32, HighWater: 31, Refused: 3}}, false, "w1 answered 429 to 3 calls but never held more than 31 of its limit 32"},
		{"no limit reported", []WorkerPressure{{ID: "w1", HighWater: 3}}, false, "w1 reports no in-flight limit"},
		{"nothing read", nil, false, "no worker was read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := FactBackPressureAtLimit(c.ws)
			if f.Name != factBackPressure || f.Passed != c.passed || !strings.Contains(f.Detail, c.says) {
				t.Errorf("fact %+v, want passed %v and a detail with %q", f, c.passed, c.says)
			}
		})
	}
}

// A round is low on in-flight alone, so under a load of short calls the
// low rounds can begin before the load ends: with the console's rounds the
// low rounds are counted from the rounds' inputs, not timed from the
// load's end (the kind canary run: down 3->2 2.8 s after the load's end,
// after three low rounds, the first under the load).
func TestFactLowRoundsCountsTheRounds(t *testing.T) {
	cs := quickSettings
	cs.LowFraction = 0.3
	// worker samples: in-flight 4 of 32 is low (12.5 %), 16 of 32 is not.
	round := func(s float64, in int, action string, from, to int) consoleclient.StepRound {
		rd := consoleclient.StepRound{At: at(s), Actor: "scheduler", Count: from, Max: 3, Action: action, From: from, To: to}
		for i := range from {
			rd.Workers = append(rd.Workers, consoleclient.StepRoundWorker{StepRoundSample: consoleclient.StepRoundSample{
				ID: strconv.Itoa(i), Reachable: true, Ready: true, Limit: 32, InFlight: in}})
		}
		return rd
	}
	// rounds every 2 s from 8.8 s; the load ends at 20 s; down 3->2 at 22.8 s.
	rounds := func(ins ...int) []consoleclient.StepRound {
		var out []consoleclient.StepRound
		for i, in := range ins {
			s := 8.8 + 2*float64(i)
			if i == len(ins)-1 {
				out = append(out, round(s, in, "down", 3, 2))
			} else {
				out = append(out, round(s, in, "hold", 3, 3))
			}
		}
		return out
	}
	evs := []ev{
		{0, "workers.max_count", "", "0", "3", ""},
		{0, "workers.count", "", "0", "1", "zone created"},
		{4, "workers.autoscale", "up", "1", "3", "mean in-flight 100%"},
		{22.8, "workers.autoscale", "down", "3", "2", "low"},
	}
	ch := Changes(entries(evs))
	base := Trace{Max: 3, Loads: []LoadWindow{{Start: at(1), End: at(20), VUs: 64}}, End: at(30)}
	for _, c := range []struct {
		name   string
		rounds []consoleclient.StepRound
		gaps   map[int]bool
		cs     ContractSettings
		pass   bool
		detail string
	}{
		{"three low rounds, the first under the load", rounds(16, 16, 16, 16, 16, 4, 4, 4), nil, cs, true, "1 counted from the console's step rounds"},
		{"one low round", rounds(16, 16, 16, 16, 16, 16, 16, 4), nil, cs, false, "after 1 low rounds in a row"},
		{"two low rounds", rounds(16, 16, 16, 16, 16, 16, 4, 4), nil, cs, false, "after 2 low rounds in a row"},
		{"a worker not ready ends the run", func() []consoleclient.StepRound {
			r := rounds(4, 4, 4, 4, 4, 4, 4, 4)
			r[6].Workers[1].Ready = false
			return r
		}(), nil, cs, false, "after 1 low rounds in a row"},
		{"no rounds: timed from the load's end", nil, nil, cs, false, "down 3->2 2.8 s after the load's end"},
		{"a gap before the third: timed", rounds(16, 16, 16, 16, 16, 16, 4, 4), map[int]bool{6: true}, cs, false, "1 timed"},
		{"low fraction unknown: timed", rounds(16, 16, 16, 16, 16, 4, 4, 4), nil, quickSettings, false, "0 counted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := base
			tr.Rounds, tr.RoundGaps = c.rounds, c.gaps
			f := FactLowRounds(c.cs, tr, ch)
			if f == nil {
				t.Fatal("no fact")
			}
			if f.Passed != c.pass || !strings.Contains(f.Detail, c.detail) {
				t.Errorf("passed %v (want %v): %s\nwant detail with %q", f.Passed, c.pass, f.Detail, c.detail)
			}
		})
	}
}
