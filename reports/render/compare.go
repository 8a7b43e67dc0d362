package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/scaleproof/scaleproof/reports"
)

// Tolerances say how far a candidate run may drift from its baseline before
// compare calls it a regression. Read from a small JSON file (any field left
// out keeps its default; see DefaultTolerances):
//
//	{"up_to_max_growth_pct": 20, "back_to_1_growth_pct": 20, "time_slack_s": 1,
//	 "max_5xx": 0, "pct_429_increase_pts": 1, "passed_must_pass": true,
//	 "p95_growth_pct": 50}
type Tolerances struct {
	// UpToMaxGrowthPct: the time to reach max may grow by at most this
	// percentage of the baseline's.
	UpToMaxGrowthPct float64 `json:"up_to_max_growth_pct"`
	// BackTo1GrowthPct: the time back to 1 may grow by at most this percentage.
	BackTo1GrowthPct float64 `json:"back_to_1_growth_pct"`
	// TimeSlackS: a time that grows by no more than this many seconds never
	// regresses, whatever the percentage (the count is sampled once a second,
	// so a 4 s time that reads 5 s is within the measurement).
	TimeSlackS float64 `json:"time_slack_s"`
	// Max5xx: 5xx answers may not rise above max(baseline's, Max5xx); with 0,
	// a baseline without 5xx must stay without.
	Max5xx int64 `json:"max_5xx"`
	// Pct429IncreasePts: 429 as a percentage of all calls may rise by at most
	// this many percentage points.
	Pct429IncreasePts float64 `json:"pct_429_increase_pts"`
	// PassedMustPass: every scenario that passed in the baseline must pass
	// (and be there) in the candidate.
	PassedMustPass bool `json:"passed_must_pass"`
	// P95GrowthPct: latency p95 may grow by at most this percentage; nil
	// (the default) only reports it.
	P95GrowthPct *float64 `json:"p95_growth_pct,omitempty"`
}

// DefaultTolerances: up-to-max and back-to-1 may grow by 20 % (or 1 s),
// 5xx must stay 0, 429 % may rise by 1 point, passing scenarios must pass,
// p95 is reported only.
func DefaultTolerances() Tolerances {
	return Tolerances{UpToMaxGrowthPct: 20, BackTo1GrowthPct: 20, TimeSlackS: 1, Max5xx: 0,
		Pct429IncreasePts: 1, PassedMustPass: true}
}

// ReadTolerances reads a tolerances file over the defaults. An unreadable
// file, bad JSON, an unknown field or a negative value is an error.
func ReadTolerances(path string) (Tolerances, error) {
	t := DefaultTolerances()
	b, err := os.ReadFile(path)
	if err != nil {
		return t, fmt.Errorf("tolerances: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, fmt.Errorf("tolerances %s: %w", path, err)
	}
	if t.UpToMaxGrowthPct < 0 || t.BackTo1GrowthPct < 0 || t.TimeSlackS < 0 || t.Max5xx < 0 || t.Pct429IncreasePts < 0 ||
		(t.P95GrowthPct != nil && *t.P95GrowthPct < 0) {
		return t, fmt.Errorf("tolerances %s: values must be >= 0", path)
	}
	return t, nil
}

// Verdicts of one compared metric.
const (
	VerdictOK        = "ok"        // within tolerance
	VerdictBetter    = "better"    // improved
	VerdictRegressed = "REGRESSED" // out of tolerance
	VerdictInfo      = "info"      // reported, no tolerance applies
)

// Change is one metric of one scenario, baseline against candidate.
type Change struct {
	Scenario  string `json:"scenario"`
	Metric    string `json:"metric"`
	Baseline  string `json:"baseline"`  // rendered value
	Candidate string `json:"candidate"` // rendered value
	Delta     string `json:"delta"`     // rendered change ("+2 s (+50 %)"), "" when none applies
	Verdict   string `json:"verdict"`
	Rule      string `json:"rule,omitempty"` // the tolerance that decided
}

// Comparison is a baseline run against a candidate run.
type Comparison struct {
	Baseline, Candidate *reports.Results `json:"-"`
	Tolerances          Tolerances       `json:"tolerances"`
	Changes             []Change         `json:"changes"`
	// Regressions counts the changes whose verdict is VerdictRegressed.
	Regressions int `json:"regressions"`
	// Warnings say what makes the two runs less comparable than two
	// releases of one autoscaler (e.g. they ran different policies).
	Warnings []string `json:"warnings,omitempty"`
}

// Regressed is true when any metric is out of tolerance.
func (c *Comparison) Regressed() bool { return c.Regressions > 0 }

// ErrUnusable wraps the reasons Compare refuses its input.
var ErrUnusable = errors.New("unusable input")

// Compare compares a candidate run with its baseline, scenario by scenario
// (the baseline's scenarios, in its order, then any the candidate added),
// metric by metric: verdict, up to max, all ready, back to 1, 5xx, 429 %,
// calls ok and p95. It returns an error wrapping ErrUnusable when either
// file is incomplete, has no verdict, or the two ran different profiles or
// max (their times are not comparable).
func Compare(base, cand *reports.Results, tol Tolerances) (*Comparison, error) {
	for _, x := range []struct {
		role string
		r    *reports.Results
	}{{"baseline", base}, {"candidate", cand}} {
		if x.r.Incomplete {
			return nil, fmt.Errorf("%w: %s %s is incomplete (%s)", ErrUnusable, x.role, x.r.Path, x.r.IncompleteReason)
		}
		if len(x.r.Verdicts) == 0 {
			return nil, fmt.Errorf("%w: %s %s has no scenario verdict", ErrUnusable, x.role, x.r.Path)
		}
	}
	if base.Meta.Profile != cand.Meta.Profile {
		return nil, fmt.Errorf("%w: baseline ran profile %q, candidate %q: their times are not comparable", ErrUnusable, base.Meta.Profile, cand.Meta.Profile)
	}
	if bm, cm := base.Meta.Settings["max"], cand.Meta.Settings["max"]; bm != cm {
		return nil, fmt.Errorf("%w: baseline ran with max %q, candidate with %q", ErrUnusable, bm, cm)
	}
	cmp := &Comparison{Baseline: base, Candidate: cand, Tolerances: tol}
	if bp, cp := policyOf(base), policyOf(cand); bp != cp {
		cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("the baseline ran the %s policy and the candidate the %s policy: "+
			"this compares two policies, not two releases of one", bp, cp))
	}
	if id := base.Meta.RunID; id != "" && id == cand.Meta.RunID {
		cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("the baseline and the candidate are the same run (%s): nothing can have regressed", id))
	}
	cv := map[string]*reports.Verdict{}
	for i := range cand.Verdicts {
		cv[cand.Verdicts[i].Scenario] = &cand.Verdicts[i]
	}
	seen := map[string]bool{}
	for i := range base.Verdicts {
		b := &base.Verdicts[i]
		seen[b.Scenario] = true
		c := cv[b.Scenario]
		if c == nil {
			ch := Change{Scenario: b.Scenario, Metric: "verdict", Baseline: reports.PassFail(b.Passed), Candidate: "not run", Verdict: VerdictInfo}
			if tol.PassedMustPass && b.Passed {
				ch.Verdict, ch.Rule = VerdictRegressed, "a scenario that passed must still pass"
			}
			cmp.add(ch)
			continue
		}
		cmp.scenario(b, c)
	}
	for i := range cand.Verdicts {
		c := &cand.Verdicts[i]
		if !seen[c.Scenario] {
			cmp.add(Change{Scenario: c.Scenario, Metric: "verdict", Baseline: "not run", Candidate: reports.PassFail(c.Passed), Verdict: VerdictInfo, Rule: "new scenario"})
		}
	}
	return cmp, nil
}

func (cmp *Comparison) add(c Change) {
	if c.Verdict == VerdictRegressed {
		cmp.Regressions++
	}
	cmp.Changes = append(cmp.Changes, c)
}

func (cmp *Comparison) scenario(b, c *reports.Verdict) {
	tol := cmp.Tolerances
	name := b.Scenario
	// Verdict.
	ch := Change{Scenario: name, Metric: "verdict", Baseline: reports.PassFail(b.Passed), Candidate: reports.PassFail(c.Passed), Verdict: VerdictOK}
	switch {
	case b.Passed && !c.Passed:
		ch.Verdict = VerdictInfo
		if tol.PassedMustPass {
			ch.Verdict, ch.Rule = VerdictRegressed, "a scenario that passed must still pass"
		}
		if f := failedFactNames(c); f != "" {
			ch.Delta = "failed: " + f
		}
	case !b.Passed && c.Passed:
		ch.Verdict = VerdictBetter
	case !b.Passed && !c.Passed:
		ch.Verdict = VerdictInfo
		ch.Rule = "failed in the baseline too"
	}
	cmp.add(ch)
	// Times.
	cmp.time(name, "up to max", orNever(b.UpToMaxS), orNever(c.UpToMaxS), &tol.UpToMaxGrowthPct)
	cmp.time(name, "all ready", orNever(b.ReadyMaxS), orNever(c.ReadyMaxS), nil)
	cmp.time(name, "back to 1", orNever(b.BackTo1S), orNever(c.BackTo1S), &tol.BackTo1GrowthPct)
	if b.Calls.Total() == 0 && c.Calls.Total() == 0 {
		return // no load in this scenario: no call metrics
	}
	// 5xx.
	limit := max(b.Calls.Server5xx, tol.Max5xx)
	ch = Change{Scenario: name, Metric: "5xx", Baseline: FormatCount(b.Calls.Server5xx), Candidate: FormatCount(c.Calls.Server5xx),
		Delta: signedInt(c.Calls.Server5xx - b.Calls.Server5xx), Verdict: VerdictOK,
		Rule: "at most " + FormatCount(limit) + " (max of the baseline's and " + strconv.FormatInt(tol.Max5xx, 10) + ")"}
	switch {
	case c.Calls.Server5xx > limit:
		ch.Verdict = VerdictRegressed
	case c.Calls.Server5xx < b.Calls.Server5xx:
		ch.Verdict = VerdictBetter
	}
	cmp.add(ch)
	// 429 %.
	bp, cp := b.Calls.Pct429(), c.Calls.Pct429()
	ch = Change{Scenario: name, Metric: "429 %", Baseline: fmtPct(bp), Candidate: fmtPct(cp),
		Delta: signedFloat(cp-bp, 1) + " pt", Verdict: VerdictOK,
		Rule: "at most baseline + " + strconv.FormatFloat(tol.Pct429IncreasePts, 'f', -1, 64) + " pt"}
	switch {
	case cp > bp+tol.Pct429IncreasePts+1e-9:
		ch.Verdict = VerdictRegressed
	case cp < bp-tol.Pct429IncreasePts:
		ch.Verdict = VerdictBetter
	}
	cmp.add(ch)
	// Calls ok: reported.
	cmp.add(Change{Scenario: name, Metric: "calls ok", Baseline: FormatCount(b.Calls.OK), Candidate: FormatCount(c.Calls.OK),
		Delta: signedInt(c.Calls.OK-b.Calls.OK) + pctOf(float64(c.Calls.OK-b.Calls.OK), float64(b.Calls.OK)), Verdict: VerdictInfo})
	// p95.
	ch = Change{Scenario: name, Metric: "p95", Baseline: fmtMS(b.P95ms), Candidate: fmtMS(c.P95ms), Verdict: VerdictInfo}
	if b.P95ms > 0 && c.P95ms > 0 {
		ch.Delta = signedFloat(c.P95ms-b.P95ms, 0) + " ms" + pctOf(c.P95ms-b.P95ms, b.P95ms)
		if g := tol.P95GrowthPct; g != nil {
			ch.Verdict, ch.Rule = VerdictOK, "may grow by "+strconv.FormatFloat(*g, 'f', -1, 64)+" %"
			if c.P95ms > b.P95ms*(1+*g/100) {
				ch.Verdict = VerdictRegressed
			}
		}
	}
	cmp.add(ch)
}

// time compares a time in seconds (-1: never). growthPct nil reports it only.
func (cmp *Comparison) time(scenario, metric string, b, c float64, growthPct *float64) {
	if b < 0 && c < 0 {
		return // not measured in this scenario
	}
	ch := Change{Scenario: scenario, Metric: metric, Baseline: fmtS(b), Candidate: fmtS(c), Verdict: VerdictInfo}
	if growthPct != nil {
		ch.Rule = "may grow by " + strconv.FormatFloat(*growthPct, 'f', -1, 64) + " % or " + fmtS(cmp.Tolerances.TimeSlackS)
	}
	switch {
	case b >= 0 && c < 0:
		ch.Delta = "never happened"
		if growthPct != nil {
			ch.Verdict = VerdictRegressed
		}
	case b < 0 && c >= 0:
		ch.Delta = "now happens"
		if growthPct != nil {
			ch.Verdict = VerdictBetter
		}
	default:
		d := math.Round((c-b)*10) / 10
		ch.Delta = signedFloat(d, -1) + " s" + pctOf(d, b)
		if growthPct != nil {
			ch.Verdict = VerdictOK
			allowed := math.Max(b**growthPct/100, cmp.Tolerances.TimeSlackS)
			switch {
			case d > allowed+1e-9:
				ch.Verdict = VerdictRegressed
			case d < -allowed-1e-9:
				ch.Verdict = VerdictBetter
			}
		}
	}
	cmp.add(ch)
}

func signedInt(n int64) string {
	if n > 0 {
		return "+" + FormatCount(n)
	}
	return FormatCount(n)
}

// signedFloat renders v with prec decimals (-1: as few as needed) and a
// sign: "+2.5", "-1", "0".
func signedFloat(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	switch {
	case strings.Trim(s, "-0.") == "":
		return strings.TrimPrefix(s, "-")
	case v > 0:
		return "+" + s
	}
	return s
}

// pctOf renders d as a percentage of base (" (+25 %)"), "" when base is 0.
func pctOf(d, base float64) string {
	if base == 0 {
		return ""
	}
	return " (" + signedFloat(100*d/base, 0) + " %)"
}

func failedFactNames(v *reports.Verdict) string {
	var s []string
	for _, f := range v.Facts {
		if f.Failed() {
			s = append(s, f.Name)
		}
	}
	if v.Error != "" {
		s = append(s, "error: "+v.Error)
	}
	return strings.Join(s, "; ")
}

// WriteComparisonMarkdown writes the sign-off a release manager pastes: the
// outcome, both runs, the tolerances, the regressions, and the table of every
// metric.
func WriteComparisonMarkdown(w io.Writer, cmp *Comparison) error {
	ew := &errWriter{w: w}
	outcome := "PASS: no regression"
	if cmp.Regressed() {
		outcome = fmt.Sprintf("REGRESSED: %d metric(s) out of tolerance", cmp.Regressions)
	}
	ew.printf("## scaleproof compare: %s\n\n", outcome)
	for _, x := range []struct {
		role string
		r    *reports.Results
	}{{"Baseline", cmp.Baseline}, {"Candidate", cmp.Candidate}} {
		ew.printf("- %s: %s, version %s (commit %s), started %s, `%s`\n", x.role, mdCell(x.r.RunTitle()),
			orDash(x.r.Meta.Version), orDash(x.r.Meta.Commit), fmtTime(x.r.Meta.Started), x.r.Path)
	}
	for _, w := range cmp.Warnings {
		ew.printf("\n> **Warning:** %s.\n", w)
	}
	if len(cmp.Warnings) > 0 {
		ew.printf("\n")
	}
	t := cmp.Tolerances
	p95 := "reported only"
	if t.P95GrowthPct != nil {
		p95 = "may grow by " + strconv.FormatFloat(*t.P95GrowthPct, 'f', -1, 64) + " %"
	}
	ew.printf("- Tolerances: up to max may grow by %s %%, back to 1 by %s %% (or %s, the sampling resolution); "+
		"5xx at most max(baseline, %d); 429 %% at most baseline + %s pt; passing scenarios must pass: %v; p95 %s.\n",
		strconv.FormatFloat(t.UpToMaxGrowthPct, 'f', -1, 64), strconv.FormatFloat(t.BackTo1GrowthPct, 'f', -1, 64),
		fmtS(t.TimeSlackS), t.Max5xx, strconv.FormatFloat(t.Pct429IncreasePts, 'f', -1, 64), t.PassedMustPass, p95)
	if cmp.Regressed() {
		ew.printf("\n### Regressions\n\n")
		for _, c := range cmp.Changes {
			if c.Verdict == VerdictRegressed {
				line := fmt.Sprintf("%s: %s %s → %s", c.Scenario, c.Metric, c.Baseline, c.Candidate)
				if c.Delta != "" {
					line += ", " + c.Delta
				}
				if c.Rule != "" {
					line += "; rule: " + c.Rule
				}
				ew.printf("- %s\n", mdCell(line))
			}
		}
	}
	ew.printf("\n### Every metric\n\n")
	var rows [][]string
	for _, c := range cmp.Changes {
		v := c.Verdict
		if v == VerdictRegressed {
			v = "**" + v + "**"
		}
		rows = append(rows, []string{c.Scenario, c.Metric, c.Baseline, c.Candidate, c.Delta, v, c.Rule})
	}
	ew.do(func(w io.Writer) error {
		return writeMarkdownTable(w, []string{"Scenario", "Metric", "Baseline", "Candidate", "Change", "Verdict", "Tolerance"}, rows)
	})
	return ew.err
}

// WriteComparisonJSON writes the comparison as one indented JSON document.
func WriteComparisonJSON(w io.Writer, cmp *Comparison) error {
	doc := struct {
		Schema    string `json:"schema"`
		Baseline  string `json:"baseline"`
		Candidate string `json:"candidate"`
		Regressed bool   `json:"regressed"`
		*Comparison
	}{"scaleproof.compare/v1", cmp.Baseline.Path, cmp.Candidate.Path, cmp.Regressed(), cmp}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// policyOf is the run's policy ("step" for files written before runs
// recorded one: step was the only policy then).
func policyOf(res *reports.Results) string {
	if res.Meta.Policy == "" {
		return "step"
	}
	return res.Meta.Policy
}
