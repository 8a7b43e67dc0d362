package render

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
)

// TestFactsPass: a not-applicable fact neither passes nor fails a verdict;
// a verdict of only those does not pass (nothing was judged).
func TestFactsPass(t *testing.T) {
	pass := reports.Fact{Name: "a", Passed: true}
	fail := reports.Fact{Name: "b", Detail: "no"}
	na := reports.Fact{Name: "c", NotApplicable: "the HPA keeps no audit"}
	for _, tc := range []struct {
		name  string
		facts []reports.Fact
		want  bool
		p     [3]int
	}{
		{"none", nil, false, [3]int{}},
		{"pass", []reports.Fact{pass}, true, [3]int{1, 0, 0}},
		{"fail", []reports.Fact{pass, fail}, false, [3]int{1, 1, 0}},
		{"pass and n/a", []reports.Fact{pass, na}, true, [3]int{1, 0, 1}},
		{"fail and n/a", []reports.Fact{fail, na}, false, [3]int{0, 1, 1}},
		{"only n/a", []reports.Fact{na, na}, false, [3]int{0, 0, 2}},
		// a broken writer that sets passed on an n/a fact still counts it n/a
		{"n/a marked passed", []reports.Fact{{Name: "d", Passed: true, NotApplicable: "x"}}, false, [3]int{0, 0, 1}},
	} {
		if got := reports.FactsPass(tc.facts); got != tc.want {
			t.Errorf("%s: FactsPass = %v, want %v", tc.name, got, tc.want)
		}
		p, f, n := reports.CountFacts(tc.facts)
		if [3]int{p, f, n} != tc.p {
			t.Errorf("%s: CountFacts = %d %d %d, want %v", tc.name, p, f, n, tc.p)
		}
	}
	if na.Failed() || !fail.Failed() || pass.Failed() {
		t.Error("Failed: n/a or pass reported failed, or a failure not")
	}
	if na.Result() != "n/a" || pass.Result() != "PASS" || fail.Result() != "FAIL" {
		t.Errorf("Result: %s %s %s", na.Result(), pass.Result(), fail.Result())
	}
}

// TestContractFacts: a target run's facts show their contract beside them
// and a not-applicable fact as "n/a" with its reason in every renderer:
// the verdict lines, JUnit (a skipped testcase, not a failure), Markdown,
// HTML and JSON; the timeline lands in the results file and prints as a
// table; the target table counts facts passed and n/a.
func TestContractFacts(t *testing.T) {
	const (
		contract = "a lowered max applies within one HPA sync period (15 s)"
		reason   = "an HPA Event names no actor"
	)
	v := reports.Verdict{Scenario: "target-max-lowered", Passed: false, Facts: []reports.Fact{
		{Name: "a lowered max applies", Detail: "count 3 at 20 s after max 2", Contract: contract},
		{Name: "admin may change the bounds", Passed: true, Detail: "200", Contract: "the admin role may patch the HPA"},
		{Name: "the trail names the actor", NotApplicable: reason},
	}}
	var lines bytes.Buffer
	WriteVerdicts(&lines, []reports.Verdict{v})
	for _, want := range []string{"FAIL  target-max-lowered", "failed: a lowered max applies: count 3 at 20 s after max 2 (contract: " + contract + ")",
		"n/a: the trail names the actor: " + reason} {
		if !strings.Contains(lines.String(), want) {
			t.Errorf("verdict lines lack %q:\n%s", want, lines.String())
		}
	}
	if strings.Contains(lines.String(), "failed: the trail") {
		t.Errorf("an n/a fact is printed as failed:\n%s", lines.String())
	}

	path := filepath.Join(t.TempDir(), "target.jsonl")
	w, err := reports.Create(path, reports.RunMeta{RunID: "r", Platform: "kind", Profile: "quick", Started: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Write(reports.KindScenario, reports.ScenarioStart{Scenario: v.Scenario, Started: time.Unix(0, 0)})
	for i := range 3 {
		_ = w.Write(reports.KindTimeline, reports.TimelinePoint{Scenario: v.Scenario, T: float64(i), InFlight: int64(10 * i), VUs: 64, Count: 1 + i, Ready: 1 + i,
			Desired: 2 + i, Min: 1, Max: 5, Metric: 4.5, HasMetric: i > 0})
	}
	_ = w.Write(reports.KindVerdict, v)
	if err := w.Close(reports.End{Ended: time.Unix(10, 0), ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := reports.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.TimelineOf(v.Scenario); len(got) != 3 || got[2].InFlight != 20 || got[2].Desired != 4 || !got[1].HasMetric {
		t.Fatalf("timeline read back: %+v", got)
	}
	if f := res.Verdicts[0].Facts; f[0].Contract != contract || f[2].NotApplicable != reason {
		t.Fatalf("facts read back: %+v", f)
	}

	doc := BuildJUnit([]*reports.Results{res})
	s := doc.Suites[0]
	var na, failed *JUnitCase
	for i, c := range s.Cases {
		switch c.Name {
		case v.Scenario + " / the trail names the actor":
			na = &s.Cases[i]
		case v.Scenario + " / a lowered max applies":
			failed = &s.Cases[i]
		}
	}
	if na == nil || na.Skipped == nil || na.Failure != nil || !strings.Contains(na.Skipped.Message, reason) {
		t.Errorf("JUnit n/a case: %+v", na)
	}
	if failed == nil || failed.Failure == nil || !strings.Contains(failed.SystemOut, "contract: "+contract) {
		t.Errorf("JUnit failed case: %+v", failed)
	}
	if s.Failures != 2 || s.Skipped != 1 { // the scenario and its one failed fact; the n/a fact
		t.Errorf("JUnit suite: failures %d skipped %d", s.Failures, s.Skipped)
	}

	var md bytes.Buffer
	if err := RenderMarkdown(&md, []*reports.Results{res}, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| Result | Fact | Contract | Detail |", "| FAIL | a lowered max applies | " + contract,
		"| n/a | the trail names the actor |  | not applicable: " + reason, "| t (s) | VUs | in flight | count | ready | desired | min | max | metric |",
		"| 2.0 | 64 | 20 | 3 | 3 | 4 | 1 | 5 | 4.5 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	var page bytes.Buffer
	if err := RenderHTML(&page, []*reports.Results{res}, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<th>Contract</th>", `class="badge none">n/a`, contract, `<table class="timeline">`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	js, _ := json.Marshal(BuildJSON([]*reports.Results{res}, Options{}))
	for _, want := range []string{`"contract":"` + contract, `"not_applicable":"` + reason, `"timeline":[{"scenario":"target-max-lowered","t":0`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %q", want)
		}
	}

	var tbl bytes.Buffer
	if err := WriteTargetTable(&tbl, []reports.Verdict{v, {Scenario: "target-outage", Skipped: "no fault actions", Facts: []reports.Fact{{Name: "x", NotApplicable: "y"}}}}, false); err != nil {
		t.Fatal(err)
	}
	want := "Scenario            Verdict  Facts passed  n/a\ntarget-max-lowered  FAIL     1 of 2        1\ntarget-outage       SKIP     0 of 0        1\n"
	if tbl.String() != want {
		t.Errorf("target table:\n%s\nwant:\n%s", tbl.String(), want)
	}
	var txt bytes.Buffer
	if err := WriteTimeline(&txt, res.Timeline, 2, false); err != nil || strings.Count(txt.String(), "\n") != 3 { // header, t=0, t=2
		t.Errorf("timeline every 2 (%v):\n%s", err, txt.String())
	}
}

// TestFactsWithoutContract: facts with no contract and no n/a render as
// they always did (no Contract column).
func TestFactsWithoutContract(t *testing.T) {
	h, rows := factTable([]reports.Fact{{Name: "no 5xx", Passed: true, Detail: "0"}})
	if strings.Join(h, ",") != "Result,Fact,Detail" || strings.Join(rows[0], ",") != "PASS,no 5xx,0" {
		t.Errorf("factTable: %v %v", h, rows)
	}
}
