package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/reports"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./reports/ -update` to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run `go test ./reports/ -update` to accept):\n--- got ---\n%s", path, got)
	}
}

func mustRead(t *testing.T, path string) *reports.Results {
	t.Helper()
	res, err := reports.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRenderGolden renders the hand-made results files in every text format
// and compares with the golden files.
func TestRenderGolden(t *testing.T) {
	small := mustRead(t, "testdata/small.jsonl")
	regressed := mustRead(t, "testdata/regressed.jsonl")
	partial := killedDuringBurst(t)
	cases := []struct {
		golden string
		format string
		runs   []*reports.Results
		opts   Options
	}{
		{"small.md", "markdown", []*reports.Results{small}, Options{}},
		{"small.junit.xml", "junit", []*reports.Results{small}, Options{}},
		{"small.json", "json", []*reports.Results{small}, Options{}},
		{"small.txt", "text", []*reports.Results{small}, Options{}},
		{"published.md", "markdown", []*reports.Results{small}, Options{Published: true, Columns: AllColumns()}},
		{"published.json", "json", []*reports.Results{small}, Options{Published: true}},
		{"two.txt", "text", []*reports.Results{small, regressed}, Options{Columns: Columns{Pct429: true, Flaps: true}}},
		{"two.junit.xml", "junit", []*reports.Results{small, regressed}, Options{}},
		{"partial.md", "markdown", []*reports.Results{partial}, Options{}},
		{"partial.junit.xml", "junit", []*reports.Results{partial}, Options{}},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, c.format, c.runs, c.opts); err != nil {
				t.Fatal(err)
			}
			golden(t, c.golden, b.Bytes())
		})
	}
}

func TestRenderErrors(t *testing.T) {
	small := mustRead(t, "testdata/small.jsonl")
	cases := []struct {
		name, format string
		runs         []*reports.Results
		want         string
	}{
		{"unknown format", "pdf", []*reports.Results{small}, "unknown format"},
		{"no runs", "text", nil, "no results"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Render(&bytes.Buffer{}, c.format, c.runs, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestJUnitShape checks the JUnit document's counts: one case per scenario,
// one per fact, one "run complete"; failures where facts failed.
func TestJUnitShape(t *testing.T) {
	small := mustRead(t, "testdata/small.jsonl")
	doc := BuildJUnit([]*reports.Results{small})
	facts := 0
	for _, v := range small.Verdicts {
		facts += len(v.Facts)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites, want 1", len(doc.Suites))
	}
	s := doc.Suites[0]
	if want := len(small.Verdicts) + facts + 1; s.Tests != want || len(s.Cases) != want {
		t.Errorf("tests = %d (%d cases), want %d", s.Tests, len(s.Cases), want)
	}
	// burst failed: the scenario and its two failed facts.
	if s.Failures != 3 || s.Errors != 0 {
		t.Errorf("failures %d errors %d, want 3 and 0", s.Failures, s.Errors)
	}
	var b bytes.Buffer
	if err := WriteJUnit(&b, doc); err != nil {
		t.Fatal(err)
	}
	var back JUnitSuites
	if err := xml.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("the JUnit output does not parse: %v", err)
	}
	if back.Tests != doc.Tests || back.Failures != doc.Failures {
		t.Errorf("read back %d tests %d failures, wrote %d and %d", back.Tests, back.Failures, doc.Tests, doc.Failures)
	}
}

func TestStepsJUnit(t *testing.T) {
	doc := StepsJUnit("scaleproof run", mustRead(t, "testdata/small.jsonl").Meta.Started, []Step{
		{Name: "Up", Duration: 2e9},
		{Name: "Scenario burst", Err: errString("scenario failed: no 5xx")},
		{Name: "Scenario max-1", Skipped: "not run"},
		{Name: "Down"},
	})
	s := doc.Suites[0]
	if s.Tests != 4 || s.Failures != 1 || s.Skipped != 1 || doc.Failures != 1 {
		t.Errorf("tests %d failures %d skipped %d (doc failures %d), want 4 1 1 (1)", s.Tests, s.Failures, s.Skipped, doc.Failures)
	}
	if s.Cases[0].Time != "2.000" || s.Timestamp != "2026-11-30T10:00:00Z" {
		t.Errorf("time %q timestamp %q", s.Cases[0].Time, s.Timestamp)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestJSONReportShape(t *testing.T) {
	small := mustRead(t, "testdata/small.jsonl")
	var b bytes.Buffer
	if err := RenderJSON(&b, []*reports.Results{small}, Options{Published: true}); err != nil {
		t.Fatal(err)
	}
	var rep JSONReport
	if err := json.Unmarshal(b.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Schema != ReportSchema || len(rep.Runs) != 1 || len(rep.Runs[0].Scenarios) != 3 {
		t.Fatalf("schema %q, %d runs", rep.Schema, len(rep.Runs))
	}
	sus := rep.Runs[0].Scenarios[1]
	if sus.Name != "sustained" || sus.UpToMaxS != 4 || sus.BackTo1S != 20 || len(sus.ScaleEvents) != 3 {
		t.Errorf("sustained: %+v", sus)
	}
	if vr := rep.Runs[0].Scenarios[0]; vr.UpToMaxS != -1 || vr.BackTo1S != -1 {
		t.Errorf("viewer-refused times %v %v, want -1 (never)", vr.UpToMaxS, vr.BackTo1S)
	}
	burst := rep.Runs[0].Scenarios[2]
	if len(burst.ReadyzFailures) != 1 || burst.ReadyzFailures[0].Status != 503 {
		t.Errorf("burst readyz failures: %+v", burst.ReadyzFailures)
	}
	if rep.Published == nil || len(rep.Published.Ratios) != 3 || rep.Published.Note == "" {
		t.Fatalf("published: %+v", rep.Published)
	}
	if r := rep.Published.Ratios[2]; r.Published != "AKS" || r.TooMany != nil {
		t.Errorf("AKS published 0 429s: the 429 ratio must be null, got %+v", r)
	}
}

// killedDuringBurst is the small file cut in the middle of the burst
// scenario's verdict line: a run killed mid-write during its last scenario.
func killedDuringBurst(t *testing.T) *reports.Results {
	t.Helper()
	full, err := os.ReadFile("testdata/small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(full, []byte(`{"kind":"verdict","data":{"scenario":"burst"`))
	if i < 0 {
		t.Fatal("no burst verdict in testdata/small.jsonl")
	}
	res, err := reports.Parse("testdata/killed.jsonl", bytes.NewReader(full[:i+40]))
	if err != nil {
		t.Fatal(err)
	}
	return res
}
