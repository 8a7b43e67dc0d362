package reports

import (
	"sort"
	"strconv"
	"time"
)

// ScenarioView is everything a results file holds about one scenario, in
// the file's order, for the renderers.
type ScenarioView struct {
	Name    string
	Title   string    // the scenario's one-line description; "" when the file has no scenario record
	Zone    string    // the zone the scenario ran on
	Started time.Time // zero when the file has no scenario record
	// Verdict is nil when the run stopped before the scenario was judged.
	Verdict *Verdict
	Seconds []Second
	Samples []ZoneSample
	Events  []ScaleEvent
	// Readyz are the /readyz failures between this scenario's start and the
	// next one's (the end of the run for the last).
	Readyz []ReadyzFailure
	// LoadModel is ModelClosed or ModelOpen (Results.LoadModel).
	LoadModel string
	// Timeline is a target scenario's samples ("timeline" records).
	Timeline []TimelinePoint
}

// Status is the verdict's mark (Verdict.Status: "PASS", "FAIL", "STOP",
// "SKIP"), or "NO VERDICT" when the run ended before the scenario was
// judged.
func (v ScenarioView) Status() string {
	if v.Verdict == nil {
		return "NO VERDICT"
	}
	return v.Verdict.Status()
}

// DurationS is the scenario's length in seconds: the verdict's, else the
// latest time in its samples and seconds (a scenario cut by a killed run).
func (v ScenarioView) DurationS() float64 {
	if v.Verdict != nil && v.Verdict.DurationS > 0 {
		return v.Verdict.DurationS
	}
	d := 0.0
	for _, s := range v.Samples {
		d = max(d, s.T)
	}
	for _, s := range v.Seconds {
		d = max(d, float64(s.T+1))
	}
	return d
}

// Views groups a results file's records by scenario: one view per scenario
// record in the file's order, then one per verdict whose scenario has no
// record (a run that failed before its scenarios started).
func (res *Results) Views() []ScenarioView {
	var out []ScenarioView
	idx := map[string]int{}
	get := func(name string) *ScenarioView {
		i, ok := idx[name]
		if !ok {
			i = len(out)
			idx[name] = i
			out = append(out, ScenarioView{Name: name, LoadModel: res.LoadModel()})
		}
		return &out[i]
	}
	for _, s := range res.Scenarios {
		v := get(s.Scenario)
		v.Title, v.Zone, v.Started = s.Title, s.Zone, s.Started
	}
	for i := range res.Verdicts {
		get(res.Verdicts[i].Scenario).Verdict = &res.Verdicts[i]
	}
	for _, s := range res.Seconds {
		v := get(s.Scenario)
		v.Seconds = append(v.Seconds, s)
	}
	for _, s := range res.Samples {
		v := get(s.Scenario)
		v.Samples = append(v.Samples, s)
	}
	for _, e := range res.Events {
		v := get(e.Scenario)
		v.Events = append(v.Events, e)
	}
	for _, p := range res.Timeline {
		v := get(p.Scenario)
		v.Timeline = append(v.Timeline, p)
	}
	for i := range out {
		sort.SliceStable(out[i].Seconds, func(a, b int) bool { return out[i].Seconds[a].T < out[i].Seconds[b].T })
	}
	// /readyz failures go to the scenario running at the time.
	for _, f := range res.ReadyzFailures {
		owner := -1
		for i, v := range out {
			if !v.Started.IsZero() && !f.At.Before(v.Started) && (owner < 0 || v.Started.After(out[owner].Started)) {
				owner = i
			}
		}
		if owner >= 0 {
			out[owner].Readyz = append(out[owner].Readyz, f)
		}
	}
	return out
}

// Flaps counts the scale-ups that follow a scale-down in the same scenario:
// the autoscaler scaled in and then had to scale out again. The expected
// cycle (up under load, down after it) counts 0.
func Flaps(events []ScaleEvent) int {
	n := 0
	lastDown := map[string]bool{}
	for _, e := range events {
		switch {
		case e.To > e.From:
			if lastDown[e.Scenario] {
				n++
			}
			lastDown[e.Scenario] = false
		case e.To < e.From:
			lastDown[e.Scenario] = true
		}
	}
	return n
}

// Pct429 is 429 answers as a percentage of every call counted (0 without calls).
func (c Calls) Pct429() float64 {
	if t := c.Total(); t > 0 {
		return 100 * float64(c.TooMany) / float64(t)
	}
	return 0
}

// Others is every call that was neither ok, 429 nor 5xx: other 4xx,
// JSON-RPC errors, bad responses, transport errors and interrupted calls.
func (c Calls) Others() int64 {
	return c.Other4xx + c.JSONRPCError + c.BadResponse + c.Transport + c.Interrupted
}

// RunTitle names a run for headings: "local, profile quick, run 20261130-…".
func (res *Results) RunTitle() string {
	t := res.Meta.Platform + ", profile " + res.Meta.Profile
	if res.Meta.Policy != "" {
		t += ", policy " + res.Meta.Policy
	}
	if res.Meta.RunID != "" {
		t += ", run " + res.Meta.RunID
	}
	return t
}

// ExitCode is the run's exit code from its end record, -1 without one.
func (res *Results) ExitCode() int {
	if res.End == nil {
		return -1
	}
	return res.End.ExitCode
}

// SettingInt reads an integer setting of the run ("max_inflight"); ok is
// false when the run has none or it is not an integer.
func (res *Results) SettingInt(name string) (int, bool) {
	s, ok := res.Meta.Settings[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
