package run

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
)

// The files a run writes at its end beside results.jsonl.
const (
	TableFile       = "table.md"         // the table and the PASS/FAIL lines in Markdown
	ReportFile      = "report.html"      // the table and per-scenario charts, self-contained
	JUnitFile       = "junit.xml"        // one testcase per scenario and per fact
	StepsJUnitFile  = "junit_runner.xml" // one testcase per step (kubetest2's)
	ResultsFile     = "results.jsonl"    // every record, written as it goes
	stepsJUnitSuite = "scaleproof run"
)

// WideColumns are the extra columns table.md always shows and run --wide
// adds to the printed table: other 4xx, transport errors, 429 % and p95.
var WideColumns = render.Columns{Other4xx: true, Transport: true, Pct429: true, P95: true}

// Reports are the paths of the reports WriteReports wrote ("" where none).
type Reports struct {
	HTML, JUnit string
}

// WriteReports renders the results file of a finished (or interrupted)
// run into report.html and junit.xml in dir. It reads the file back, so
// the reports show exactly what the file holds; the screenshots' index in
// dir, when there is one, becomes links.
func WriteReports(dir, resultsPath string, cols render.Columns) (Reports, error) {
	res, err := reports.Read(resultsPath)
	if err != nil {
		return Reports{}, err
	}
	runs := []*reports.Results{res}
	out := Reports{HTML: filepath.Join(dir, ReportFile), JUnit: filepath.Join(dir, JUnitFile)}
	o := render.Options{Columns: cols}
	if shots, err := render.ReadScreenshots(dir); err == nil { // a broken index only loses the links
		o.Screenshots = shots
	}
	if res.Meta.Profile == "published" {
		o.Published = true
	}
	if err := RenderToFile(out.HTML, "html", runs, o); err != nil {
		return Reports{}, err
	}
	if err := RenderToFile(out.JUnit, "junit", runs, o); err != nil {
		return Reports{HTML: out.HTML}, err
	}
	return out, nil
}

// WriteOutputs writes what a run leaves beside its closed results file
// in dir: table.md from tab, report.html and junit.xml from the results
// file, and junit_runner.xml from steps (nil: none). A failed output is
// logged (log nil: not) and does not stop the others; the error returned
// is the reports' (the one a user looks for).
func WriteOutputs(dir string, tab Table, cols render.Columns, steps *Steps, log *slog.Logger) (Reports, error) {
	warn := func(what string, err error) {
		if log != nil && err != nil {
			log.Warn(what, "err", err)
		}
	}
	var md bytes.Buffer
	if err := tab.WriteMarkdown(&md); err == nil {
		warn(TableFile, WriteFileAtomic(filepath.Join(dir, TableFile), md.Bytes()))
	}
	rr, err := WriteReports(dir, filepath.Join(dir, ResultsFile), cols)
	warn("report", err)
	if steps != nil {
		_, jerr := steps.WriteJUnit(dir)
		warn(StepsJUnitFile, jerr)
	}
	return rr, err
}

// Table is what table.md (and the table a run prints) shows.
type Table struct {
	Row      reports.Row
	Verdicts []reports.Verdict
	Targets  bool   // the target scenarios' table (one row per scenario), not the published one
	NotRun   string // why no scenario ran (the platform did not come up); "" when they did
	// Incomplete, when set, opens the table: an interrupted run's
	// figures are what was measured until then.
	Incomplete string
}

// WriteMarkdown writes t as table.md's Markdown: the table with the
// 4xx, transport, 429 % and p95 columns, then the verdict lines as they are.
func (t Table) WriteMarkdown(w io.Writer) error {
	if t.Incomplete != "" {
		fmt.Fprintf(w, "**%s\n\n", strings.Replace(t.Incomplete, ":", ":**", 1))
	}
	if t.NotRun != "" {
		_, err := fmt.Fprintf(w, "**NOT RUN:** %s; no scenario ran.\n", t.NotRun)
		return err
	}
	var err error
	if t.Targets {
		err = render.WriteTargetTable(w, t.Verdicts, true)
	} else {
		err = render.WriteMarkdown(w, []reports.Row{t.Row}, WideColumns)
	}
	fmt.Fprint(w, "\n```text\n") // the verdict lines as they are, not merged into one paragraph
	render.WriteVerdicts(w, t.Verdicts)
	_, werr := fmt.Fprint(w, "```\n")
	return errors.Join(err, werr)
}

// WriteText writes t as a run prints it on stdout: the table in cols and
// the verdict lines (nothing but the Incomplete line when no scenario ran:
// the error says why).
func (t Table) WriteText(w io.Writer, cols render.Columns) {
	if t.Incomplete != "" {
		fmt.Fprintln(w, t.Incomplete)
	}
	if t.NotRun != "" {
		return
	}
	if t.Targets {
		_ = render.WriteTargetTable(w, t.Verdicts, false)
	} else {
		_ = render.WriteTable(w, []reports.Row{t.Row}, cols)
	}
	fmt.Fprintln(w)
	render.WriteVerdicts(w, t.Verdicts)
}

// Steps records a run's steps (Up, each scenario, DumpLogs, Down, the
// cluster maker's) for junit_runner.xml, kubetest2's runner JUnit.
type Steps struct {
	Started time.Time
	List    []render.Step
}

// Add records a step that started at start and ended now with err.
func (l *Steps) Add(name string, start time.Time, err error) {
	l.List = append(l.List, render.Step{Name: name, Duration: time.Since(start), Err: err})
}

// AddVerdicts records one step per scenario verdict, and a skipped step
// for each scenario of names that has none (the run stopped before it).
func (l *Steps) AddVerdicts(vs []reports.Verdict, names []string) {
	seen := map[string]bool{}
	for _, v := range vs {
		seen[v.Scenario] = true
		var err error
		switch {
		case v.Skipped != "":
			l.List = append(l.List, render.Step{Name: "Scenario " + v.Scenario, Skipped: v.Skipped})
			continue
		case v.Error != "":
			err = errors.New(v.Error)
		case !v.Passed:
			err = errors.New("scenario failed: " + strings.TrimSpace(failedFactNames(v)))
		}
		l.List = append(l.List, render.Step{Name: "Scenario " + v.Scenario, Duration: time.Duration(v.DurationS * float64(time.Second)), Err: err})
	}
	for _, n := range names {
		if !seen[n] {
			l.List = append(l.List, render.Step{Name: "Scenario " + n, Skipped: "not run: the run stopped before it"})
		}
	}
}

func failedFactNames(v reports.Verdict) string {
	var s []string
	for _, f := range v.Facts {
		if f.Failed() {
			s = append(s, f.Name)
		}
	}
	return strings.Join(s, "; ")
}

// WriteJUnit writes the steps as junit_runner.xml into dir and returns
// its path.
func (l *Steps) WriteJUnit(dir string) (string, error) {
	path := filepath.Join(dir, StepsJUnitFile)
	var b bytes.Buffer
	if err := render.WriteJUnit(&b, render.StepsJUnit(stepsJUnitSuite, l.Started, l.List)); err != nil {
		return "", err
	}
	return path, WriteFileAtomic(path, b.Bytes())
}

// RenderToFile renders runs in format into memory and then writes path
// whole (WriteFileAtomic), so a failed render leaves no half file.
func RenderToFile(path, format string, runs []*reports.Results, o render.Options) error {
	var b bytes.Buffer
	if err := render.Render(&b, format, runs, o); err != nil {
		return err
	}
	return WriteFileAtomic(path, b.Bytes())
}

// WriteFileAtomic writes data to path (mode 0644) through a temporary file
// in the same folder and a rename: a reader sees the old file or the new
// one, never half of it, and a failed write leaves nothing behind.
func WriteFileAtomic(path string, data []byte) (err error) {
	// An error names path and the reason, never the temporary file the
	// user did not ask for.
	reason := func(err error) error {
		var pe *os.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			return pe.Err
		case errors.As(err, &le):
			return le.Err
		}
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, reason(err))
	}
	defer func() { // every failure after the create removes the temporary file
		if err != nil {
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, reason(err))
		}
	}()
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
