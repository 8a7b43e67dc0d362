package run

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
)

// TestWriteRunReports is what run does at its end: report.html and
// junit.xml beside results.jsonl, and junit_runner.xml of the steps.
func TestWriteRunReports(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../reports/render/testdata/small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(results, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rr, err := WriteReports(dir, results, render.Columns{})
	if err != nil {
		t.Fatal(err)
	}
	if rr.HTML != filepath.Join(dir, "report.html") || rr.JUnit != filepath.Join(dir, "junit.xml") {
		t.Errorf("paths %+v", rr)
	}
	steps := &Steps{Started: time.Now()}
	steps.Add("Up", time.Now(), nil)
	res, _ := reports.Read(results)
	steps.AddVerdicts(res.Verdicts, []string{"viewer-refused", "sustained", "burst", "max-1"})
	steps.Add("Down", time.Now(), nil)
	p, err := steps.WriteJUnit(dir)
	if err != nil {
		t.Fatal(err)
	}
	var doc render.JUnitSuites
	jb, _ := os.ReadFile(p)
	if err := xml.Unmarshal(jb, &doc); err != nil {
		t.Fatal(err)
	}
	// Up, three scenarios (burst failed), max-1 skipped, Down.
	s := doc.Suites[0]
	if s.Tests != 6 || s.Failures != 1 || s.Skipped != 1 {
		t.Errorf("junit_runner.xml: tests %d failures %d skipped %d, want 6 1 1", s.Tests, s.Failures, s.Skipped)
	}
	for _, f := range []string{rr.HTML, rr.JUnit, p} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// TestTableMarkdown: table.md says an interrupted run is incomplete and a
// run whose platform never came up ran nothing, and shows the verdicts
// otherwise.
func TestTableMarkdown(t *testing.T) {
	vs := []reports.Verdict{{Scenario: "sustained", Passed: true}}
	row := reports.SummaryRow("local", vs)
	for _, c := range []struct {
		name       string
		tab        Table
		want, lack []string
	}{
		{"judged", Table{Row: row, Verdicts: vs}, []string{"| local", "PASS  sustained", "```text"}, []string{"NOT RUN", "INCOMPLETE"}},
		{"interrupted", Table{Row: row, Verdicts: vs, Incomplete: "INCOMPLETE: the run was interrupted; 1 of 5 scenarios judged"},
			[]string{"**INCOMPLETE:** the run was interrupted", "PASS  sustained"}, []string{"NOT RUN"}},
		{"not run", Table{NotRun: "the platform did not come up: boom"},
			[]string{"**NOT RUN:** the platform did not come up: boom; no scenario ran."}, []string{"```"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.tab.WriteMarkdown(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			for _, l := range c.lack {
				if strings.Contains(b.String(), l) {
					t.Errorf("has %q:\n%s", l, b.String())
				}
			}
		})
	}
}

// TestWriteFileAtomicLeavesNothing: a write into a missing folder fails
// and leaves no temporary file.
func TestWriteFileAtomicLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "f")
	if err := WriteFileAtomic(missing, []byte("x")); err == nil {
		t.Fatal("no error for a missing folder")
	} else if want := "write " + missing + ": no such file or directory"; err.Error() != want {
		t.Errorf("error %q, want %q (the path asked for, not the temporary file's)", err, want)
	}
	if err := WriteFileAtomic(dir, []byte("x")); err == nil || strings.Contains(err.Error(), "/.") {
		t.Errorf("write onto a folder: %v, want an error naming only the path asked for", err)
	}
	p := filepath.Join(dir, "f")
	if err := WriteFileAtomic(p, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "x" {
		t.Errorf("read %q, %v", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
