package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/run"
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
			if !slices.Contains(render.Formats, format) {
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
			if err := run.RenderToFile(out, format, runs, o); err != nil {
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

// scenarioNames is the names of list, in its order.
func scenarioNames(list []scenarios.Scenario) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.Name
	}
	return out
}
