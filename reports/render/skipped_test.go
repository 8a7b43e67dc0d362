package render

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
)

// TestSkippedVerdict: a scenario skipped because the platform cannot perform
// a fault action shows SKIP with the reason in the verdict lines, the JUnit
// <skipped message=...>, the markdown, the HTML and the JSON report, and
// neither passes nor fails the row.
func TestSkippedVerdict(t *testing.T) {
	const reason = "platform external cannot freeze a worker: it reaches the system only through its URLs"
	pass := reports.Verdict{Scenario: "sustained", Passed: true, Facts: []reports.Fact{{Name: "count reaches 3 under load", Passed: true}}}
	skip := reports.Verdict{Scenario: "outage", Skipped: reason}
	fail := reports.Verdict{Scenario: "burst", Facts: []reports.Fact{{Name: "no 5xx", Detail: "3 calls answered 5xx"}}}

	for _, tc := range []struct {
		name string
		vs   []reports.Verdict
		want bool
	}{
		{"pass and skip", []reports.Verdict{pass, skip}, true},
		{"fail and skip", []reports.Verdict{fail, skip}, false},
	} {
		if got := reports.SummaryRow("local", tc.vs).Passed; got != tc.want {
			t.Errorf("%s: row passed %v, want %v", tc.name, got, tc.want)
		}
	}

	var lines bytes.Buffer
	WriteVerdicts(&lines, []reports.Verdict{skip})
	if !strings.Contains(lines.String(), "SKIP  outage") || !strings.Contains(lines.String(), "skipped: "+reason) {
		t.Errorf("verdict lines:\n%s", lines.String())
	}

	path := filepath.Join(t.TempDir(), "skip.jsonl")
	w, err := reports.Create(path, reports.RunMeta{RunID: "r", Platform: "external", Profile: "quick", Started: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Write(reports.KindScenario, reports.ScenarioStart{Scenario: "outage", Started: time.Unix(0, 0)})
	_ = w.Write(reports.KindVerdict, skip)
	if err := w.Close(reports.End{Ended: time.Unix(10, 0)}); err != nil {
		t.Fatal(err)
	}
	res, err := reports.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := BuildJUnit([]*reports.Results{res})
	var sk *JUnitProblem
	for _, c := range doc.Suites[0].Cases {
		if c.Name == "outage" {
			sk = c.Skipped
		}
	}
	if sk == nil || sk.Message != reason || doc.Suites[0].Skipped != 1 || doc.Suites[0].Failures != 0 {
		t.Errorf("JUnit: skipped %+v, suite skipped %d failures %d", sk, doc.Suites[0].Skipped, doc.Suites[0].Failures)
	}
	var xml bytes.Buffer
	if err := WriteJUnit(&xml, doc); err != nil || !strings.Contains(xml.String(), `<skipped message="`+reason) {
		t.Errorf("JUnit XML (%v):\n%s", err, xml.String())
	}
	if v := res.Views(); len(v) != 1 || v[0].Status() != "SKIP" {
		t.Errorf("views: %+v", v)
	}
	var page bytes.Buffer
	if err := RenderHTML(&page, []*reports.Results{res}, Options{}); err != nil || !strings.Contains(page.String(), "Skipped: "+reason) ||
		!strings.Contains(page.String(), `class="badge none">SKIP`) {
		t.Errorf("HTML (%v) lacks the skip", err)
	}
	var md bytes.Buffer
	if err := RenderMarkdown(&md, []*reports.Results{res}, Options{}); err != nil || !strings.Contains(md.String(), "Skipped: "+reason) {
		t.Errorf("markdown (%v):\n%s", err, md.String())
	}
	js := BuildJSON([]*reports.Results{res}, Options{})
	if s := js.Runs[0].Scenarios; len(s) != 1 || s[0].Status != "SKIP" || s[0].Skipped != reason || s[0].Passed {
		t.Errorf("JSON: %+v", s)
	}
}
