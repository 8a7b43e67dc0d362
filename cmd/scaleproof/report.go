package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios"
)

func newReportCmd() *cobra.Command {
	var format, out string
	var published, wide bool
	var columns []string
	c := &cobra.Command{
		Use:   "report RESULTS...",
		Short: "Render results files: the published table, Markdown, HTML with charts, JSON, JUnit",
		Long: `report reads results files (results.jsonl, written by run, load and sim) and renders them.

Formats (--format):
  text      the published table's layout, one row per file (Platform | Up to 3 | Back to 1 |
            Calls ok | 429 | 5xx), and one PASS/FAIL line per scenario
  markdown  the table, then per run its metadata, scenarios, facts, scale events
            and /readyz failures: what you paste into a release or an issue
  html      one self-contained file (nothing loaded at view time) with, per
            scenario, charts of count/ready vs max, in-flight vs limit, calls/s
            by class and latency p50/p95/p99, scale events marked
  json      the same as a JSON document (schema scaleproof.report/v1)
  junit     JUnit XML: one testcase per scenario and per checked fact, and a
            "run complete" case that fails for a killed run's file

A file from a killed run is read up to where it stopped and marked incomplete.
--published adds the rows published in Ramen 0.7.5's autoscaling notes
(GKE, EKS, AKS of 2026-10-11) and
the ratios ours ÷ published.

Exit codes: 0 rendered, 2 a file is missing or not a results file, or bad usage.`,
		Example: `  scaleproof report _artifacts/*/results.jsonl
  scaleproof report --published --format markdown _artifacts/run1/results.jsonl
  scaleproof report --format html --out report.html _artifacts/run1/results.jsonl
  scaleproof report --columns 429pct,p95,flaps _artifacts/*/results.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return withCode(exitUsage, fmt.Errorf("report needs at least one results file (results.jsonl of a run)\n\n%s", cmd.UsageString()))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cols, err := render.ParseColumns(columns)
			if err != nil {
				return withCode(exitUsage, err)
			}
			if wide {
				cols = render.AllColumns()
			}
			if !validFormat(format) {
				return withCode(exitUsage, fmt.Errorf("unknown --format %q (have: %s)", format, strings.Join(render.Formats, ", ")))
			}
			runs, err := readResults(args)
			if err != nil {
				return withCode(exitUsage, err)
			}
			o := render.Options{Columns: cols, Published: published}
			if out == "" || out == "-" {
				if err := render.Render(cmd.OutOrStdout(), format, runs, o); err != nil {
					return withCode(exitUsage, err)
				}
				return nil
			}
			if err := renderToFile(out, format, runs, o); err != nil {
				return withCode(exitUsage, err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "text", "text, markdown, html, json or junit")
	c.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout (written whole or not at all)")
	c.Flags().BoolVar(&published, "published", false, "add the rows published in Ramen 0.7.5's autoscaling notes (GKE, EKS, AKS of 2026-10-11) and the ratios ours ÷ published")
	c.Flags().StringSliceVar(&columns, "columns", nil, "extra table columns: "+strings.Join(render.ColumnNames, ", ")+", or all")
	c.Flags().BoolVar(&wide, "wide", false, "every extra column (same as --columns all)")
	return c
}

func validFormat(f string) bool {
	for _, k := range render.Formats {
		if f == k {
			return true
		}
	}
	return false
}

// readResults reads every results file, failing on the first that is
// missing or not a results file.
func readResults(paths []string) ([]*reports.Results, error) {
	var runs []*reports.Results
	for _, p := range paths {
		res, err := reports.Read(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, res)
	}
	return runs, nil
}

// renderToFile renders into memory and then writes path through a
// temporary file and a rename, so a failed render leaves no half file.
func renderToFile(path, format string, runs []*reports.Results, o render.Options) error {
	var b bytes.Buffer
	if err := render.Render(&b, format, runs, o); err != nil {
		return err
	}
	return writeFileAtomic(path, b.Bytes())
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, errors.Join(werr, cerr))
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// runReports are the files run writes beside results.jsonl at its end.
type runReports struct {
	HTML, JUnit string
}

// writeRunReports renders the results file of a finished (or interrupted)
// run into report.html and junit.xml in dir. It reads the file back, so the
// reports show exactly what the file holds.
func writeRunReports(dir, resultsPath string, cols render.Columns) (runReports, error) {
	res, err := reports.Read(resultsPath)
	if err != nil {
		return runReports{}, err
	}
	runs := []*reports.Results{res}
	out := runReports{HTML: filepath.Join(dir, "report.html"), JUnit: filepath.Join(dir, "junit.xml")}
	o := render.Options{Columns: cols}
	if shots, err := render.ReadScreenshots(dir); err == nil { // a broken index only loses the links
		o.Screenshots = shots
	}
	if res.Meta.Profile == "published" {
		o.Published = true
	}
	if err := renderToFile(out.HTML, "html", runs, o); err != nil {
		return runReports{}, err
	}
	if err := renderToFile(out.JUnit, "junit", runs, o); err != nil {
		return runReports{HTML: out.HTML}, err
	}
	return out, nil
}

// writeStepsJUnit writes the run's steps as JUnit (kubetest2's
// junit_runner.xml) into dir.
func writeStepsJUnit(dir string, steps *stepLog) (string, error) {
	path := filepath.Join(dir, "junit_runner.xml")
	var b bytes.Buffer
	if err := render.WriteJUnit(&b, render.StepsJUnit("scaleproof run", steps.started, steps.steps)); err != nil {
		return "", err
	}
	return path, writeFileAtomic(path, b.Bytes())
}

// stepLog records a run's steps (Up, each scenario, DumpLogs, Down) for
// junit_runner.xml.
type stepLog struct {
	started time.Time
	steps   []render.Step
}

// add records a step that started at start and ended now with err.
func (l *stepLog) add(name string, start time.Time, err error) {
	l.steps = append(l.steps, render.Step{Name: name, Duration: time.Since(start), Err: err})
}

// addVerdicts records one step per scenario verdict, and a skipped step for
// each scenario of list that has none (the run stopped before it).
func (l *stepLog) addVerdicts(vs []reports.Verdict, names []string) {
	seen := map[string]bool{}
	for _, v := range vs {
		seen[v.Scenario] = true
		var err error
		switch {
		case v.Skipped != "":
			l.steps = append(l.steps, render.Step{Name: "Scenario " + v.Scenario, Skipped: v.Skipped})
			continue
		case v.Error != "":
			err = errors.New(v.Error)
		case !v.Passed:
			err = errors.New("scenario failed: " + strings.TrimSpace(failedFactNames(v)))
		}
		l.steps = append(l.steps, render.Step{Name: "Scenario " + v.Scenario, Duration: time.Duration(v.DurationS * float64(time.Second)), Err: err})
	}
	for _, n := range names {
		if !seen[n] {
			l.steps = append(l.steps, render.Step{Name: "Scenario " + n, Skipped: "not run: the run stopped before it"})
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

func scenarioNames(list []scenarios.Scenario) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.Name
	}
	return out
}
